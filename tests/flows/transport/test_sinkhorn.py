"""The generalised Sinkhorn algorithm: POT oracles (KL and Pearson χ²), the 2×2 closed forms
of every Legendre f, the certificates, the envelope gradient, jit/vmap, and the errors
(Terjék & González-Sánchez, AISTATS 2022, arXiv 2105.14337)."""

import jax
import jax.numpy as jnp
import numpy as np
import ot
import pytest
import scipy.optimize as so

import flows.divergences as D
from experiments.transport._data import clouds
from experiments.transport._data import cost as transport_cost
from flows.transport import SinkhornNotConverged, sinkhorn

LEGENDRE = [n for n in D.DIVERGENCES if n != "tv"]


def _clouds(n, m, seed=0):
    """Two 2-D clouds in the unit box, uniform weights, c = ½|x − y|²."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 2))
    y = 0.3 + 0.5 * rng.random((m, 2))
    cost = 0.5 * ((x[:, None] - y[None]) ** 2).sum(-1)
    return x, y, cost, np.full(n, 1.0 / n), np.full(m, 1.0 / m)


def test_kl_plan_equals_pot_sinkhorn_log():
    _, _, cost, a, b = _clouds(30, 20)
    result = sinkhorn(a, b, cost, 0.05, "kl", tol=1e-14)
    expected = ot.bregman.sinkhorn_log(a, b, cost, 0.05, numItermax=100_000, stopThr=1e-15)
    np.testing.assert_allclose(result.plan, expected, rtol=0, atol=1e-12 / 30)
    assert np.abs(np.asarray(result.plan) - expected).max() < 1e-12


def test_chi2_plan_equals_pot_smooth_ot_l2():
    """ε D_χ²(π‖a⊗b) = ε(nm‖π‖²_F − 1) with uniform weights: POT's l2-regularised OT with
    reg = 2εnm, solved by L-BFGS to about 1e-10, with the same support."""
    n, m, eps = 12, 9, 0.02
    _, _, cost, a, b = _clouds(n, m, seed=1)
    result = sinkhorn(a, b, cost, eps, "chi2")
    expected = ot.smooth.smooth_ot_dual(
        a, b, cost, 2 * eps * n * m, reg_type="l2", stopThr=1e-14, numItermax=100_000
    )
    plan = np.asarray(result.plan)
    pot_error = np.abs(expected.sum(1) - a).sum() + np.abs(expected.sum(0) - b).sum()
    assert np.abs(plan - expected).max() <= 10 * pot_error  # POT's own accuracy
    assert float(result.marginal_error.max()) < 1e-12 < pot_error
    assert ((plan > 0) == (expected > 1e-12)).all()
    assert 0 < (plan > 0).mean() < 1  # sparse: exact zeros


def _two_by_two_p(name, delta, eps):
    """p of π = [[p, ½ − p], [½ − p, p]]: the root of Δ + 2ε(f′(4p) − f′(2 − 4p)) in [0, ½]."""
    fprime = jax.grad(D.get(name).f)
    g = lambda p: delta + 2 * eps * (float(fprime(4 * p)) - float(fprime(2 - 4 * p)))  # noqa: E731
    lo, hi = 1e-300, 0.5 - 1e-15
    if g(lo) > 0:
        return 0.0
    if g(hi) < 0:
        return 0.5
    return so.brentq(g, lo, hi, xtol=1e-17, rtol=1e-15)


@pytest.mark.parametrize("name", LEGENDRE)
def test_two_by_two_closed_form(name):
    a = b = np.array([0.5, 0.5])
    cost = np.array([[0.1, 0.7], [0.5, 0.2]])
    delta = cost[0, 0] + cost[1, 1] - cost[0, 1] - cost[1, 0]  # −0.9
    eps = 0.3
    result = sinkhorn(a, b, cost, eps, name, tol=1e-14)
    p = _two_by_two_p(name, delta, eps)
    expected = np.array([[p, 0.5 - p], [0.5 - p, p]])
    np.testing.assert_allclose(result.plan, expected, rtol=0, atol=1e-13)
    if name == "kl":
        assert p == pytest.approx(float(0.5 * jax.nn.sigmoid(-delta / (2 * eps))), abs=1e-15)
    if name == "chi2":
        assert p == pytest.approx(0.25 - delta / (32 * eps), abs=1e-15)
    assert abs(float(result.gap)) < 1e-13


@pytest.mark.parametrize(("name", "threshold"), [("chi2", 8.0), ("triangular", 64.0 / 9.0)])
def test_two_by_two_plan_is_a_permutation_exactly_when_delta_large(name, threshold):
    """|Δ| ≥ 2ε(f′(2) − f′(0)): 8ε for χ², 64ε/9 for triangular; just below it, dense."""
    a = b = np.array([0.5, 0.5])
    cost = np.array([[0.1, 0.7], [0.5, 0.2]])
    delta = 0.9
    threshold_eps = delta / threshold
    exact = sinkhorn(a, b, cost, 0.5 * threshold_eps, name)
    plan = np.asarray(exact.plan)
    assert plan[0, 1] == 0.0 and plan[1, 0] == 0.0  # exact zeros
    np.testing.assert_allclose(np.diag(plan), 0.5, rtol=0, atol=1e-15)
    # at the threshold the off-diagonal reaches 0 only in the limit: within tol
    edge = np.asarray(sinkhorn(a, b, cost, 0.999 * threshold_eps, name).plan)
    assert edge[0, 1] + edge[1, 0] <= 1e-12
    below = sinkhorn(a, b, cost, 1.01 * threshold_eps, name, tol=1e-14)
    p = _two_by_two_p(name, -delta, 1.01 * threshold_eps)
    assert 0.5 - p > 1e-3
    np.testing.assert_allclose(below.plan, [[p, 0.5 - p], [0.5 - p, p]], rtol=0, atol=1e-13)


@pytest.mark.parametrize("name", LEGENDRE)
def test_certificates_below_1e_10_at_eps_1e_2_and_1e_3_with_eps_scaling(name):
    """The experiment's clouds (moons against a Gaussian mixture, unit box), 100 + 100 points:
    at ε = 1e-2 and, with ε-scaling, at ε = 1e-3 every f reaches gap and L1 marginal errors
    ≤ 1e-10 (measured ≤ 2.0e-11 and gap ≤ 5.2e-13; one compilation per f serves both ε, an
    argument). The solver's target is 2e-11: Neyman χ² at ε = 1e-3 has a round-off floor
    near 1e-11 (s = (u + v − c)/ε carries ~1e-13, amplified near the pole of (f*)′), where
    a target of 1e-11 once stalled at 1.07e-11 (it takes 190 iterations now, 182 at 2e-11).
    The 500 + 500 case at ε = 1e-2 runs in the benchmark (`benchmarks/_case_transport.py`)."""
    x, y = clouds(100, 0)
    cost = transport_cost(x, y)
    a = np.full(100, 1e-2)
    for eps, schedule in (
        (1e-2, [1.0, 0.3, 0.1, 0.03]),
        (1e-3, [1.0, 0.3, 0.1, 0.03, 0.01, 0.003]),
    ):
        result = sinkhorn(a, a, cost, eps, name, tol=2e-11, max_iters=2000, eps_schedule=schedule)
        assert abs(float(result.gap)) <= 1e-10
        assert float(result.marginal_error.max()) <= 1e-10
        plan = np.asarray(result.plan)
        assert abs(plan.sum(1) - a).sum() + abs(plan.sum(0) - a).sum() <= 1e-10
        np.testing.assert_allclose(float(result.primal), float(result.dual), rtol=0, atol=1e-10)


def test_envelope_gradient_matches_finite_differences():
    """∇_{x_i} OT = Σ_j π_ij (x_i − y_j) for c = ½|x − y|², from jax.grad of `dual`."""
    x, y, _, a, b = _clouds(8, 6, seed=3)

    def ot_value(points, name):
        cost = 0.5 * jnp.sum((points[:, None] - y[None]) ** 2, -1)
        return sinkhorn(a, b, cost, 0.1, name, tol=1e-14).dual

    for name in ("kl", "chi2", "jeffreys"):
        grad = jax.grad(ot_value)(jnp.asarray(x), name)
        plan = np.asarray(
            sinkhorn(a, b, 0.5 * ((x[:, None] - y[None]) ** 2).sum(-1), 0.1, name, tol=1e-14).plan
        )
        envelope = plan.sum(1)[:, None] * x - plan @ y
        np.testing.assert_allclose(grad, envelope, rtol=0, atol=1e-13)
        step = 1e-5
        direction = np.random.default_rng(4).normal(size=x.shape)
        fd = (
            float(ot_value(x + step * direction, name))
            - float(ot_value(x - step * direction, name))
        ) / (2 * step)
        assert float(jnp.sum(grad * direction)) == pytest.approx(fd, abs=1e-9)


def test_jit_and_vmap_over_costs_and_eps():
    _, _, cost, a, b = _clouds(10, 7, seed=5)
    costs = jnp.stack([cost, 2.0 * cost, cost + 1.0])
    values = jax.jit(jax.vmap(lambda c: sinkhorn(a, b, c, 0.1, "js").dual))(costs)
    singles = [float(sinkhorn(a, b, c, 0.1, "js").dual) for c in costs]
    np.testing.assert_allclose(values, singles, rtol=0, atol=1e-13)
    assert float(values[2]) == pytest.approx(singles[0] + 1.0, abs=1e-12)  # c + 1 adds 1
    eps = jnp.asarray([0.1, 0.2])
    per_eps = jax.vmap(lambda e: sinkhorn(a, b, cost, e, "kl").dual)(eps)
    np.testing.assert_allclose(
        per_eps, [float(sinkhorn(a, b, cost, e, "kl").dual) for e in (0.1, 0.2)], atol=1e-13
    )


def test_warm_start_and_eps_schedule_reach_the_same_plan():
    _, _, cost, a, b = _clouds(20, 15, seed=6)
    cold = sinkhorn(a, b, cost, 0.01, "kl")
    scaled = sinkhorn(a, b, cost, 0.01, "kl", eps_schedule=[0.1, 0.03])
    np.testing.assert_allclose(scaled.plan, cold.plan, rtol=0, atol=1e-12)
    warm = sinkhorn(a, b, cost, 0.01, "kl", init=(cold.u, cold.v))
    assert int(warm.iterations) <= 1


def test_kl_from_a_far_warm_start_reaches_the_cold_plan():
    # u spread over ±20 at ε = 0.01: the first shifted row sums Σ_j exp(f_i + k_ij + g_j)
    # overflow or underflow, and the KL loop takes the max-shifted logsumexp instead
    _, _, cost, a, b = _clouds(20, 15, seed=6)
    cold = sinkhorn(a, b, cost, 0.01, "kl")
    u = np.random.default_rng(1).uniform(-20.0, 20.0, 20)
    far = sinkhorn(a, b, cost, 0.01, "kl", init=(u, np.zeros(15)))
    np.testing.assert_allclose(far.plan, cold.plan, rtol=0, atol=1e-12)
    assert float(far.marginal_error.max()) <= 1e-12


def test_not_converged_raises_naming_eps_divergence_and_error():
    _, _, cost, a, b = _clouds(20, 15, seed=7)
    with pytest.raises(
        SinkhornNotConverged, match=r"divergence='js', eps=0.01, marginal error \S+ > tol=1e-12"
    ) as info:
        sinkhorn(a, b, cost, 0.01, "js", max_iters=3)
    assert info.value.marginal_error > 1e-12 and info.value.iterations == 3
    with pytest.raises(Exception, match="sinkhorn did not converge: divergence='js'"):
        jax.block_until_ready(
            jax.jit(lambda c: sinkhorn(a, b, c, 0.01, "js", max_iters=3).plan)(cost)
        )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(a=np.array([0.7, -0.2, 0.5])), "a: weights must be >= 0"),
        (dict(b=np.array([0.5, 0.6])), "b: weights must sum to 1"),
        (dict(cost=np.array([[0.0, np.nan], [1.0, 0.0], [0.0, 1.0]])), "cost: 1 non-finite"),
        (dict(eps=0.0), "eps must be finite and > 0"),
        (dict(eps=-1.0), "eps must be finite and > 0"),
        (dict(divergence="kullback"), r"divergence must be one of \('kl'"),
        (dict(divergence="tv"), "divergence='tv' is not of Legendre type"),
        (
            dict(cost=np.zeros((2, 3))),
            r"cost of shape \(2, 3\) does not match a \(3,\) and b \(2,\)",
        ),
        (dict(a=np.full(3, 1 / 3, dtype=np.float32)), "a holds float32"),
    ],
)
def test_bad_input_one_line_naming_the_argument(change, message):
    args = dict(
        a=np.full(3, 1 / 3), b=np.full(2, 0.5), cost=np.ones((3, 2)), eps=0.1, divergence="kl"
    )
    args.update(change)
    with pytest.raises(ValueError, match=message) as info:
        sinkhorn(**args)
    assert "\n" not in str(info.value)
