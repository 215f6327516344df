"""flows.sharpness and sharpness_along: Lanczos against dense eigh; warm starts; bad input."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
from flows.large_steps import sharpness_along
from tests.flows.large_steps.nets import tanh_regression


def _problem(p, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((p, p))
    A, c = (A + A.T) / 2, jnp.asarray(rng.standard_normal(p))

    def loss(w):
        return 0.5 * w @ A @ w + 0.1 * jnp.sum(c * jnp.cos(w))

    return loss, jnp.asarray(rng.standard_normal(p))


@pytest.mark.parametrize("p, k", [(5, 1), (5, 5), (40, 3), (300, 2)])
def test_sharpness_matches_dense_eigh_to_1e_9(p, k):
    loss, w = _problem(p)
    dense = np.linalg.eigh(np.asarray(jax.hessian(loss)(w)))[0][::-1][:k]
    values, vectors = flows.sharpness(loss, w, k, eigenvectors=True)
    # measured: max relative error 1.1e-15 (p = 5..300); residual of the pairs 1e-12
    assert values.shape == (k,) and np.all(np.diff(np.asarray(values)) <= 0)
    assert np.max(np.abs(np.asarray(values) - dense)) / abs(dense[0]) < 1e-9
    H = np.asarray(jax.hessian(loss)(w))
    residual = np.linalg.norm(H @ np.asarray(vectors).T - np.asarray(vectors).T * dense, axis=0)
    assert np.max(residual) / abs(dense[0]) < 1e-6


def test_sharpness_along_a_descent_costs_a_few_products_per_save():
    loss, net = tanh_regression(3, 10, 1, 30, seed=1, key=2)
    traj = flows.gradient_descent(loss, net, 4.0, eta=0.05, ts=np.linspace(0, 4.0, 21))
    values, _, products = sharpness_along(loss, traj, k=2)
    cold = np.stack([np.asarray(flows.sharpness(loss, traj.at(i), 2)) for i in (0, 10, 20)])
    # measured: agreement 1e-15 relative; cold start 16-20 products, warm 4-8
    np.testing.assert_allclose(values[[0, 10, 20]], cold, rtol=1e-9)
    assert np.median(products[1:]) < products[0]


def test_sharpness_along_with_a_small_max_iters_agrees_and_warns_where_it_stops_short():
    loss, net = tanh_regression(3, 10, 1, 30, seed=1, key=2)
    traj = flows.gradient_descent(loss, net, 4.0, eta=0.05, ts=np.linspace(0, 4.0, 21))
    full = sharpness_along(loss, traj, k=1).values
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # 24 products: tol at every save
        values = sharpness_along(loss, traj, k=1, max_iters=24).values
    # measured agreement 1e-15 relative
    np.testing.assert_allclose(values, full, rtol=1e-9)
    with pytest.warns(UserWarning) as caught:  # one warning per save, each naming it
        sharpness_along(loss, traj, k=1, max_iters=2)
    said = [str(w.message) for w in caught]
    assert [f"max_iters=2 at save {i} " in m for i, m in enumerate(said)] == [True] * 21
    with pytest.raises(ValueError, match="max_iters must be >= k"):
        sharpness_along(loss, traj, k=2, max_iters=1)


def test_sharpness_refuses_bad_k_and_non_scalar_loss():
    loss, w = _problem(4)
    with pytest.raises(ValueError, match="k must be <= p"):
        flows.sharpness(loss, w, 5)
    with pytest.raises(ValueError, match="k must be an integer"):
        flows.sharpness(loss, w, 0)
    with pytest.raises(TypeError, match="loss"):
        flows.sharpness(lambda w: w**2, w)


def test_sharpness_refuses_a_search_that_cannot_reach_tol_by_name():
    loss, w = _problem(4)
    for kwargs, name in [
        ({"max_iters": 0}, "max_iters"),
        ({"max_iters": 2.5}, "max_iters"),
        ({"tol": -1.0}, "tol"),
        ({"tol": 0.0}, "tol"),
        ({"v0": jnp.ones(3)}, "v0"),
        ({"v0": jnp.array([1.0, jnp.nan, 0.0, 0.0])}, "v0"),  # was replaced silently
    ]:
        with pytest.raises(ValueError, match=f"^{name} must"):
            flows.sharpness(loss, w, **kwargs)


def test_sharpness_refuses_nan_params_instead_of_returning_nan():
    loss, w = _problem(4)
    with pytest.raises(ValueError, match=r"^params: non-finite values \(NaN or inf\)$"):
        flows.sharpness(loss, w.at[1].set(jnp.nan))  # returned [nan] before


def test_sharpness_refuses_a_loss_whose_hessian_is_not_finite_instead_of_returning_nan():
    loss, w = _problem(4)
    message = r"^loss: its Hessian at params is not finite \(NaN or inf Hessian-vector products\)"
    with pytest.raises(ValueError, match=message):
        flows.sharpness(lambda v: loss(v) * jnp.nan, w)  # returned [nan] with no warning
    # |w|^(3/2): finite loss and gradient at w = 0, infinite Hessian there
    with pytest.raises(ValueError, match=message):
        flows.sharpness(lambda v: jnp.sum(jnp.abs(v) ** 1.5), jnp.array([0.0, 1.0]))


def test_sharpness_warns_when_max_iters_stops_lanczos_above_tol():
    # diag(1..10): λ₁ = 10; two Lanczos vectors give 9.73 (found by a new-user pass), so the
    # residual is far above tol and the call must say so rather than return it silently.
    d = jnp.arange(1.0, 11.0)
    with pytest.warns(UserWarning, match="raise max_iters") as caught:
        result = flows.sharpness(lambda w: 0.5 * jnp.sum(d * w**2), jnp.ones(10), max_iters=2,
                                 full=True)  # fmt: skip
    assert abs(float(result.values[0]) - 10.0) > 1e-3
    # the warning names k and the residual it reports (‖Hv − λv‖ of the returned pair)
    said = str(caught[0].message)
    assert "k=1 eigenvalues" in said
    assert f"residual ‖Hv − λv‖ = {float(result.residuals[0]):.2g} of eigenvalue 1" in said
    v, lam = np.asarray(result.vectors[0]), float(result.values[0])
    np.testing.assert_allclose(result.residuals[0], np.linalg.norm(d * v - lam * v), rtol=1e-10)
