"""The uv model: gradient descent equals the exact (f, λ) map; the flow keeps λ² − 4f²/m."""

import jax.numpy as jnp
import numpy as np
import pytest

import flows
from flows.large_steps import catapult_map, uv_init, uv_invariant, uv_loss, uv_ntk, uv_output


def test_gradient_descent_on_uv_follows_the_catapult_map():
    m, y, eta = 50, 0.5, 1.5  # eta*lambda0 ~ 3: the catapult phase
    p0 = uv_init(m, seed=3)
    traj = flows.gradient_descent(uv_loss(y), p0, 10 * eta, eta=eta, ts=eta * np.arange(11))
    f, lam = float(uv_output(p0)), float(uv_ntk(p0))
    for i in range(1, 11):
        f, lam = catapult_map(f, lam, eta=eta, y=y, m=m)
        # measured: 4e-15 relative
        np.testing.assert_allclose(uv_output(traj.at(i)), f, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(uv_ntk(traj.at(i)), lam, rtol=1e-9)


def test_gradient_flow_conserves_the_uv_invariant():
    p0 = uv_init(20, seed=1)
    traj = flows.gradient_flow(uv_loss(1.0), p0, 5.0, rtol=1e-10, atol=1e-12)
    inv = np.array([float(uv_invariant(traj.at(i))) for i in (0, len(traj.ts) - 1)])
    # measured drift 1e-11 relative; the NTK itself moves by O(1/m)
    assert abs(inv[1] - inv[0]) < 1e-8 * abs(inv[0])
    assert abs(float(uv_ntk(traj.at(-1))) - float(uv_ntk(p0))) > 1e-4


@pytest.mark.parametrize(
    "m, seed, message",
    [
        # a negative seed used to fail in numpy as "expected non-negative integer"
        (3, -1, "seed must be an integer >= 0, got -1"),
        (3, 1.5, "seed must be an integer >= 0, got 1.5"),
        (0, 0, "m must be an integer >= 1, got 0"),
    ],
)
def test_uv_init_refuses_a_bad_m_or_seed_naming_it(m, seed, message):
    with pytest.raises(ValueError) as info:
        uv_init(m, seed)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "args, message",
    [
        # a NaN f ran on as (nan, nan), silently
        ((np.nan, 2.0, 1.5, 0.5, 50), "f must be finite, got nan"),
        ((0.3, np.inf, 1.5, 0.5, 50), "lam must be finite, got inf"),
        ((0.3, 2.0, 1.5, "0.5", 50), "y must be a number, got '0.5'"),
        ((0.3, 2.0, 0.0, 0.5, 50), "eta must be finite and > 0, got 0.0"),
    ],
)
def test_catapult_map_refuses_a_non_finite_state_naming_it(args, message):
    f, lam, eta, y, m = args
    with pytest.raises(ValueError) as info:
        catapult_map(f, lam, eta=eta, y=y, m=m)
    assert str(info.value) == message


def test_uv_functions_refuse_params_of_another_shape_and_a_bad_target_by_name():
    # u (3,) with v (4,) gave λ = 7/3 silently; a dict without u/v a KeyError; an array
    # JAX's "string indexing" TypeError; a NaN target a NaN loss
    message = r'^params must be \{"u": \(m,\), "v": \(m,\)\} with m >= 1, got '
    for bad in ({"u": jnp.ones(3), "v": jnp.ones(4)}, {"a": 1.0}, jnp.ones(3)):
        for fn in (uv_output, uv_ntk, uv_invariant):
            with pytest.raises(ValueError, match=message):
                fn(bad)
    for y, says in ((float("nan"), "^y must be finite"), ("1", "^y must be a number")):
        with pytest.raises(ValueError, match=says):
            uv_loss(y)
