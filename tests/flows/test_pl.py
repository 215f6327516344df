"""flows.observables.pl_quotient, pl_constant and distance_from_init along exact flows."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models

LOSS = flows.SquaredLoss("sum")


def _lazy_problem(alpha):
    """F_α(w) = R(αh(w))/α², R = ½‖y − y*‖², h a symmetrised MLP (h(w0) = 0)."""
    rng = np.random.default_rng(3)
    X, Y = rng.standard_normal((6, 3)), rng.standard_normal(6)
    net = models.MLP(3, 8, 2, activation="tanh", key=jax.random.PRNGKey(4))
    model = models.symmetrize(net, "doubled")

    def F(params):
        return LOSS(alpha * jax.vmap(params)(X), Y) / alpha**2

    return model, X, Y, F


@pytest.mark.parametrize("alpha", [1.0, 10.0])
def test_pl_quotient_is_at_least_lambda_min_of_the_ntk_along_a_lazy_flow(alpha):
    # ∇F_α = Jᵀr/α with r = αh(w) − y*, so μ = rᵀΣr/‖r‖² ∈ [λ_min(Σ(w)), λ_max(Σ(w))]:
    # the Rayleigh quotient of Σ(w) = JJᵀ at r (Liu, Zhu & Belkin 2022).
    model, X, Y, F = _lazy_problem(alpha)
    obs = {
        "pl": flows.observables.pl_quotient(F),
        "distance": flows.observables.distance_from_init(model),
    }
    # Tsit5: the flow is not stiff to t = 20 ("auto" would compile exprb32 for its last steps).
    traj = flows.gradient_flow(F, model, 20.0, ts=flows.log_times(20.0, 12), observables=obs,
                               rtol=1e-10, atol=1e-12, solver="tsit5")  # fmt: skip
    mu = flows.observables.pl_constant(traj.observables["pl"])
    assert np.ma.count_masked(mu) == 0
    assert traj.loss[-1] < 1e-2 * traj.loss[0]
    worst_identity = worst_gap = 0.0
    for i in range(len(traj.ts)):
        params = traj.at(i)
        sigma = flows.ntk.ntk_gram(params, X)
        lam = np.linalg.eigvalsh(sigma)
        r = alpha * np.asarray(jax.vmap(params)(X)) - Y
        rayleigh = r @ sigma @ r / (r @ r)
        worst_identity = max(worst_identity, abs(mu[i] - rayleigh) / rayleigh)
        worst_gap = min(worst_gap, (mu[i] - lam[0]) / lam[-1])
        assert mu[i] <= lam[-1] * (1 + 1e-10)
    assert worst_identity < 1e-10  # measured 1.0e-14 (α = 1), 1.3e-14 (α = 10)
    assert worst_gap >= -1e-12  # measured min (μ − λ_min)/λ_max: 4e-15 (α = 1), 2e-14 (α = 10)


def test_distance_from_init_is_zero_at_t0_and_within_the_energy_bound():
    # ‖w(t) − w0‖ ≤ ∫‖w'‖ ≤ √t·(∫‖∇F‖²)^½ = √(t·(F(0) − F(t))) (Chizat et al. 2019, Thm 2.2)
    model, X, Y, F = _lazy_problem(3.0)
    dist = flows.observables.distance_from_init(model)
    traj = flows.gradient_flow(F, model, 5.0, ts=np.linspace(0, 5.0, 11),
                               observables={"distance": dist}, solver="tsit5")  # fmt: skip
    d = np.asarray(traj.observables["distance"])
    assert d[0] == 0.0
    flat = lambda p: jnp.concatenate(
        [jnp.ravel(x) for x in jax.tree.leaves(models.partition(p)[0])]
    )  # noqa: E731
    np.testing.assert_allclose(d[-1], jnp.linalg.norm(flat(traj.at(10)) - flat(model)), rtol=1e-12)
    bound = np.sqrt(traj.ts * (traj.loss[0] - traj.loss))
    assert np.all(d <= bound * (1 + 1e-6))
    assert d[-1] > 0.1 * bound[-1]  # the bound is not vacuous: measured ratio 0.25 at t = 5


def test_pl_constant_masks_undefined_points_and_never_returns_nan():
    record = {
        "grad_norm_sq": np.array([4.0, 1.0, 0.0, 2.0]),
        "gap": np.array([1.0, 0.0, -1e-18, 0.5]),
    }
    mu = flows.observables.pl_constant(record)
    assert mu.mask.tolist() == [False, True, True, False]
    assert mu.compressed().tolist() == [2.0, 2.0] and mu.min() == 2.0
    assert not np.any(np.isnan(mu.data))
    assert flows.observables.pl_constant(record, floor=0.6).compressed().tolist() == [2.0]
    assert (
        flows.observables.pl_constant({"grad_norm_sq": [1.0], "gap": [0.0]}).min() is np.ma.masked
    )


def test_pl_constant_of_a_quadratic_is_its_curvature():
    # F(w) = ½ c‖w − w*‖²: ‖∇F‖² = c²‖w − w*‖² = 2c·F, so μ = c at every t, F* = 0.
    c, w_star = 0.7, jnp.array([1.0, -2.0])
    F = lambda w: 0.5 * c * jnp.sum((w - w_star) ** 2)  # noqa: E731
    traj = flows.gradient_flow(
        F, jnp.array([3.0, 0.5]), 10.0, observables={"pl": flows.observables.pl_quotient(F)}
    )
    mu = flows.observables.pl_constant(traj.observables["pl"])
    np.testing.assert_allclose(mu, c, rtol=1e-12)  # measured 3e-16


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: flows.observables.pl_quotient(lambda w: 0.0, f_star=float("nan")), "f_star"),
        # '0' was taken as 0 and True as 1
        (lambda: flows.observables.pl_quotient(lambda w: 0.0, f_star="0"), "^f_star must be a"),
        (lambda: flows.observables.pl_quotient(lambda w: 0.0, f_star=True), "^f_star must be a"),
        (lambda: flows.observables.pl_constant({"gap": [1.0]}), "recorded by pl_quotient"),
        (
            lambda: flows.observables.pl_constant({"grad_norm_sq": [1.0, 2.0], "gap": [1.0]}),
            "shape",
        ),
        (
            lambda: flows.observables.pl_constant({"grad_norm_sq": [np.nan], "gap": [1.0]}),
            "non-finite",
        ),
        (
            lambda: flows.observables.pl_constant({"grad_norm_sq": [1.0], "gap": [1.0]}, floor=-1),
            "floor",
        ),
        (lambda: flows.observables.distance_from_init({"a": 1}), "no trainable"),
        (lambda: flows.observables.distance_from_init(jnp.array([np.inf])), "non-finite"),
    ],
)
def test_bad_arguments_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(
    "params, match",
    [
        ({"b": jnp.array([1.0, 2.0])}, "^params must have the tree structure of params0"),
        ({"a": jnp.array([1.0, 2.0, 3.0])}, "^params must have the array shapes of params0"),
    ],
)
def test_distance_from_init_refuses_params_unlike_params0(params, match):
    # distance_from_init({"a": w})({"b": w}) returned 0: the leaves were compared by count
    distance = flows.observables.distance_from_init({"a": jnp.array([1.0, 2.0])})
    assert float(distance({"a": jnp.array([4.0, 6.0])})) == 5.0
    with pytest.raises(ValueError, match=match):
        distance(params)


def test_an_objective_that_is_not_callable_is_refused_when_given():
    # pl_quotient(3.0) was accepted, and failed only when the flow first recorded it
    with pytest.raises(TypeError, match="^objective must be a function of the parameters"):
        flows.observables.pl_quotient(3.0)
