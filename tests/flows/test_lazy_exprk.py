"""The lazy pair by exprk4 (ū in closed form, the gap by an exponential Runge–Kutta method):
it agrees with the joint Tsit5 solve, and an interrupted solve resumes from its checkpoint
with the same numbers."""

import jax
import numpy as np
import pytest

import flows
import models

FIELDS = ("weight_gap", "output_gap", "heldout_output_gap", "distance_from_init", "residual")


def _problem():
    k = jax.random.split(jax.random.PRNGKey(7), 3)
    net = models.symmetrize(models.TwoLayerNet(3, 12, activation="tanh", key=k[0]), "doubled")
    X = jax.random.normal(k[1], (10, 3))
    Y = jax.random.normal(k[2], (10,))
    X_test = jax.random.normal(k[0], (4, 3))
    ts = flows.log_times(4.0, 40)
    return net, (X, Y), X_test, ts


def _solve(alpha, solver, rtol, **kw):
    net, data, X_test, ts = _problem()
    return flows.lazy.lazy_comparison(
        net, data, alpha, float(ts[-1]), heldout=X_test, ts=ts, solver=solver, rtol=rtol,
        atol=1e-14, **kw,
    )  # fmt: skip


def _relative(a, b):
    return max(
        float(np.max(np.abs(getattr(a, f) - getattr(b, f))) / np.max(np.abs(getattr(b, f))))
        for f in FIELDS
    )


@pytest.mark.parametrize("alpha", [3.0, 300.0])  # the direct and the remainder form
def test_exprk4_agrees_with_the_joint_tsit5_solve(alpha):
    ref = _solve(alpha, "tsit5", 1e-12)
    got = _solve(alpha, "exprk4", 1e-10)
    # measured 1.5e-11 at α = 3 (Tsit5 576 steps at rtol 1e-12, exprk4 969 at 1e-10) and
    # 9.6e-10 at α = 300 (Tsit5 412, exprk4 206); tolerance 1e-6 relative to each series' max
    assert _relative(got, ref) < 1e-6


class _Stop(Exception):
    pass


def test_an_interrupted_alpha_resumes_from_its_checkpoint_with_the_same_numbers(tmp_path):
    checkpoint = str(tmp_path / "alpha.checkpoint.npz")
    _, _, _, ts = _problem()
    stop_at = float(ts[len(ts) // 2])

    def interrupt(t):
        if t >= stop_at:
            raise _Stop

    with pytest.raises(_Stop):
        _solve(300.0, "exprk4", 1e-10, checkpoint=checkpoint, report=interrupt)
    reached = []
    resumed = _solve(300.0, "exprk4", 1e-10, checkpoint=checkpoint, report=reached.append)
    assert reached[0] >= stop_at  # it started from the checkpoint, not from t = 0
    whole = _solve(300.0, "exprk4", 1e-10)
    # measured: resumed at t = 0.0569 (the checkpoint's), agrees to 1.2e-10 with the whole
    # solve; tolerance 1e-8 relative to each series' maximum
    assert _relative(resumed, whole) < 1e-8
