"""The central flow of RMSProp (Cohen, Damian, Talwalkar, Kolter & Lee 2025, §5): the stable
flow before the edge, a closed form at the edge on a quadratic, first-order agreement with
an Euler scheme of the same equations on an MLP, the effective sharpness held at 2/η."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import models
from flows.large_steps import central_flow, preconditioned_sharpness
from flows.large_steps._central import _CentralField
from flows.large_steps._central_rmsprop import rmsprop_field
from flows.large_steps._hessian import flat_loss
from tests.flows.large_steps.nets import tanh_regression

LAM = np.array([1.0, 0.3])  # L = ½(λ1w1² + λ2w2²)
ETA, BETA2, EPS = 0.5, 0.9, 1e-3
C = (1 - BETA2) / (BETA2 * ETA)  # ν' = C(E‖g‖² − ν)
D = ETA * LAM[0] / 2  # P = √ν + ε at the edge: λ1/P = 2/η
NU_STAR = (D - EPS) ** 2


def quadratic(w):
    return 0.5 * jnp.sum(jnp.asarray(LAM) * w**2)


def stable(t, y):
    """Scalar RMSProp's stable flow on the quadratic: w' = −λw/(√ν + ε), ν' = C(‖λw‖² − ν)."""
    w, nu = y[:2], y[2]
    return np.concatenate([-LAM * w / (np.sqrt(nu) + EPS), [C * (np.sum((LAM * w) ** 2) - nu)]])


def edge(t, y):
    return LAM[0] / (np.sqrt(y[2]) + EPS) - 2 / ETA


edge.terminal, edge.direction = True, 1


@pytest.fixture(scope="module")
def quadratic_flow():
    w0 = np.array([1.0, 1.0])
    y0 = np.concatenate([w0, [np.sum((LAM * w0) ** 2)]])  # ν0 = ‖∇L(w0)‖², the default
    ref = solve_ivp(stable, (0, 50), y0, method="DOP853", rtol=1e-13, atol=1e-15, events=edge,
                    dense_output=True)  # fmt: skip
    (t0,) = ref.t_events[0]
    ts = np.concatenate([t0 * np.array([0, 0.3, 0.6, 0.9]), t0 + np.array([0.1, 0.4, 0.8, 1.5])])
    traj = central_flow(quadratic, jnp.asarray(w0), ts[-1], eta=ETA, optimizer="scalar_rmsprop",
                        beta2=BETA2, eps=EPS, ts=ts, rtol=1e-11, atol=1e-14)  # fmt: skip
    return traj, ref, t0


