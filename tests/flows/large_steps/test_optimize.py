"""Any optax optimizer on the flow's time axis (step k at t = kη₀): gradient descent is its
case optax.sgd(η) to the last bit, schedules are checked and applied per step, and bad input
is refused in one line naming the argument."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import flows
from flows.large_steps import optimize
from tests.flows.large_steps.nets import tanh_regression

LOSS, NET = tanh_regression(3, 6, 1, 12, seed=2, key=5)


def _flat(params):
    return np.concatenate([np.ravel(x) for x in jax.tree.leaves(params)])


@pytest.mark.parametrize("eta", [0.05, 0.7])
def test_gradient_descent_is_optimize_with_optax_sgd_to_the_last_bit(eta):
    gd = flows.gradient_descent(LOSS, NET, 30 * eta, eta=eta, ts=eta * np.arange(31.0))
    opt = optimize(LOSS, NET, 30 * eta, optimizer=optax.sgd(eta), eta=eta, ts=gd.ts)
    assert np.array_equal(gd.ts, opt.ts) and np.array_equal(gd.loss, opt.loss)
    assert np.array_equal(_flat(gd.params), _flat(opt.params))
    # and both are what gradient_descent computed before it became a case of optimize:
    # θ + η·(−∇L) in one compiled loop
    w, static = eqx.partition(NET, eqx.is_inexact_array)

    @jax.jit
    def descend(w):
        def step(i, w):
            g = jax.grad(lambda d: LOSS(eqx.combine(d, static)))(w)
            return jax.tree.map(lambda a, b: a + eta * -b, w, g)

        return jax.lax.fori_loop(0, 30, step, w)

    assert np.array_equal(_flat(gd.at(-1)), _flat(descend(w)))
    assert gd.config["solver"] == "gradient_descent" and opt.config["solver"] == "optimize"
    assert opt.stats["num_steps"] == 30 == opt.stats["grad_evals"]


def test_step_k_is_at_t_k_eta0_and_k_is_round_t1_over_eta0():
    traj = optimize(LOSS, NET, 1.04, optimizer=optax.adam(0.1), eta=0.1, ts=[0.0, 0.33, 1.0])
    np.testing.assert_allclose(traj.ts, [0.0, 0.3, 1.0], rtol=0, atol=1e-15)
    assert traj.stats["num_steps"] == 10


QUAD = jnp.array([4.0, 1.0, 0.25])  # L = ½Σλ_i w_i², λ_max = 4


def quadratic(w):
    return 0.5 * jnp.sum(QUAD * w**2)


W0 = jnp.array([0.7, -1.3, 0.4])


def test_a_schedule_gives_the_product_of_per_step_factors_on_a_quadratic():
    # GD with η_k: w_K = Π_k (1 − η_k λ) w_0, coordinate by coordinate.
    eta0, K = 0.2, 40
    schedule = optax.warmup_cosine_decay_schedule(0.0 + 1e-3, eta0, 10, K, end_value=0.01)
    traj = optimize(
        quadratic, W0, K * eta0, optimizer=optax.sgd(eta0), eta=eta0, schedule=schedule,
        ts=[0.0, K * eta0],
    )  # fmt: skip
    etas = np.asarray(jax.vmap(schedule)(jnp.arange(K)))
    expected = np.prod(1 - etas[:, None] * np.asarray(QUAD)[None], axis=0) * np.asarray(W0)
    np.testing.assert_allclose(traj.params[-1], expected, rtol=1e-12)
    # the step size used at each save is recorded; the time axis stays t = kη₀
    assert traj.observables["eta"][-1] == pytest.approx(float(schedule(K)), rel=1e-15)
    assert traj.ts[-1] == pytest.approx(K * eta0) and traj.config["schedule"] is True
    # optax's own schedule inside the optimizer agrees only to float32: it evaluates the
    # schedule on its int32 step count (measured 2e-6 relative on η_k, 5e-8 on w_K)
    inside = optimize(quadratic, W0, K * eta0, optimizer=optax.sgd(schedule), eta=eta0,
                      ts=[0.0, K * eta0])  # fmt: skip
    np.testing.assert_allclose(inside.params[-1], traj.params[-1], rtol=1e-6, atol=1e-14)
    assert not np.allclose(inside.params[-1], expected, rtol=1e-9, atol=1e-14)


def _rate(beta, a):
    """Spectral radius of heavy ball's companion matrix on one mode, a = ηλ."""
    return max(abs(np.linalg.eigvals([[1 + beta - a, -beta], [1.0, 0.0]])))


