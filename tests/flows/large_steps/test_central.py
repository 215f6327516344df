"""The central flow: gradient flow below 2/η, S held at 2/η after the located event, L
non-increasing, predicted loss ≥ L."""

import numpy as np
import pytest

import flows
from tests.flows.large_steps.nets import tanh_regression


@pytest.fixture(scope="module")
def problem():
    return tanh_regression(4, 12, 2, 40)


def test_central_flow_holds_the_edge_and_never_raises_the_loss(problem):
    loss, net = problem
    S0 = float(flows.sharpness(loss, net)[0])
    eta = 2 / (1.6 * S0)  # S rises from 3.38 past 2/eta = 5.41 at t = 21.6 (measured)
    ts = np.linspace(0, 28.0, 15)
    traj = flows.central_flow(loss, net, 28.0, eta=eta, ts=ts, rtol=1e-8, atol=1e-10)
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


def test_central_flow_refuses_a_bad_eta_and_an_implicit_solver(problem):
    loss, net = problem
    with pytest.raises(ValueError, match="eta"):
        flows.central_flow(loss, net, 1.0, eta=-1.0)
    with pytest.raises(ValueError, match="solver must be explicit"):
        flows.central_flow(loss, net, 1.0, eta=0.1, solver="kvaerno5")