@pytest.mark.slow  # 34 s at load 8-13 on 2 cores, most of it compiling
def test_scalar_rmsprop_on_a_quadratic_is_the_stable_flow_then_the_closed_form_at_the_edge(
    quadratic_flow,
):
    # Closed form at the edge (derived in docs/eos.md): H is constant, so holding
    # λ1/(√ν + ε) = 2/η needs ν' = 0: ν = ν* = (ηλ1/2 − ε)², P = ηλ1/2, w_i(t) =
    # w_i(t0)·exp(−2λ_i(t − t0)/(ηλ1)), and E‖g‖² = ‖λw‖² + λ1²σ²/P = ν* fixes the
    # variance X = σ² (in the coordinates √P·w): X = P(ν* − ‖λw‖²)/λ1².
    traj, ref, t0 = quadratic_flow
    ((t_join, m),) = traj.stats["events"]
    print(f"join at t = {t_join:.12g}, scipy's edge at {t0:.12g}")
    assert m == 1 and t_join == pytest.approx(t0, rel=1e-8)
    w, nu = np.asarray(traj.params), traj.observables["nu"]
    before = traj.ts < t0
    y_ref = ref.sol(traj.ts[before]).T
    np.testing.assert_allclose(w[before], y_ref[:, :2], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(nu[before], y_ref[:, 2], rtol=1e-8)
    assert np.all(traj.observables["trace_sigma"][before] == 0)
    after = ~before
    dt = traj.ts[after] - t0
    w_edge = ref.y_events[0][0][:2] * np.exp(-2 * np.outer(dt, LAM) / (ETA * LAM[0]))
    X = D * (NU_STAR - np.sum((LAM * w_edge) ** 2, axis=1)) / LAM[0] ** 2
    err = np.abs(w[after] - w_edge).max(), np.abs(traj.observables["trace_sigma"][after] / X - 1)
    print(f"after the edge: |w − closed form| {err[0]:.2e}, X relative {err[1].max():.2e}")
    np.testing.assert_allclose(w[after], w_edge, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(nu[after], NU_STAR, rtol=1e-9)
    np.testing.assert_allclose(traj.observables["trace_sigma"][after], X, rtol=1e-7)
    np.testing.assert_allclose(traj.observables["tracked"], before * 0 + after * 1)
    np.testing.assert_allclose(ETA * traj.observables["sharpness"][after] / 2, 1, atol=1e-10)
    predicted = traj.loss[after] + X / ETA
    np.testing.assert_allclose(traj.observables["predicted_loss"][after], predicted, rtol=1e-7)


# A small tanh MLP (31 parameters) with per-coordinate RMSProp from ν0 = ∇L(w0)⊙², at the
# step η = 2/λ_max(P0⁻¹H0) that puts it on the edge at t = 0. Measured: it leaves at
# step 0.1, rejoins at 1.6, leaves at 2.5, rejoins at 5.6; a second eigenvalue reaches
# 2/η at step 26.
MLP_EPS = 1e-8


@pytest.fixture(scope="module")
def mlp():
    loss, net = tanh_regression(3, 6, 1, 20, seed=0, key=1)
    params, static = models.partition(net)
    g = jax.grad(lambda d: loss(eqx.combine(d, static)))(params)
    P0 = jax.tree.map(lambda a: jnp.abs(a) + MLP_EPS, g)
    eta = 2 / float(preconditioned_sharpness(loss, net, P0, tol=1e-13, max_iters=200)[0])
    ts = eta * np.array([0.0, 8.0, 12.0, 16.0])
    traj = central_flow(loss, net, ts[-1], eta=eta, optimizer="rmsprop", beta2=0.99,
                        eps=MLP_EPS, ts=ts, rtol=1e-11, atol=1e-13)  # fmt: skip
    return loss, net, eta, traj


@pytest.mark.slow  # 88 s at load 8-13 (the flow to step 16 and its compilation)
def test_rmsprop_effective_sharpness_is_held_at_two_over_eta_while_tracked(mlp):
    loss, net, eta, traj = mlp
    events = traj.stats["events"]
    print("events (t/η, m):", [(round(t / eta, 3), m) for t, m in events])
    assert events[-1][1] == 1 and events[-1][0] < traj.ts[1]  # tracked from before step 8 on
    tracked = traj.observables["tracked"] == 1
    assert tracked.all()  # on the edge at t = 0 (η chosen so), and after the rejoin
    held = np.abs(eta * traj.observables["sharpness"] / 2 - 1)
    # the same, independently: Lanczos on P^{-1/2}HP^{-1/2} at the saved w and ν
    _, spec, static = flat_loss(loss, net)[1:]
    again = []
    for w, nu in zip(_rows(traj), traj.observables["nu"]):
        params = eqx.combine(spec.unravel(jnp.asarray(w)), static)
        P = spec.unravel(jnp.sqrt(jnp.asarray(nu)) + MLP_EPS)
        S = preconditioned_sharpness(loss, params, P, tol=1e-13, max_iters=200)[0]
        again.append(abs(eta * float(S) / 2 - 1))
    print(f"|ηS_P/2 − 1|: flow's {held.max():.2e}, recomputed {max(again):.2e}")
    assert held.max() < 1e-8 and max(again) < 1e-8


def _rows(traj):
    """The saved trainable parameters as flat rows (T, p), in `FlatSpec` order."""
    leaves = jax.tree.leaves(models.partition(traj.params)[0])
    return np.concatenate([np.reshape(a, (len(traj.ts), -1)) for a in leaves], axis=1)


@pytest.mark.slow  # 6 s, with the flow of the test above (module fixture)
def test_rmsprop_central_flow_is_the_limit_of_euler_at_first_order(mlp):
    # Explicit Euler on the same field, one eigenvalue tracked, from the flow's state at
    # step 8 to step 16 (no event between): the error halves with the step.
    loss, net, eta, traj = mlp
    f, w, spec, static = flat_loss(loss, net)
    # no counting (count=False): this field is not a call's, it has no entry in the counts
    gd = _CentralField(loss, static, spec, jnp.asarray(eta), 1, jnp.asarray(-1), False, (), ())
    field, _ = rmsprop_field(gd, "rmsprop", 0.99, MLP_EPS, 1.0, w)
    rows = _rows(traj)
    y_a = jnp.concatenate([jnp.asarray(rows[1]), jnp.asarray(traj.observables["nu"][1])])
    y_b = np.concatenate([rows[3], traj.observables["nu"][3]])
    one = jnp.asarray(1)

    @jax.jit
    def euler(y, V, h):
        _, V, _ = field.eig(y, V)
        return y + h * field(0.0, y, (one, V)), V

    errors = []
    for substeps in (8, 16):
        h, y, V = eta / substeps, y_a, jnp.zeros((2, y_a.shape[0]))
        for _ in range(8 * substeps):
            y, V = euler(y, V, h)
        errors.append(float(np.linalg.norm(np.asarray(y) - y_b) / np.linalg.norm(y_b)))
    print(f"Euler at η/8, η/16: relative errors {errors}, ratio {errors[0] / errors[1]:.3f}")
    assert 1.7 < errors[0] / errors[1] < 2.3


@pytest.mark.parametrize(
    "kwargs, says",
    [
        ({"optimizer": "adam"}, "optimizer must be one of gd, rmsprop, scalar_rmsprop"),
        # 1 was said to lie outside [0, 1), and then 0 outside (0, 1): one interval for both
        ({"optimizer": "rmsprop", "beta2": 1.0}, r"^beta2 must lie in \(0, 1\) .*, got 1.0"),
        ({"optimizer": "rmsprop", "beta2": 0.0}, r"^beta2 must lie in \(0, 1\) .*, got 0.0"),
        ({"optimizer": "rmsprop", "beta2": float("nan")}, r"^beta2 must be finite, got nan"),
        ({"optimizer": "scalar_rmsprop", "eps": -1e-8}, "eps must be >= 0"),
        # was named "S(0)" and "gradient descent at this eta is unstable"
        (
            {"optimizer": "scalar_rmsprop", "nu0": 1e-4, "eps": 0.0},
            r"^params0: λ_max\(P⁻¹H\)\(0\) = 100 > 2/eta = .*, and RMSProp at this eta",
        ),
        ({"optimizer": "rmsprop", "nu0": -1.0}, "nu0 must be finite and >= 0"),
        ({"optimizer": "rmsprop", "nu0": 0.0, "eps": 0.0}, "> 0 where eps = 0"),
        ({"optimizer": "scalar_rmsprop", "nu0": [1.0, 2.0]}, "nu0 must be a number"),
        ({"optimizer": "rmsprop", "nu0": jnp.ones(3)}, "nu0 must be a number or a pytree"),
        ({"nu0": 1.0}, "nu0 is RMSProp's initial"),
        ({"optimizer": "rmsprop", "observables": {"nu": jnp.sum}}, "'nu' is recorded"),
        # RMSProp's β2 and ε with gradient descent were ignored, and nothing recorded them
        ({"beta2": 0.5}, "beta2=0.5: RMSProp's, not used by gradient descent's"),
        ({"eps": 1e-3, "beta2": 0.9}, "beta2=0.9, eps=0.001: RMSProp's"),
        # an entry of `predicted` was named observables['x']
        ({"predicted": {"x": 3}}, r"^predicted\['x'\] must be a function"),
        ({"predicted": {"x": lambda w: w @ jnp.ones(3)}}, r"^predicted\['x'\] fails on"),
    ],
)
def test_bad_rmsprop_input_is_refused_naming_the_argument(kwargs, says):
    with pytest.raises((ValueError, TypeError), match=says):
        central_flow(quadratic, jnp.ones(2), 1.0, eta=ETA, **kwargs)


def test_a_start_above_rmsprops_edge_raises_its_own_class():
    # the eos run tells it from bad input by its class (its text changed once: S(0))
    from flows.large_steps._central import StartAboveEdge

    with pytest.raises(StartAboveEdge, match=r"^params0: λ_max\(P⁻¹H\)\(0\) = 100 > 2/eta"):
        central_flow(
            quadratic, jnp.ones(2), 1.0, eta=ETA, optimizer="scalar_rmsprop", nu0=1e-4, eps=0.0
        )


def test_rmsprop_from_nu0_takes_its_first_step_with_nu1_the_central_flows_nu_at_t0():
    # ν_1 = β2ν_0 + (1 − β2)g0⊙², θ_1 = θ_0 − ηg0/(√ν_1 + ε): the flow's ν(0) is this ν_1
    from flows.large_steps import rmsprop

    w0, nu0 = jnp.array([0.7, -1.3]), jnp.array([0.2, 0.05])
    g = jax.grad(quadratic)(w0)
    opt = rmsprop(0.1, 0.9, 1e-3, nu0=nu0)
    updates, state = opt.update(g, opt.init(w0), w0)
    nu1 = 0.9 * nu0 + 0.1 * g**2
    np.testing.assert_allclose(state[0].nu, nu1, rtol=1e-15)
    np.testing.assert_allclose(updates, -0.1 * g / (jnp.sqrt(nu1) + 1e-3), rtol=1e-15)
