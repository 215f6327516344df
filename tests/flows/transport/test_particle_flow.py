"""The particle flow ẋ_i = −n ∇_{x_i} OT_{ε,f}(μ_x, ν): its exact solutions (the mean's e^{−t}
decay, one target point, straight lines to the optimal assignment as ε → 0) and the cost
decreasing (Terjék & González-Sánchez, AISTATS 2022, arXiv 2105.14337)."""

import numpy as np
import pytest
import scipy.optimize as so

from flows.transport import SinkhornNotConverged, particle_flow

TS = np.linspace(0.0, 2.0, 5)
TIGHT = dict(rtol=1e-10, atol=1e-12)


def _points(n, m, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 2)), 0.3 + 0.5 * rng.random((m, 2))


@pytest.mark.parametrize(("name", "eps"), [("kl", 0.05), ("chi2", 0.02), ("jeffreys", 0.1)])
def test_mean_decays_exponentially_and_cost_non_increasing(name, eps):
    x0, y = _points(8, 6)
    traj = particle_flow(x0, y, 2.0, eps=eps, divergence=name, ts=TS, **TIGHT)
    ybar = y.mean(0)
    expected = ybar + np.exp(-TS)[:, None] * (x0.mean(0) - ybar)
    np.testing.assert_allclose(traj.params.mean(1), expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(traj.observables["mean"], expected, rtol=0, atol=1e-9)
    assert np.all(np.diff(traj.loss) <= 1e-12)
    assert traj.loss[-1] < traj.loss[0]
    assert traj.stats["sinkhorn_solves"] > 0
    assert traj.stats["sinkhorn_iterations"] >= traj.stats["sinkhorn_max_iterations"] > 0


@pytest.mark.parametrize("name", ["kl", "triangular"])
def test_one_target_point_gives_exponential_contraction(name):
    x0, _ = _points(5, 1, seed=1)
    y = np.array([[0.4, 0.6]])
    traj = particle_flow(x0, y, 2.0, eps=0.1, divergence=name, ts=TS, **TIGHT)
    expected = y[None] + np.exp(-TS)[:, None, None] * (x0[None] - y[None])
    np.testing.assert_allclose(traj.params, expected, rtol=0, atol=1e-9)


def test_small_eps_paths_are_straight_lines_to_the_optimal_assignment():
    """χ² at ε = 1e-4: the plan is the assignment (a permutation, up to entries at the
    marginal tolerance) along the flow, so x_i(t) = y_σ(i) + e^{−t}(x_i(0) − y_σ(i)) with σ
    from linear_sum_assignment."""
    x0, y = _points(6, 6, seed=2)
    traj = particle_flow(x0, y, 1.0, eps=1e-4, divergence="chi2", ts=np.linspace(0, 1, 5), **TIGHT)
    rows, sigma = so.linear_sum_assignment(((x0[:, None] - y[None]) ** 2).sum(-1))
    target = y[sigma]
    expected = target[None] + np.exp(-traj.ts)[:, None, None] * (x0 - target)[None]
    np.testing.assert_allclose(traj.params, expected, rtol=0, atol=1e-9)


def test_bad_input_and_inner_non_convergence():
    x0, y = _points(4, 3)
    with pytest.raises(ValueError, match=r"x0 of shape \(4, 2\) and y of shape \(3, 3\)"):
        particle_flow(x0, np.zeros((3, 3)), 1.0, eps=0.1)
    with pytest.raises(ValueError, match="eps must be finite and > 0"):
        particle_flow(x0, y, 1.0, eps=0.0)
    with pytest.raises(ValueError, match="solver must be one of"):
        particle_flow(x0, y, 1.0, eps=0.1, solver="kvaerno5")
    with pytest.raises(ValueError, match="x0 holds float32"):
        particle_flow(x0.astype(np.float32), y, 1.0, eps=0.1)
    with pytest.raises(
        SinkhornNotConverged, match=r"divergence='js', eps=0.01, .* \(at flow time t="
    ) as info:
        particle_flow(x0, y, 2.0, eps=0.01, divergence="js", max_iters=2, ts=TS)
    # it advised eps_schedule, which particle_flow does not take
    assert "raise max_iters or use a larger eps (at" in str(info.value)
    assert "eps_schedule" not in str(info.value)
