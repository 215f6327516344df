"""The lazy run's results and summary: Theorem 2.4's bound judged where the solve resolves the
residual (`_results.bound_held`), the PL line of a run without a finished α (`_report._pl`)."""

import numpy as np
import pytest

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


def _run(alpha, weight, output, heldout):
    return {
        "alpha": alpha,
        "failed": False,
        "sup_weight_gap": weight,
        "sup_output_gap": output,
        "sup_heldout_output_gap": heldout,
        "sup_distance_from_init": 0.5 / alpha,
        "theorem_2_4_conditions_hold": True,
        "theorem_2_4_bound_held": True,
    }


def test_gaps_at_round_off_are_flagged_not_measured_and_no_theorem_is_said_to_hold():
    # `gradflows run lazy --alphas 1,10,1e300` measured: every gap exactly 0 at α = 1e300
    # (underflow of O(1/α²) and O(1/α)), with "Thm2.4 ok: yes", "bound held: yes"
    from experiments.lazy._plots import draw_gaps
    from experiments.lazy._results import RESOLUTION, _fits, mark_unresolved

    assert 1e-293 < RESOLUTION < 1e-291
    runs = [_run(1.0, 0.135, 0.114, 0.638), _run(10.0, 1.96e-3, 1.82e-3, 1.55e-2)]
    runs += [_run(100.0, 2.1e-5, 1.9e-5, 1.6e-4), _run(1e300, 0.0, 0.0, 0.0)]
    for r in runs:
        mark_unresolved(r)
    assert [("unresolved" in r) for r in runs] == [False, False, False, True]
    top = runs[-1]
    assert top["sup_weight_gap"] is None and top["theorem_2_4_conditions_hold"] is None
    assert top["theorem_2_4_bound_held"] is None and top["sup_distance_from_init"] == 5e-301
    assert top["unresolved"]["values"] == dict.fromkeys(
        ("sup_weight_gap", "sup_output_gap", "sup_heldout_output_gap"), 0.0
    )
    assert (
        "α = 1e+300: weight gap 0, output gap 0, held-out gap 0, below"
        in (top["unresolved"]["reason"])
    )
    fits = _fits(runs, heldout=True)  # the three resolved α only
    expected = np.polyfit(np.log([1.0, 10.0, 100.0]), np.log([0.135, 1.96e-3, 2.1e-5]), 1)[0]
    assert fits["weight_gap_slope"] == pytest.approx(expected, rel=1e-12)
    # a figure of only unresolved α says why it is empty
    res = {
        "runs": [top],
        "fits": {k + "_slope": None for k in ("weight_gap", "output_gap", "heldout_output_gap")},
        "theory": {"expected_slopes": None},
        "config": {"model": "m", "n_train": 12, "t1": 0.5, "data_description": "d"},
    }
    texts = [t.get_text() for t in draw_gaps(res).axes[0].texts]
    assert any("not drawn (gaps below float64's resolution" in t and "1e+300" in t for t in texts)


def test_an_automatic_horizon_is_said_with_its_reason_and_its_cost_when_long():
    # a 30-point CSV got t1 = 6.1e4 from λ_min = 1.1e-4 and ran >260 s without a word
    from types import SimpleNamespace

    import flows
    from experiments.lazy._pipeline import horizon, horizon_note

    s = {"t1": None, "loss_decades": 6.0, "solve": flows.SolveSettings(solver="exprk4")}
    constants = SimpleNamespace(lambda_min=1.13e-4, lambda_max=41.0)
    t1 = horizon(s, constants)
    assert t1 == pytest.approx(6.0 * np.log(10) / (2 * 1.13e-4), rel=1e-12)  # 6.11e4
    note = horizon_note(s, t1, constants)
    assert note.startswith("lazy: horizon t1 = 6.113e+04, chosen as D·ln(10)/(2·λ_min(Σ))")
    assert "λ_min = 0.000113 and D = --loss-decades = 6" in note
    assert "λ_max/λ_min = 3.63e+05" in note and "at least 7.16e+05 steps per α" in note
    quick = SimpleNamespace(lambda_min=2.8, lambda_max=218.0)
    note = horizon_note(s, horizon(s, quick), quick)
    assert "t1 = 2.467" in note and "long run" not in note
    assert horizon_note({**s, "t1": 0.5}, 0.5, quick) is None  # given: nothing to say
