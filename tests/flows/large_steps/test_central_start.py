"""The central flow at t = 0, where its events' conditions may already hold: above the edge
it refuses, on the edge it tracks only what X can hold, below it is the gradient flow until
the located event. Closed forms on L = ½(5 + w₂)w₁² + ½(w₂ − a)²: on w₁ = 0 the sharpness is
S = 5 + w₂ and the gradient flow is w₂(t) = a + (w₂(0) − a)e^{−t}."""

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
