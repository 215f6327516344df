"""Tsit5's free stiffness estimate (flows._solver._indicator, Hairer & Wanner II, §IV.2): the
steps are Tsit5's own, bit for bit, and h·ρ finds the dominant eigenvalue where the step is
held by stability, but not where accuracy holds it."""

import diffrax as dfx
import jax.numpy as jnp
import numpy as np
import pytest

import flows  # noqa: F401  (float64)
from flows._solver._indicator import IndicatedTsit5

LAMBDAS = jnp.asarray(np.geomspace(1e-2, 1e3, 20))  # y' = −diag(λ)·y, λ_max = 1000


def _solve(solver, t1):
    term = dfx.ODETerm(lambda t, y, args: -LAMBDAS * y)
    return dfx.diffeqsolve(
        term, solver, 0.0, t1, None, jnp.linspace(1.0, 2.0, 20),
        stepsize_controller=dfx.PIDController(rtol=1e-8, atol=1e-10),
        saveat=dfx.SaveAt(t1=True, solver_state=True), max_steps=100_000,
    )  # fmt: skip


@pytest.mark.parametrize("t1", [1e-2, 10.0])
def test_the_steps_are_tsit5s_own(t1):
    ours, theirs = _solve(IndicatedTsit5(), t1), _solve(dfx.Tsit5(), t1)
    assert int(ours.stats["num_steps"]) == int(theirs.stats["num_steps"])
    np.testing.assert_array_equal(ours.ys, theirs.ys)


def test_rho_is_lambda_max_where_stability_holds_the_step_and_small_before():
    # To t = 100 Tsit5 is held at h·λ_max ≈ 3.5: ρ measured 999.9999 (relative error 1.3e-7,
    # bound 1e-3). At t = 0.1 only the modes λ ≤ ~100 are left and accuracy holds the
    # step: ρ measured 31, far below λ_max (bound 100).
    assert float(_solve(IndicatedTsit5(), 100.0).solver_state[1]) == pytest.approx(1e3, rel=1e-3)
    assert 0.0 < float(_solve(IndicatedTsit5(), 0.1).solver_state[1]) < 100.0
