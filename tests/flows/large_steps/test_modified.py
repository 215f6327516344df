"""Modified flows: the rates on a quadratic, and |GD − flow| = O(η^(order+1))."""

import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import flows
from tests.flows.large_steps.nets import tanh_regression


@pytest.mark.parametrize("order", [0, 1, 2])
def test_modified_flow_rate_on_a_quadratic(order):
    lam, eta, T = 1.3, 0.1, 2.0
    rate = [lam, lam + eta * lam**2 / 2, lam + eta * lam**2 / 2 + eta**2 * lam**3 / 3][order]
    traj = flows.modified_flow(
        lambda w: 0.5 * lam * jnp.sum(w**2), jnp.array([1.0]), T, eta=eta, order=order,
        rtol=1e-12, atol=1e-14, ts=np.array([0.0, T]),
    )  # fmt: skip
    # measured: 1.9e-13 relative (orders 1, 2)
    np.testing.assert_allclose(traj.params[-1, 0], np.exp(-rate * T), rtol=1e-10)


def test_distance_to_gd_falls_like_eta_to_the_order_plus_one():
    loss, net = tanh_regression(3, 8, 2, 20)
    T, etas, gaps = 2.0, (0.1, 0.05), []
    for eta in etas:  # S = 3.9 < 2/eta
        w_gd = ravel_pytree(flows.gradient_descent(loss, net, T, eta=eta).at(-1))[0]
        row = []
        for order in (0, 1, 2):
            traj = flows.modified_flow(
                loss, net, T, eta=eta, order=order, rtol=1e-12, atol=1e-14,
                ts=np.array([0.0, T]),
            )  # fmt: skip
            row.append(float(jnp.linalg.norm(ravel_pytree(traj.at(-1))[0] - w_gd)))
        gaps.append(row)
    slopes = np.log2(np.array(gaps[0]) / np.array(gaps[1]))
    # measured slopes 1.03, 1.99, 2.98
    np.testing.assert_allclose(slopes, [1, 2, 3], atol=0.15)


def test_modified_flow_refuses_bad_eta_and_order():
    loss = lambda w: jnp.sum(w**2)  # noqa: E731
    with pytest.raises(ValueError, match="eta"):
        flows.modified_flow(loss, jnp.ones(2), 1.0, eta=0.0)
    with pytest.raises(ValueError, match="order"):
        flows.modified_flow(loss, jnp.ones(2), 1.0, eta=0.1, order=3)


@pytest.mark.filterwarnings("ignore::flows.large_steps.EdgeOfStabilityWarning")
def test_modified_flow_says_eta_is_what_is_wrong_where_it_is_absurd():
    loss = lambda w: jnp.sum(w**2)  # noqa: E731, λ_max = 2
    # the correction (η/2)H∇L swamps the gradient (ηλ/2 > 1/ε): refused before any step
    # (eta=1e300 was MaxStepsReached blaming kinks in the objective)
    for eta in (1e300, 1e20):
        with pytest.raises(ValueError, match=r"eta: the correction \(η/2\)H∇L is .* past 1/ε"):
            flows.modified_flow(loss, jnp.ones(2), 1.0, eta=eta)
    # finite but stiff: the solver's failure is led by eta·λ_max(0)
    with pytest.raises(flows.MaxStepsReached, match=r"^eta = 1000 puts eta·λ_max\(0\) = 2e\+03"):
        flows.modified_flow(loss, jnp.ones(2), 1.0, eta=1e3, max_steps=5)
