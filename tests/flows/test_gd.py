"""Gradient descent breaks balancedness at a rate one can predict: one step of size η changes C_k
by exactly η²(G_kG_kᵀ − G_{k+1}ᵀG_{k+1}), so the drift at a fixed time T is first order in η
(Du, Hu & Lee 2018, §3; summing the steps bounds it by 2η·R(0))."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models
from flows.large_steps import EdgeOfStabilityWarning

_key = jax.random.PRNGKey(3)
X = jax.random.normal(_key, (16, 4))
y = jnp.sign(X @ jnp.array([1.0, -1.0, 2.0, 0.5]))
_logistic = flows.LogisticLoss("sum")


def loss(net):
    return _logistic(jax.vmap(net)(X)[:, 0], y)


NET0 = models.DeepLinearNet.gaussian([4, 5, 3, 1], scale=1.2, key=jax.random.PRNGKey(4))
DRIFT = flows.observables.balancedness_drift(NET0)


def test_one_gd_step_changes_balancedness_by_eta_squared_gradient_terms():
    eta = 0.25  # above the edge (η·S(0) = 6.35): the warning says so, the identity is exact
    with pytest.warns(EdgeOfStabilityWarning, match="eta·S"):
        traj = flows.gradient_descent(loss, NET0, eta, eta=eta, ts=[0.0, eta])
    assert traj.stats["num_steps"] == 1 and np.array_equal(traj.ts, [0.0, eta])
    before, after = traj.at(0), traj.at(1)
    grads = jax.grad(loss)(NET0).weights
    for k, (c0, c1) in enumerate(zip(before.balancedness(), after.balancedness())):
        g, g_next = grads[k], grads[k + 1]
        predicted = eta**2 * (g @ g.T - g_next.T @ g_next)
        err = float(jnp.abs((c1 - c0) - predicted).max())
        size = float(jnp.abs(predicted).max())
        w_scale = float(jnp.sum(NET0.weights[k] ** 2) + jnp.sum(NET0.weights[k + 1] ** 2))
        print(f"k={k}: |ΔC − η²(GGᵀ − GᵀG)| = {err:.2e}, |η²(…)| = {size:.2e}")
        assert size > 1e-2  # the second-order term is not negligible here
        assert err <= 1e-14 * max(size, w_scale)


def test_gd_drift_at_fixed_horizon_is_linear_in_eta():
    T = 2.0
    etas = np.array([0.02, 0.01, 0.005, 0.0025])
    drifts = []
    for eta in etas:
        traj = flows.gradient_descent(
            loss, NET0, T, eta=eta, ts=[0.0, T], observables={"drift": DRIFT}, save_params=False
        )
        assert traj.stats["num_steps"] == round(T / eta)
        drifts.append(float(np.sum(traj.observables["drift"][-1])))
    slope = np.polyfit(np.log(etas), np.log(drifts), 1)[0]
    print(f"GD drift at T={T}: {drifts}, fitted exponent {slope:.4f}")
    assert abs(slope - 1.0) <= 0.05
    # The first-order coefficient drift/η is O(1): far above any solver tolerance.
    assert min(d / e for d, e in zip(drifts, etas)) > 1e-2


def test_gd_reports_divergence_and_bad_steps_by_name():
    # the loss is 4.4e9 at step 2 and NaN at step 7, inside the 100-step window: one error
    # that names both (the DivergenceWarning is for a finite loss that does not come back)
    with (
        pytest.raises(
            FloatingPointError,
            match=r"non-finite at step 7 .*after rising to \S+ at step 2 .*reduce eta \(got 5.0\)",
        ),
        pytest.warns(EdgeOfStabilityWarning, match="eta·S"),
    ):
        flows.gradient_descent(loss, NET0, 1000.0, eta=5.0, save_params=False)
    with pytest.raises(ValueError, match="eta must be finite and > 0"):
        flows.gradient_descent(loss, NET0, 1.0, eta=0.0)
    with pytest.raises(ValueError, match="eta must be <= t1"):
        flows.gradient_descent(loss, NET0, 1.0, eta=3.0)
    # Save times off the step grid are rounded to the nearest step time kη.
    with pytest.warns(EdgeOfStabilityWarning, match="eta·S"):
        traj = flows.gradient_descent(loss, NET0, 1.0, eta=0.25, ts=[0.0, 0.3, 0.74, 1.0])
    np.testing.assert_array_equal(traj.ts, [0.0, 0.25, 0.75, 1.0])