@pytest.mark.filterwarnings("ignore::flows.DivergenceWarning")  # ρ^800 > 1e10 above the limit
@pytest.mark.parametrize("beta", [0.0, 0.5, 0.9])
@pytest.mark.parametrize("side", [0.98, 1.02])
def test_heavy_ball_is_stable_iff_eta_lambda_below_2_plus_2_beta(beta, side):
    eta = side * (2 + 2 * beta) / float(QUAD.max())
    K = 300
    traj = optimize(
        quadratic, W0, K * eta, optimizer=flows.large_steps.heavy_ball(eta, beta), eta=eta,
        ts=eta * np.arange(K + 1.0), save_params=False,
    )  # fmt: skip
    # every mode's error obeys x_{k+1} = (1 + β − ηλ)x_k − βx_{k−1}: the loss falls or grows
    # at the largest companion radius over the modes, squared; the top mode decides stability
    rho = max(_rate(beta, eta * lam) for lam in np.asarray(QUAD))
    assert (_rate(beta, eta * float(QUAD.max())) < 1) == (rho < 1) == (side < 1)
    # envelopes over 50 steps, 150 apart (complex roots make the loss oscillate)
    measured = (traj.loss[-50:].max() / traj.loss[-200:-150].max()) ** (1 / 300)
    print(f"beta={beta} ηλ/(2+2β)={side}: ρ={rho:.6f}, measured {measured:.6f}")
    assert measured == pytest.approx(rho, abs=1e-2)  # measured within 1e-3
    assert (traj.loss[-1] < traj.loss[0]) == (side < 1)


def test_a_diverging_optimizer_names_the_step_and_eta_and_keeps_the_finite_saves():
    eta = 3.0 * 2 / float(QUAD.max())
    with pytest.warns(flows.DivergenceWarning, match="the optimizer diverges"):
        with pytest.raises(FloatingPointError, match=r"non-finite at step \d+ .*reduce eta") as e:
            optimize(quadratic, W0, 4000 * eta, optimizer=optax.sgd(eta, momentum=0.5), eta=eta,
                     ts=eta * np.arange(4001.0), save_params=False)  # fmt: skip
    partial = e.value.partial
    assert partial is not None and np.all(np.isfinite(partial.loss)) and len(partial.ts) > 10


