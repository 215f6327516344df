"""The printed summary of a lazy run (experiments/lazy/_report.py): the verdicts by default,
the full per-α table in summary.txt and with --verbose. Built on a results.json of the default
run's numbers (digits, 7 α, α_min = 7.34e4), so no flow is solved here."""

import json

from experiments.lazy._report import SUMMARY_FILE, print_summary, verdicts


def _run(alpha, held=True, distance_ratio=0.064):
    bound = 13.85 / alpha
    return {
        "alpha": alpha, "failed": False, "sup_weight_gap": 0.08 / alpha**2,
        "sup_output_gap": 0.0105 / alpha**2, "sup_heldout_output_gap": 0.037 / alpha**2,
        "sup_distance_from_init": distance_ratio * bound, "theorem_2_2_bound": bound,
        "final_loss": 1.57e-8, "final_loss_linearized": 1.57e-8, "rate": 1.872,
        "pl_inf": 1.835, "pl_relative_gap": 0.019, "steps": 30, "wall_s": 4.2,
        "theorem_2_4_conditions_hold": alpha > 7.34e4, "theorem_2_4_bound_held": held,
    }  # fmt: skip


def _results(runs, slopes=(-1.9995, -1.9983, -1.9966, -0.9999)):
    fits = dict(zip(("weight_gap_slope", "output_gap_slope", "heldout_output_gap_slope",
                     "distance_slope"), slopes))  # fmt: skip
    fits.update(n_alphas_fitted=len(runs), fit_note=None, late_rate_median=1.872,
                late_rate_alphas=[r["alpha"] for r in runs[1:]], pl_relative_gap_slope=-0.019,
                pl_nonlinear_gap_slope=-2.002, pl_relative_gap_linearized=0.019)  # fmt: skip
    theory = {
        "expected_slopes": {"weight_gap": -2, "output_gap": -2, "heldout_output_gap": -2,
                            "distance": -1},
        "lambda_min": 1.8, "lambda_max": 508.8, "theorem_2_4_rate": 0.4501, "C0": 1.36e-4,
        "alpha_min": 7.34e4, "lip_jacobian": 24.58, "theory_applies": True,
    }  # fmt: skip
    return {"config": {"data": "digits"}, "runs": runs, "fits": fits, "theory": theory}


def _alphas():
    return [10.0**k for k in range(7)]


def test_the_verdicts_say_not_applicable_below_alpha_min_instead_of_no():
    text = verdicts(_results([_run(a) for a in _alphas()]))
    assert "Thm2.4" not in text and " no " not in text  # no table, no bare "no"
    assert "held at 2 of 2 α where it applies (α > 7.34e+04)" in text  # α = 1e5, 1e6
    assert "not applicable below α = 7.34e+04 (held there anyway at 5 of 5)" in text
    assert "held at 7 of 7 α (largest ratio to the bound 0.064)" in text  # Thm 2.2
    assert text.count("agrees") == 4 and "predicted -2" in text and "predicted -1" in text


def test_a_slope_off_its_theorem_and_a_broken_bound_are_said_so():
    runs = [_run(a) for a in _alphas()]
    runs[-1]["theorem_2_4_bound_held"] = False
    runs[0]["sup_distance_from_init"] = 1.5 * runs[0]["theorem_2_2_bound"]
    text = verdicts(_results(runs, slopes=(-1.7, -1.9983, -1.9966, -0.9999)))
    assert "-1.7000, predicted -2: DIFFERS by 0.3" in text and text.count("agrees") == 3
    assert "BROKEN at 1 of 2 α where it applies" in text
    assert "BROKEN at 6 of 7 α (largest ratio to the bound 1.5)" in text


def test_the_full_table_goes_to_the_run_folder_and_verbose_prints_it(tmp_path, capsys):
    res = _results([_run(a) for a in _alphas()])
    res["runs"].append({"alpha": 1e7, "failed": True, "reason": "max_steps reached"})
    (tmp_path / "results.json").write_text(json.dumps(res))
    print_summary(str(tmp_path), [str(tmp_path / "gaps.png")])
    quiet = capsys.readouterr().out
    table = (tmp_path / SUMMARY_FILE).read_text()
    assert table.splitlines()[0].split() == ["alpha", "sup|w-wbar|", "sup", "out", "gap", "sup",
        "heldout", "sup|w-w0|", "Thm2.2", "bnd", "R(t1)", "Rbar(t1)", "rate", "inf", "mu",
        "Thm2.4", "cond", "bound", "held", "steps", "kink", "evts", "time", "s"]  # fmt: skip
    assert len(table.splitlines()) > 15 and "PL: inf_t mu(t)" in table
    assert "Thm2.4 cond" not in quiet and "α = 1e+07 failed: max_steps reached" in quiet
    assert f"{SUMMARY_FILE} (the full per-α table; --verbose prints it), gaps.png" in quiet
    print_summary(str(tmp_path), [], verbose=True)
    loud = capsys.readouterr().out
    assert table in loud and "verdicts over" not in loud
