"""The ODE's linear branch against the closed form; the closed form on a singular NTK."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models


def _net_and_data(n=6, d=3, width=8, seed=0):
    k = jax.random.split(jax.random.PRNGKey(seed), 3)
    net = models.TwoLayerNet(d, width, activation="tanh", key=k[0])
    X = jax.random.normal(k[1], (n, d))
    Y = jax.random.normal(k[2], (n,))
    return net, X, Y


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_linear_branch_ode_matches_closed_form_to_1e_8(reduction):
    net, X, Y = _net_and_data()
    loss = flows.SquaredLoss(reduction)
    ts = np.array([0.0, 0.1, 1.0, 10.0, 100.0, 1000.0])
    alpha = 3.0
    ode = flows.lazy_comparison(
        net,
        (X, Y),
        alpha,
        1000.0,
        loss=loss,
        ts=ts,
        rtol=1e-12,
        atol=1e-14,
        save_params=True,
        solver="tsit5",
        max_steps=10**6,
    )
    exact = flows.linear_closed_form(net, (X, Y), alpha, ts, loss=loss)
    scale = np.linalg.norm(exact.ubar, axis=1).max()
    assert np.abs(ode.ubar - exact.ubar).max() / scale <= 1e-8
    rel_loss = np.abs(ode.loss_linearized - exact.loss) / exact.loss[0]
    assert rel_loss.max() <= 1e-8


def test_closed_form_with_singular_ntk_is_finite_and_exact():
    # p = 2 parameters, n = 5 outputs: Σ = JJᵀ has rank ≤ 2, three zero eigenvalues.
    class Line(eqx.Module):
        w: jax.Array

        def __call__(self, x):
            return self.w[0] * x[0] + jnp.sin(self.w[1]) * x[1]

    X = jax.random.normal(jax.random.PRNGKey(1), (5, 2))
    Y = jax.random.normal(jax.random.PRNGKey(2), (5,))
    model = Line(jnp.array([0.3, -0.2]))
    ts = np.array([0.0, 1.0, 1e3, 1e6])
    out = flows.linear_closed_form(model, (X, Y), 2.0, ts)
    assert np.all(np.isfinite(out.ubar)) and np.all(np.isfinite(out.outputs))
    assert np.sum(out.ntk_eigenvalues == 0) == 3
    # At t → ∞ the linear branch reaches the least-squares fit in the span of J.
    J = np.stack([X[:, 0], np.cos(-0.2) * X[:, 1]], axis=1)
    h0 = np.asarray(jax.vmap(model)(X))
    coef, *_ = np.linalg.lstsq(J, np.asarray(Y) - 2.0 * h0, rcond=None)
    np.testing.assert_allclose(out.ubar[-1], coef, rtol=1e-9)
