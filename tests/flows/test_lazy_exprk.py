"""The lazy pair by exprk4 (ū in closed form, the gap by an exponential Runge–Kutta method):
it agrees with the joint Tsit5 solve, and an interrupted solve resumes from its checkpoint
with the same numbers."""

import numpy as np
import pytest

import flows
from tests.problems import lazy_tanh_pair

FIELDS = ("weight_gap", "output_gap", "heldout_output_gap", "distance_from_init", "residual")


def _problem():
    # The centred pair of tests/flows/test_lazy.py: its sweep and remainder-form test compile
    # the same Tsit5 programs (remainder form at α = 300, direct at α = 3).
    net, data, X_test = lazy_tanh_pair("centred")
    return net, data, X_test, flows.log_times(4.0, 40)


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
    # measured 1.2e-10 at α = 3 (Tsit5 407 steps at rtol 1e-12, exprk4 514 at 1e-10) and
    # 3.4e-9 at α = 300 (Tsit5 413, exprk4 153); tolerance 1e-6 relative to each series' max
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
    # measured: resumed at t = 0.0569 (the checkpoint's), agrees to 1.9e-9 with the whole
    # solve (the step size starts afresh at the checkpoint); tolerance 3e-8 relative to each
    # series' maximum
    assert _relative(resumed, whole) < 3e-8
