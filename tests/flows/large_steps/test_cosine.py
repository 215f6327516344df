"""cos(Δw_t, w_t − w_0) on a quadratic, where GD's iterates are (1 − ηλ)^t w0."""

import jax.numpy as jnp
import numpy as np
import pytest

import flows
from flows.large_steps import update_cosine


@pytest.mark.parametrize("eta_lam, expected", [(0.5, [1, 1, 1, 1]), (1.5, [1, -1, 1, -1])])
def test_update_cosine_is_one_below_1_over_eta_and_alternates_past_it(eta_lam, expected):
    lam, eta = 2.0, eta_lam / 2.0
    w0 = jnp.array([0.3, -1.2, 0.7])
    traj = flows.gradient_descent(
        lambda w: 0.5 * lam * jnp.sum(w**2), w0, 4 * eta, eta=eta, ts=eta * np.arange(5)
    )
    # Δw_t = −ηλ(1 − ηλ)^(t−1) w0 and w_t − w0 = ((1 − ηλ)^t − 1) w0: parallel to w0
    np.testing.assert_allclose(update_cosine(traj), expected, atol=1e-12)  # measured 0


def test_update_cosine_refuses_saves_that_are_not_consecutive_steps():
    traj = flows.gradient_descent(
        lambda w: jnp.sum(w**2), jnp.ones(2), 1.0, eta=0.1, ts=np.array([0.0, 0.5, 1.0])
    )
    with pytest.raises(ValueError, match="consecutive steps"):
        update_cosine(traj)


def test_update_cosine_refuses_what_is_not_a_trajectory():
    with pytest.raises(TypeError, match="trajectory: expected a flows.Trajectory.*got list"):
        update_cosine([1, 2, 3])
