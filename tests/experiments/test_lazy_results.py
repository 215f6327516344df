"""The lazy run's results and summary: Theorem 2.4's bound judged where the solve resolves the
residual (`_results.bound_held`), the PL line of a run without a finished α (`_report._pl`)."""

import numpy as np

from experiments.lazy._report import _pl
from experiments.lazy._results import bound_held

TS = np.linspace(0.0, 260.0, 53)
R0 = 6.3  # ‖αh(w0) − y*‖ = ‖y*‖ for a doubled model
FLOOR = 1e3 * 1e-10 * R0  # _alpha.residual_floor at rtol 1e-10
BOUND = R0 * np.exp(-0.69 * TS)  # √κ‖αh(w0) − y*‖·exp(−mσ_min²t/4), λ_min = 2.78


def test_a_residual_at_the_solvers_floor_under_a_bound_that_decays_past_it_holds():
    # As `gradflows run lazy --t1 260 --width 64 --n-train 40` measured at α = 1: the residual
    # decays at λ_min, four times the bound's rate, down to 5e-11 where the solve stops
    # resolving it, while the bound falls to 1e-78. It said "bound held: no" for every α.
    residual = np.maximum(R0 * np.exp(-2.78 * TS), 5e-11)
    assert residual[-1] > BOUND[-1] * 1e60  # the old rule's comparison
    assert bound_held(residual, BOUND, FLOOR)


def test_a_residual_above_the_bound_where_both_are_resolved_breaks_it():
    residual = R0 * np.exp(-0.5 * TS)  # slower than the bound: above it from t > 0
    first = 1  # TS[1] = 5: residual 0.52 > bound 0.20, both far above FLOOR = 6.3e-7
    assert residual[first] > 2 * BOUND[first] and BOUND[first] > 1e5 * FLOOR
    assert not bound_held(residual, BOUND, FLOOR)
    assert bound_held(BOUND, BOUND, FLOOR)  # equal at every time: held (1e-9 slack)


def test_the_pl_line_of_a_run_without_a_finished_alpha_says_so():
    # every α failed (a model/target shape mismatch did it): the summary blamed round-off
    res = {"runs": [{"alpha": 10.0, "failed": True}]}
    assert _pl(res, {}, {"lambda_min": 1.5e-6}) == "PL: inf_t mu(t): none (no finished α)"
    res = {"runs": [{"alpha": 10.0, "failed": False, "pl_inf": None}]}
    assert _pl(res, {}, {"lambda_min": 1.5e-6}).endswith("(F_α at round-off)")