def test_state_observables_see_the_optimizer_state_after_each_step():
    eta = 0.1
    traj = optimize(
        quadratic, W0, 3 * eta, optimizer=optax.sgd(eta, momentum=0.5), eta=eta,
        ts=eta * np.arange(4.0), state_observables={"trace": lambda p, s: s[0].trace},
    )  # fmt: skip
    # the trace (momentum buffer) is m_k = g_{k-1} + β m_{k-1}; θ_k = θ_{k-1} − η m_k
    np.testing.assert_allclose(
        np.diff(traj.params, axis=0), -eta * traj.observables["trace"][1:], rtol=1e-14
    )


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"optimizer": "adam"}, TypeError, "optimizer must be an optax GradientTransformation"),
        ({"optimizer": optax.adam}, TypeError, "optimizer must be an optax"),
        ({"schedule": lambda k: 0.1 - 0.01 * k}, ValueError, r"schedule .* got 0.0 at step 10"),
        ({"schedule": lambda k: jnp.where(k == 3, jnp.nan, 0.1)}, ValueError, "nan at step 3"),
        ({"schedule": 0.1}, TypeError, "schedule must be a function of the step"),
        # said only "schedule fails on the steps (TracerBoolConversionError: ...)"
        (
            {"schedule": lambda k: 0.1 if k < 5 else 0.05},
            ValueError,
            r"TracerBoolConversionError.*: write it with jnp operations \(jnp.where, not if",
        ),
        ({"schedule": lambda k: [0.1, 0.05][k]}, ValueError, r"Tracer.*not a list\)$"),
        ({"state_observables": {"x": 3}}, TypeError, r"state_observables\['x'\]"),
        ({"eta": -0.1}, ValueError, "eta must be finite and > 0"),
    ],
)
def test_bad_input_is_refused_in_one_line_naming_the_argument(kwargs, error, message):
    args = {"optimizer": optax.sgd(0.1), "eta": 0.1} | kwargs
    with pytest.raises(error, match=message):
        optimize(quadratic, W0, 2.0, **args)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: flows.large_steps.heavy_ball(0.1, 1.0), r"beta must lie in \[0, 1\)"),
        (lambda: flows.large_steps.heavy_ball(0.1, -0.1), r"beta must lie in \[0, 1\)"),
        (lambda: flows.large_steps.rmsprop(0.1, beta2=1.5), r"beta2 must lie in \[0, 1\)"),
        (lambda: flows.large_steps.rmsprop(0.1, eps=-1e-8), "eps must be >= 0"),
        (lambda: flows.large_steps.adam(0.1, beta1=float("nan")), "beta1 must be finite"),
        (lambda: flows.large_steps.adam(0.0), "eta must be finite and > 0"),
        (lambda: flows.large_steps.adam(0.1, bias_correction="no"), "bias_correction must be"),
    ],
)
def test_optimizer_hyperparameters_are_checked_naming_them(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_geometry_aware_steps_follow_the_catapult_map_at_eta_k_equal_kappa_over_lambda_k():
    from flows.large_steps import catapult_map, geometry_aware, uv_init, uv_loss, uv_ntk, uv_output

    m, kappa, K = 50, 3.0, 12
    p0 = uv_init(m, seed=1)
    eta0 = kappa / float(uv_ntk(p0))
    traj = optimize(uv_loss(0.5), p0, K * eta0, optimizer=geometry_aware(kappa, uv_ntk),
                    eta=eta0, ts=eta0 * np.arange(K + 1.0),
                    observables={"f": uv_output, "lam": uv_ntk})  # fmt: skip
    f, lam = float(uv_output(p0)), float(uv_ntk(p0))
    for k in range(1, K + 1):
        f, lam = catapult_map(f, lam, eta=kappa / lam, y=0.5, m=m)
        assert traj.observables["f"][k] == pytest.approx(f, rel=1e-10, abs=1e-12)
        assert traj.observables["lam"][k] == pytest.approx(lam, rel=1e-10)
    with pytest.raises(ValueError, match="kappa must be finite and > 0"):
        geometry_aware(0.0, uv_ntk)
    with pytest.raises(TypeError, match="curvature must be a function"):
        geometry_aware(3.0, 2.0)


def _quadratic(w):
    return 0.5 * jnp.sum(jnp.array([1.0, 3.0]) * w**2)


@pytest.mark.parametrize(
    "optimizer, message",
    [
        # ν_0 < 0 or NaN made step 1 NaN, reported as "reduce eta"; a wrong shape or
        # structure failed inside the step ("add got incompatible shapes", a tree_map error)
        (lambda: flows.large_steps.rmsprop(0.1, nu0=jnp.array([-1.0, 1.0])), "got min -1"),
        (lambda: flows.large_steps.rmsprop(0.1, nu0=jnp.array([jnp.nan, 1.0])), "1 non-finite"),
        (lambda: flows.large_steps.rmsprop(0.1, nu0=jnp.ones(3)), "nu0 must have the trainable"),
        (lambda: flows.large_steps.rmsprop(0.1, nu0={"w": jnp.ones(2)}), "nu0 must have the"),
        # the step κ/λ: λ = 0 gave inf, λ < 0 an ascent, and a λ of several numbers was
        # applied entry by entry; now one line naming curvature, before any step
        (lambda: flows.large_steps.geometry_aware(3.0, lambda w: 0.0 * w[0]), "got 0.0 at the"),
        (lambda: flows.large_steps.geometry_aware(3.0, lambda w: -1.0 + 0 * w[0]), "got -1.0"),
        (
            lambda: flows.large_steps.geometry_aware(3.0, lambda w: w),
            "one number .* shape \\(2,\\)",
        ),
    ],
)
def test_rmsprop_nu0_and_geometry_aware_curvature_are_checked_naming_them(optimizer, message):
    with pytest.raises(ValueError, match=message) as e:
        optimize(_quadratic, jnp.array([1.0, 1.0]), 1.0, optimizer=optimizer(), eta=0.1)
    assert ("nu0" if "nu0" in str(e.value) else "curvature") in str(e.value).split()[0]


def test_a_non_finite_iterate_between_saves_is_located_at_its_step_with_the_loss_before():
    # RMSProp with ε = 0 divides 0 by 0 where a gradient vanishes: w[1] is NaN after step 1
    # (it was reported as "between step 0 and step 5", with no loss)
    def loss(w):
        return 0.5 * w[0] ** 2

    with pytest.raises(FloatingPointError) as e:
        optimize(loss, jnp.array([1.0, 2.0]), 1.0, eta=0.1, ts=[0.0, 0.5, 1.0],
                 optimizer=flows.large_steps.rmsprop(0.1, eps=0.0))  # fmt: skip
    assert str(e.value).startswith(
        "the optimizer became non-finite at step 1 (t=0.1): the iterate holds NaN or inf "
        "(the loss was 0.5 at step 0); reduce eta (got 0.1) or check the optimizer's"
    )
    np.testing.assert_array_equal(e.value.partial.loss, [0.5])


def test_the_divergence_rule_measures_from_the_loss_at_params0_without_a_save_there():
    # with saves from step 10 on, the rule took the loss there as L(0): the warning said
    # "rose from 1662.63", and a loss non-finite at params0 was blamed on eta
    loss = lambda w: 0.5 * jnp.sum(jnp.array([1.0, 0.3]) * w**2)  # noqa: E731
    sgd = optax.sgd(2.5)  # |1 − 2.5λ₁| = 1.5: the loss grows 2.25× per step
    with pytest.warns(flows.DivergenceWarning, match=r"the loss rose from 0.65 to 1662.63 by step"):
        optimize(loss, jnp.ones(2), 60.0, optimizer=sgd, eta=2.5, ts=[25.0, 50.0])
    with pytest.raises(FloatingPointError, match=r"^the loss is -inf at the start, t=0, before"):
        optimize(
            lambda w: jnp.log(w[0] - 1.0), jnp.ones(2), 60.0, optimizer=sgd, eta=2.5, ts=[25.0]
        )
