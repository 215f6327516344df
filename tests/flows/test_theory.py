"""flows.lazy._theory: the constants of Chizat, Oyallon & Bach 2019, Thms 2.2/2.4, against closed
forms, and the fits used to compare measurements with them."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models


class _Linear(eqx.Module):
    """h(w)(x) = x·w: J = X, Σ = XXᵀ, D²h = 0."""

    w: jax.Array

    def __call__(self, x):
        return x @ self.w


class _Quadratic(eqx.Module):
    """h(w)(x) = ½ Σ_j x_j w_j²: D²h[u,u]_i = Σ_j X_ij u_j², so sup over unit u of
    ‖D²h[u,u]‖ = max over the simplex of ‖X s‖ = the largest column norm of X."""

    w: jax.Array

    def __call__(self, x):
        return 0.5 * jnp.sum(x * self.w**2)


def _data(n, d, seed=0):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return np.asarray(jax.random.normal(k1, (n, d))), np.asarray(jax.random.normal(k2, (n,)))


def test_ntk_constants_of_a_linear_model_are_the_singular_values_of_X():
    X, Y = _data(5, 8)
    w0 = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (8,)))
    model = _Linear(jnp.asarray(w0))
    np.testing.assert_allclose(flows.ntk.ntk_gram(model, X), X @ X.T, rtol=1e-12, atol=1e-12)
    c = flows.lazy.lazy_constants(model, (X, Y), loss=flows.SquaredLoss("mean"))
    s = np.linalg.svd(X, compute_uv=False)
    assert c.sigma_min == pytest.approx(s[-1], rel=1e-10)
    assert c.jacobian_norm == pytest.approx(s[0], rel=1e-10)
    # mean reduction over n = 5 rows: m = M = 1/5, κ = 1, rate = m·σ_min²/4
    assert (c.m, c.M, c.kappa) == pytest.approx((0.2, 0.2, 1.0))
    assert c.theorem_2_4_rate == pytest.approx(0.2 * s[-1] ** 2 / 4, rel=1e-10)
    # D²h = 0: Lip(Dh) = 0, C0 = inf, every α satisfies the condition; JSON gets None
    assert c.lip_jacobian == 0.0
    assert math.isinf(c.C0) and c.alpha_min == 0.0
    assert c.theorem_2_4_conditions(1e-3) is True
    assert c.summary()["C0"] is None
    np.testing.assert_allclose(c.h0, X @ w0, rtol=1e-12)


def test_jacobian_lipschitz_equals_largest_column_norm_for_a_quadratic_model():
    X, _ = _data(6, 4, seed=1)
    X = X.copy()
    X[:, 2] *= 3.0  # one column dominates: the maximiser is unique
    model = _Quadratic(jnp.asarray(np.linspace(0.3, 1.7, 4)))
    exact = np.linalg.norm(X, axis=0).max()
    estimate, method = flows.lazy.jacobian_lipschitz(model, X, radius=0.5, points=3, iterations=30)
    assert estimate == pytest.approx(exact, rel=1e-10)
    assert "lower estimate" in method


def test_jacobian_lipschitz_matches_brute_force_second_derivative_norm():
    # TwoLayerNet(2, 3): p = 9 and n = 3 outputs, small enough for the full D²h tensor.
    X, _ = _data(3, 2, seed=2)
    net = models.TwoLayerNet(2, 3, activation="tanh", key=jax.random.PRNGKey(4))
    trainable, static = models.partition(net)
    w0, unravel = jax.flatten_util.ravel_pytree(trainable)
    h = lambda w: jax.vmap(eqx.combine(unravel(w), static))(jnp.asarray(X))  # noqa: E731
    H = np.asarray(jax.hessian(h)(w0))  # (n, p, p)
    # sup over unit u of ‖D²h[u,u]‖ = sup over unit z of ‖Σ_i z_i H_i‖₂ (symmetric bilinear map)
    z = np.random.default_rng(0).standard_normal((20_000, 3))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    brute = np.abs(np.linalg.eigvalsh(np.einsum("ki,ipq->kpq", z, H))).max()
    estimate, _ = flows.lazy.jacobian_lipschitz(net, X, radius=0.0, points=8, iterations=60)
    assert estimate == pytest.approx(brute, rel=1e-3)


def test_theorem_2_4_bound_starts_at_the_initial_residual_and_decays_at_its_rate():
    X, Y = _data(4, 3, seed=5)
    net = models.TwoLayerNet(3, 6, activation="tanh", key=jax.random.PRNGKey(6))  # h(w0) ≠ 0
    c = flows.lazy.lazy_constants(net, (X, Y))
    alpha, ts = 7.0, np.array([0.0, 0.5, 2.0])
    bound = flows.lazy.theorem_2_4_bound(ts, alpha, c)
    assert bound[0] == pytest.approx(np.linalg.norm(alpha * c.h0 - Y), rel=1e-12)
    np.testing.assert_allclose(bound / bound[0], np.exp(-c.lambda_min / 4 * ts), rtol=1e-12)
    C0 = c.sigma_min**3 / (32 * c.jacobian_norm * c.lip_jacobian)
    assert c.C0 == pytest.approx(C0, rel=1e-12)
    # h(w0) ≠ 0 here, so the condition ‖h(w0)‖ ≤ C0 decides whatever α is
    assert c.theorem_2_4_conditions(1e12) == bool(np.linalg.norm(c.h0) <= C0)


def test_theorem_2_2_bound_is_sqrt_of_horizon_times_initial_loss_over_alpha():
    assert flows.lazy.theorem_2_2_bound(4.0, 9.0, 2.0) == pytest.approx(math.sqrt(18.0) / 4.0)
    with pytest.raises(ValueError, match="alpha"):
        flows.lazy.theorem_2_2_bound(0.0, 1.0, 1.0)


def test_loglog_slope_recovers_a_power_law_and_skips_nonpositive_values():
    x = np.array([1.0, 10.0, 100.0, 1e3])
    assert flows.lazy.loglog_slope(x, 3.0 * x**-1.7) == pytest.approx(-1.7, abs=1e-12)
    y = 3.0 * x**-1.7
    y[1] = 0.0
    assert flows.lazy.loglog_slope(x, y) == pytest.approx(-1.7, abs=1e-12)
    assert flows.lazy.loglog_slope([1.0], [2.0]) is None


def test_late_rate_fits_the_slow_mode_and_ignores_the_round_off_floor():
    ts = np.linspace(0.0, 10.0, 201)
    values = np.exp(-2.0 * ts) + np.exp(-30.0 * ts)  # fast mode gone by t = 5
    assert flows.lazy.late_rate(ts, values, start=5.0) == pytest.approx(2.0, rel=1e-9)
    floored = np.maximum(np.exp(-2.0 * ts), 1e-8)  # flat from t ≈ 9.2
    assert flows.lazy.late_rate(ts, floored, start=5.0, floor=1e-7) == pytest.approx(2.0, rel=1e-9)
    assert flows.lazy.late_rate(ts, floored, start=9.9, floor=1e-7) is None


def test_constants_that_do_not_exist_are_none_with_a_reason_on_a_singular_ntk():
    # Every input twice: the NTK Gram matrix has (at least) n/2 zero eigenvalues, so
    # σ_min = 0, C0 = 0 and no α satisfies Theorem 2.4 (it divided by C0 = 0 before).
    k = jax.random.split(jax.random.PRNGKey(3), 3)
    net = models.symmetrize(models.TwoLayerNet(3, 16, activation="tanh", key=k[0]), "doubled")
    X = jax.random.normal(k[1], (6, 3))
    X = jnp.concatenate([X, X])
    Y = jnp.concatenate([jax.random.normal(k[2], (6,))] * 2)
    c = flows.lazy.lazy_constants(net, (X, Y), key=jax.random.PRNGKey(0))
    assert c.singular and c.C0 is None and c.alpha_min is None
    assert "singular" in c.unavailable["C0"] and "singular" in c.unavailable["alpha_min"]
    assert c.theorem_2_4_conditions(1e6) is False
    summary = c.summary()
    assert summary["C0"] is None and summary["alpha_min"] is None
    assert set(summary["unavailable"]) == {"C0", "alpha_min"}


@pytest.mark.parametrize(
    "data, message",
    [
        # NaN targets used to give constants with a NaN y_star, silently
        (lambda X, Y: (X, Y * np.nan), "data targets: non-finite values (NaN or inf)"),
        (lambda X, Y: X, "data must be a pair (X (n, d), Y (n,) or (n, k)), got a ndarray"),
        (lambda X, Y: (X, Y[:2]), "data targets have 2 rows but inputs have 5"),
        # used to fail as JAX's "IndexError: tuple index out of range", numpy's "could not
        # convert string to float", or to pass None targets on
        (lambda X, Y: (X, 1.0), "data targets have shape () but inputs have 5"),
        (lambda X, Y: ([["a"] * 8] * 5, Y), "data inputs must be an array of numbers, got list"),
        (lambda X, Y: (X, None), "data targets must be an array of numbers, got NoneType"),
    ],
)
def test_lazy_constants_refuse_bad_data_naming_it(data, message):
    X, Y = _data(5, 8)
    model = _Linear(jnp.asarray(np.linspace(-1.0, 1.3, 8)))
    with pytest.raises(ValueError) as info:
        flows.lazy.lazy_constants(model, data(X, Y))
    assert str(info.value) == message


@pytest.mark.parametrize(
    "call",
    [
        lambda model, X, Y: flows.lazy.lazy_constants(model, (X, Y), key=0),
        lambda model, X, Y: flows.lazy.jacobian_lipschitz(model, X, key=0),
    ],
)
def test_a_seed_given_as_key_is_refused_naming_key(call):
    # used to fail inside JAX as "JAX encountered invalid PRNG key data"
    X, Y = _data(5, 8)
    model = _Linear(jnp.asarray(np.linspace(-1.0, 1.3, 8)))
    with pytest.raises(ValueError) as info:
        call(model, X, Y)
    assert str(info.value) == (
        "key must be a jax.random key (jax.random.key(0) or jax.random.PRNGKey(0)), got int 0"
    )


@pytest.mark.parametrize(
    "call, message",
    [
        # unequal lengths used to fail as numpy's "operands could not be broadcast together"
        (
            lambda: flows.lazy.loglog_slope([1.0, 2.0, 3.0], [1.0, 2.0]),
            "x and y must have the same length, got 3 and 2",
        ),
        (
            lambda: flows.lazy.late_rate([0.0, 1.0, 2.0], [1.0, 0.5], start=0.0),
            "ts and values must have the same length, got 3 and 2",
        ),
        (
            lambda: flows.lazy.loglog_slope("abc", [1.0, 2.0, 3.0]),
            "x must be a 1-D array of numbers, got str",
        ),
        (
            lambda: flows.lazy.late_rate(np.ones((2, 3)), np.ones((2, 3)), start=0.0),
            "ts must be a 1-D array, got shape (2, 3)",
        ),
        # empty data gave None, silently
        (lambda: flows.lazy.loglog_slope([], []), "x and y are empty: a fit needs points"),
        (
            lambda: flows.lazy.late_rate([], [], start=0.0),
            "ts and values are empty: a fit needs points",
        ),
        # a NaN start or floor kept no point: None, silently
        (
            lambda: flows.lazy.late_rate([0.0, 1.0, 2.0], [1.0, 0.5, 0.2], start=np.nan),
            "start must be finite, got nan",
        ),
        (
            lambda: flows.lazy.late_rate([0.0, 1.0, 2.0], [1.0, 0.5, 0.2], start=0, floor=np.nan),
            "floor must be finite, got nan",
        ),
    ],
)
def test_fits_refuse_unpaired_arrays_naming_them(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


def test_fits_recover_a_known_slope_and_rate():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    assert abs(flows.lazy.loglog_slope(x, 3.0 * x**-1.5) + 1.5) < 1e-12
    ts = np.linspace(0.0, 5.0, 11)
    assert abs(flows.lazy.late_rate(ts, 2.0 * np.exp(-0.7 * ts), start=1.0) - 0.7) < 1e-12
    # one time repeated has no slope (numpy's polyfit gave a number with a RankWarning)
    assert flows.lazy.late_rate([1.0, 1.0, 1.0], [1.0, 2.0, 3.0], start=0.0) is None
