"""The central flow: gradient flow below 2/η, S held at 2/η after the located event, L
non-increasing, predicted loss ≥ L."""

import jax
import numpy as np
import pytest

import flows
from tests.flows.large_steps.nets import tanh_regression


@pytest.fixture(scope="module")
def problem():
    return tanh_regression(4, 12, 2, 40)


@pytest.fixture(scope="module")
def edge(problem):
    """`(eta, ts, trajectory)`: the central flow by Tsit5 at rtol 1e-8 across the edge."""
    loss, net = problem
    S0 = float(flows.sharpness(loss, net)[0])
    eta = 2 / (1.6 * S0)  # S rises from 3.38 past 2/eta = 5.41 at t = 21.6 (measured)
    ts = np.linspace(0, 28.0, 15)
    return eta, ts, flows.central_flow(loss, net, 28.0, eta=eta, ts=ts, rtol=1e-8, atol=1e-10)


def test_central_flow_holds_the_edge_and_never_raises_the_loss(problem, edge):
    loss, net = problem
    eta, ts, traj = edge
    gf = flows.gradient_flow(loss, net, 28.0, ts=ts, rtol=1e-8, atol=1e-10)
    t_edge = traj.stats["events"][0][0]
    before, after = ts < t_edge, ts > t_edge
    S = traj.observables["sharpness"]
    assert before.any() and after.any() and traj.stats["events"][0][1] == 1  # one tracked
    # below the edge: the gradient flow (measured 1e-9)
    np.testing.assert_allclose(traj.loss[before], gf.loss[before], rtol=1e-6)
    # on the edge: S = 2/eta (measured 2e-9 relative); the loss never rises
    assert np.max(np.abs(S[after] * eta / 2 - 1)) < 1e-3
    assert np.all(np.diff(traj.loss) <= 1e-12)
    assert np.all(traj.observables["predicted_loss"] >= traj.loss)


@pytest.mark.slow  # 19 s at load 6: the compilation of RKC's solve program
def test_central_flow_by_rkc_matches_tsit5(problem, edge):
    """RKC (Runge–Kutta–Chebyshev, order 2) at rtol 1e-7 against Tsit5 at 1e-8: measured
    loss within 1.3e-6 relative, parameters 2.5e-6, the event 6.7e-5 earlier (t = 21.62616
    against 21.62623), S held to 1.6e-7 past it (Tsit5 2e-9); 633 steps against 147 (this
    net is not stiff: 2/η = 5.4)."""
    loss, net = problem
    eta, ts, ref = edge
    traj = flows.central_flow(loss, net, 28.0, eta=eta, ts=ts, rtol=1e-7, atol=1e-9, solver="rkc")
    (t_edge, m), (t_ref, _) = traj.stats["events"][0], ref.stats["events"][0]
    assert len(traj.stats["events"]) == 1 and m == 1 and abs(t_edge - t_ref) < 1e-3
    np.testing.assert_allclose(traj.loss, ref.loss, rtol=1.3e-5)
    for a, b in zip(jax.tree.leaves(traj.params), jax.tree.leaves(ref.params)):
        np.testing.assert_allclose(a, b, rtol=0, atol=2.5e-5)
    after = ts > t_edge
    assert np.max(np.abs(traj.observables["sharpness"][after] * eta / 2 - 1)) < 1.6e-6
    assert np.all(np.diff(traj.loss) <= 1e-12) and traj.config["solver"] == "rkc"


def test_central_flow_refuses_a_bad_eta_and_an_implicit_solver(problem):
    loss, net = problem
    with pytest.raises(ValueError, match="eta"):
        flows.central_flow(loss, net, 1.0, eta=-1.0)
    with pytest.raises(ValueError, match="solver must be explicit"):
        flows.central_flow(loss, net, 1.0, eta=0.1, solver="kvaerno5")


def test_the_event_bisection_stops_on_its_bracket_where_the_event_function_jumps():
    """The event at t = 114.013 of a digits run (classes 0–2, η = 0.5, k = 3) ran
    optimistix's Bisection out of its 256 steps: it also waits for |f| < atol, which a jump
    at the root never gives. The central flow's stops once the bracket is within tolerance."""
    import jax.numpy as jnp
    import optimistix as optx

    from flows.large_steps._central import _ROOT

    root = 114.0123456789

    def jump(t, _):
        return jnp.where(t < root, -1.0, 1.0) * 100.0

    options = {"lower": 114.0, "upper": 114.02}
    stock = optx.root_find(jump, optx.Bisection(rtol=1e-13, atol=1e-13), jnp.asarray(114.02),
                           options=options, throw=False)  # fmt: skip
    assert stock.result == optx.RESULTS.nonlinear_max_steps_reached  # the failure, as it was
    ours = optx.root_find(jump, _ROOT, jnp.asarray(114.02), options=options, throw=False)
    assert ours.result == optx.RESULTS.successful
    # the bracket's tolerance is 1e-13·(1 + |t|) ≈ 1.1e-11; measured 4e-12
    assert abs(float(ours.value) - root) < 1.2e-11
