"""The central flow at t = 0, where its events' conditions may already hold: above the edge
it refuses, on the edge it tracks only what X can hold, below it is the gradient flow until
the located event. Closed forms on L = ½(5 + w₂)w₁² + ½(w₂ − a)²: on w₁ = 0 the sharpness is
S = 5 + w₂ and the gradient flow is w₂(t) = a + (w₂(0) − a)e^{−t}."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flows.large_steps import central_flow

ETA = 1 / 3  # 2/η = 6: the edge is w₂ = 1
TS = np.linspace(0.0, 1.0, 6)


def _loss(w):
    # w[2] = a, held by stop_gradient (its Hessian row is zero): one compiled flow for all
    a = jax.lax.stop_gradient(w[2])
    return 0.5 * (5.0 + w[1]) * w[0] ** 2 + 0.5 * (w[1] - a) ** 2


def _flow(w2, a):
    return central_flow(_loss, jnp.asarray([0.0, w2, a]), 1.0, eta=ETA, ts=TS, rtol=1e-10,
                        atol=1e-12)  # fmt: skip


def test_a_start_above_the_edge_is_refused_naming_s0_and_two_over_eta():
    # before: S stayed at 6.5, 8 % above 2/η, with tracked = 1 and σ² = 0, no word
    with pytest.raises(ValueError, match=r"^params0: S\(0\) = 6.5 > 2/eta = 6 "):
        _flow(1.5, 2.0)


def test_a_start_just_below_the_edge_is_the_gradient_flow_until_the_event():
    traj = _flow(0.9, 2.0)  # S rises: w₂ = 2 − 1.1e^{−t} reaches 1 at t = ln 1.1
    ((t_edge, m),) = traj.stats["events"]
    assert m == 1 and abs(t_edge - np.log(1.1)) < 1e-8  # measured 1e-12
    S = traj.observables["sharpness"]
    np.testing.assert_allclose(S[TS > t_edge], 6.0, rtol=1e-8)
    assert list(traj.observables["tracked"]) == [0, 1, 1, 1, 1, 1]


def test_a_start_on_the_edge_where_the_gradient_flow_would_cross_it_is_held_there():
    traj = _flow(1.0, 2.0)  # σ² = 2 holds w still: w' = −∇L − ½σ²∇S = 0
    assert traj.stats["events"] == []
    assert np.all(traj.observables["tracked"] == 1)
    np.testing.assert_allclose(traj.observables["sharpness"], 6.0, rtol=1e-10)
    np.testing.assert_allclose(traj.observables["trace_sigma"], 2.0, rtol=1e-8)


def test_a_start_on_the_edge_where_the_gradient_flow_leaves_it_is_the_gradient_flow():
    traj = _flow(1.0, 0.0)  # S = 5 + e^{−t} falls: nothing to hold
    # before: tracked = 1 at every save (the leave condition held at t0, so never fired)
    assert traj.stats["events"] == [] and np.all(traj.observables["tracked"] == 0)
    np.testing.assert_allclose(traj.observables["sharpness"], 5.0 + np.exp(-TS), rtol=1e-8)
    np.testing.assert_allclose(traj.observables["trace_sigma"], 0.0, atol=0)


@pytest.mark.parametrize(
    "params0, says",
    [([1.0, 2.0], "params0 must be a pytree"), (jnp.ones(3, jnp.float32), "params0 holds float32")],
)
def test_bad_params0_is_refused_naming_params0(params0, says):
    # the start is checked before anything is compiled; every other refusal of the start
    # (S(0) above the edge) names params0 too
    with pytest.raises(ValueError, match=f"^{says}"):
        central_flow(lambda w: 0.5 * jnp.sum(w**2), params0, 1.0, eta=0.1)


def test_diffrax_calls_the_event_at_a_solves_start_with_the_t0_it_was_given():
    # `_CentralField.event` returns the host's value at a span's start where its `t` is the
    # `t0` diffrax passes (so that the solve program holds the event twice, not three
    # times); traced only. If diffrax stops passing the same object, the event computes it
    # there again (right, but a copy of Lanczos more to compile): this test says so.
    import diffrax as dfx
    import optimistix as optx

    starts = []

    def event(t, y, args, **kwargs):
        starts.append(t is kwargs.get("t0"))
        return y[0] - 0.5

    def solve(y0):
        root = optx.Bisection(rtol=1e-10, atol=1e-10, flip=False)
        return dfx.diffeqsolve(dfx.ODETerm(lambda t, y, args: -y), dfx.Tsit5(), 0.0, 1.0, 0.1,
                               y0, event=dfx.Event(event, root_finder=root, direction=True),
                               adjoint=dfx.ForwardMode(), throw=False).ys  # fmt: skip

    jax.eval_shape(solve, jnp.ones(1))
    # the start (once), each step's and the root find's (flip=False: not at the bracket's
    # ends); diffrax may trace a call more than once for its shapes
    assert starts.count(True) == 1 and starts.count(False) >= 2, starts


def test_the_event_at_a_spans_start_is_the_hosts_value_there_and_computed_elsewhere():
    from flows.large_steps._central import _CentralField
    from flows.large_steps._hessian import flat_loss

    w = jnp.asarray([0.0, 0.9, 2.0])  # S = 5 + w₂ = 5.9: the join value S·η/2 − 1 = −1/60
    _, w, spec, static = flat_loss(_loss, w)
    field = _CentralField(_loss, static, spec, jnp.asarray(ETA), 1, jnp.asarray(0), False)
    args, t0 = (jnp.asarray(0), jnp.zeros((2, 3)), jnp.asarray(-0.25)), jnp.asarray(0.3)
    assert field.event(t0, w, args, t0=t0) is args[2]
    # any other t (a step's end, the root find's): λ₁η/2 − 1 with m = 0 (leave is −inf)
    value = eqx.filter_jit(lambda t: field.event(t, w, args, t0=t0))(jnp.asarray(0.3))
    assert abs(float(value) + 1 / 60) < 1e-12  # measured 6e-17
