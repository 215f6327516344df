"""`gradflows run lazy` on tiny configurations: results.json, resume, reports, bad input.

The α-slopes themselves (Chizat, Oyallon & Bach 2019) are tested once, on `lazy_comparison`
(tests/flows/test_lazy.py); here the CLI's fits are checked to be the log-log slopes of its
own per-α numbers, and Theorem 2.2's bound √(T·R(αh(w0)))/α against the measured distance.
"""

import json
import os
import shutil

import numpy as np
import pytest

from experiments import _cli, table, teacher
from experiments._sweep import task_key
from tests.helpers import cli, one_line, write

main = _cli.main

BASE = ["--width", "8", "--n-train", "12", "--n-test", "6", "--t1", "0.5", "--n-times", "15"]
BASE += ["--no-progress", "--workers", "0"]  # on Dask workers: tests/experiments/test_lazy_sweep.py
# The shared run (`doubled`) takes the default solver, exprk4; the other runs check wiring with
# Tsit5, which compiles in 29 s of CPU against exprk4's 39 s on a tiny run (measured).
TINY = [*BASE, "--solver", "tsit5"]
# The runs on small CSV tables: 18 rows of 64 features, BASE's 12 training and 6 held-out
# rows, the default solver, as the shared run's digits: the same shapes, so they reuse its
# compilation in this process (a table of 3 features compiled anew: 9.0 s against 3.2 s).
CSV_FEATURES = 64
CSV_RUN = [*BASE, "--alphas", "10"]


def _csv(path, X, y) -> str:
    header = ",".join([*(f"x{i}" for i in range(X.shape[1])), "target"])
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header=header, comments="")
    return str(path)


SCHEMA_RUN = {
    "alpha",
    "sup_weight_gap",
    "sup_output_gap",
    "sup_heldout_output_gap",
    "sup_distance_from_init",
    "final_loss",
    "final_loss_linearized",
    "rate",
    "theorem_2_4_rate",
    "symmetrize",
}
SCHEMA_FITS = {
    "weight_gap_slope",
    "output_gap_slope",
    "heldout_output_gap_slope",
    "distance_slope",
    "n_alphas_fitted",
    "fit_note",
    "late_rate_median",
    "late_rate_alphas",
    "late_rate_note",
    "pl_relative_gap_slope",
    "pl_nonlinear_gap_slope",
    "pl_relative_gap_linearized",
    "pl_note",
}


def _results(folder):
    with open(os.path.join(folder, "results.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def doubled(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("lazy") / "doubled")
    code = main(["run", "lazy", *BASE, "--alphas", "10,100,1000", "--out", folder])
    assert code == 0
    return folder


@pytest.mark.slow
def test_results_json_has_the_stable_schema_and_plain_finite_numbers(doubled):
    res = _results(doubled)
    assert {"experiment", "config", "versions", "runs", "fits"} <= set(res)
    assert res["experiment"] == "lazy" and res["config"]["solver"] == "exprk4"  # the default
    assert {"jax", "diffrax", "equinox", "gradflows"} <= set(res["versions"])
    for key in ("solver", "rtol", "atol", "seed", "t1", "alphas"):
        assert key in res["config"]
    assert set(res["fits"]) == SCHEMA_FITS
    assert [r["alpha"] for r in res["runs"]] == [10.0, 100.0, 1000.0]
    for run in res["runs"]:
        assert SCHEMA_RUN <= set(run) and run["failed"] is False
        for key in SCHEMA_RUN - {"symmetrize"}:
            assert isinstance(run[key], float) and np.isfinite(run[key])
    with np.load(os.path.join(doubled, "trajectories.npz")) as npz:
        assert npz["weight_gap"].shape == (3, len(npz["ts"]))
    for name in ("gaps.png", "loss.png", "distance.png", "heldout.png"):
        assert os.path.getsize(os.path.join(doubled, name)) > 10_000


@pytest.mark.slow
def test_fits_are_the_loglog_slopes_of_the_runs_and_say_how_many_alphas(doubled):
    res = _results(doubled)
    fits, runs = res["fits"], res["runs"]
    alphas = np.log([r["alpha"] for r in runs])
    for key, column in (("weight_gap", "sup_weight_gap"), ("distance", "sup_distance_from_init")):
        slope = np.polyfit(alphas, np.log([r[column] for r in runs]), 1)[0]
        assert fits[key + "_slope"] == pytest.approx(slope, rel=1e-9)
    assert fits["n_alphas_fitted"] == 3 and fits["fit_note"] is None
    # the late rate is the median over α >= 10 only (docs/lazy.md)
    assert fits["late_rate_alphas"] == [10.0, 100.0, 1000.0]
    assert fits["late_rate_median"] == pytest.approx(np.median([r["rate"] for r in runs]))


@pytest.mark.slow
def test_measurements_stay_below_theorem_bounds_and_rates_match_theory(doubled):
    res = _results(doubled)
    th = res["theory"]
    assert th["theorem_2_4_rate"] == pytest.approx(th["lambda_min"] / 4, rel=1e-12)
    for run in res["runs"]:
        assert run["sup_distance_from_init"] <= run["theorem_2_2_bound"]
        # h(w0) = 0 and R(0) = ½‖y*‖²: the bound is √(t1·½‖y*‖²)/α
        expected = np.sqrt(0.5 * 0.5 * th["y_star_norm"] ** 2) / run["alpha"]
        assert run["theorem_2_2_bound"] == pytest.approx(expected, rel=1e-12)
        assert run["theorem_2_4_rate"] == th["theorem_2_4_rate"]
        assert run["theorem_2_4_bound_held"] is True  # residual below Thm 2.4's bound
    # the fitted rates of the two flows' residuals approach each other like the gaps, α⁻²
    diff = [abs(r["rate"] - r["rate_linearized"]) for r in res["runs"]]  # α = 10, 100, 1000
    assert diff[2] < 1e-3 * diff[0]
    assert res["runs"][2]["rate"] == pytest.approx(res["runs"][2]["rate_linearized"], rel=1e-4)


@pytest.mark.slow
def test_resume_recomputes_only_the_missing_alpha(doubled, tmp_path, capsys):
    folder = str(tmp_path / "resumed")
    shutil.copytree(doubled, folder)
    os.remove(os.path.join(folder, "results.json"))
    missing = task_key({"alpha": 1000.0})
    for ext in ("json", "npz"):
        os.remove(os.path.join(folder, f"part-{missing}.{ext}"))
    kept = os.path.join(folder, f"part-{task_key({'alpha': 10.0})}.json")
    before = open(kept).read()
    assert main(["run", "lazy", "--resume", folder, "--no-progress", "--workers", "0"]) == 0
    assert open(kept).read() == before  # not recomputed
    new, old = _results(folder)["runs"], _results(doubled)["runs"]
    assert [r["task"]["resumed"] for r in new] == [True, True, False]
    assert new[2]["sup_weight_gap"] == old[2]["sup_weight_gap"]  # the same bits
    capsys.readouterr()
    assert main(["run", "lazy", "--resume", folder, "--width", "9"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--width" in err


@pytest.mark.slow
def test_a_failed_alpha_is_recorded_with_its_reason_and_exit_code_1(tmp_path):
    folder = str(tmp_path / "failed")
    # exprk4 (the shared run's solver, not held by λ_max: an explicit solver whose stability
    # limit alone needs more than --max-steps is refused before it starts, exit 2,
    # test_bad_arguments_exit_2_with_one_line_naming_them) fails after 3 steps; Kvaerno5
    # failed the same way after compiling its own implicit solve (29.8 s against 0.7 s)
    argv = ["run", "lazy", *TINY, "--alphas", "10", "--solver", "exprk4", "--max-steps", "3"]
    argv += ["--out", folder]
    assert main(argv) == 1
    (run,) = _results(folder)["runs"]
    assert run["failed"] is True and "MaxStepsReached" in run["reason"]
    assert run["sup_weight_gap"] is None and _results(folder)["fits"]["weight_gap_slope"] is None
    assert os.path.exists(os.path.join(folder, f"part-{task_key({'alpha': 10.0})}.json"))


@pytest.mark.parametrize(
    "argv, named",
    [
        (["--data", "no-such-thing"], "no-such-thing"),
        (["--alphas", "0"], "--alphas"),
        (["--alphas", ","], "--alphas"),
        (["--alphas", "1", "-3"], "--alphas"),
        (["--n-alpha", "0"], "--n-alpha must lie in [1, 1000], got 0"),
        (["--alphas", "1,10", "--n-alpha", "5"], "--n-alpha 5 and --alphas both choose the α"),
        (["--width", "0"], "--width"),
        (["--classes", "3"], "--classes"),
        (["--width", "100000", "--depth", "2"], "--width 100000 --depth 2"),  # 2e10 parameters
        (["--target", "y"], "--target"),  # a file's column, meaningless for the digits
        (["--data", "teacher", "--task", "classification"], "--task"),
        # λ_max(Σ) ≈ 509 on the default digits: Tsit5 needs ≥ 1.45e4 steps to t = 100
        (["--t1", "100", "--max-steps", "1000", "--solver", "tsit5"], "--max-steps 1000"),
        # λ_min(Σ) = 1.8: e^(−λ_min·t1) is 0 in float64 past t1 = 745/1.8 = 414
        (["--t1", "1e6"], "--t1 1000000: λ·t1 = 1.8e+06 with λ = 1.8 "),
    ],
)
def test_bad_arguments_exit_2_with_one_line_naming_them(argv, named, tmp_path, capsys):
    assert main(["run", "lazy", *argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and named in err and "Traceback" not in err
    assert not os.path.exists(tmp_path / "x")  # no run folder for bad input


@pytest.mark.parametrize("solver", ["auto", "exprk4"])
def test_a_horizon_past_float64s_range_is_refused_before_any_folder(solver, tmp_path, capsys):
    # --solver auto/exprk4 (not held by λ_max, so no step count refuses them) used to start a
    # job to t1 = 1e300; e^(−λ_min·t1) is 0 in float64 once λ_min·t1 > 745
    folder = tmp_path / "x"
    argv = [*TINY, "--t1", "1e300", "--solver", solver, "--alphas", "10", "--out", folder]
    assert cli("run", "lazy", *argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("gradflows run lazy: error: --t1 1e+300: λ·t1 = ")
    lam = float(err.split(" with λ = ")[1].split()[0])  # λ_min(Σ) of the tiny problem
    largest = float(err.split("--t1 at most ")[1].split()[0])
    assert largest == pytest.approx(745 / lam, rel=2e-3)  # both printed to 3 digits
    assert not folder.exists()


def test_loss_decades_past_float64s_range_are_refused_at_once(tmp_path, capsys):
    assert cli("run", "lazy", "--loss-decades", "1000", "--out", tmp_path / "x") == 2
    err = capsys.readouterr().err.strip()
    assert err == "gradflows run lazy: error: --loss-decades must be at most 647 (a fall of " \
        "10^D past it is below the smallest float64), got 1000"  # fmt: skip


def test_the_default_alphas_are_decades_and_n_alpha_13_the_half_decades_bit_for_bit():
    import argparse

    from experiments.lazy._cli import add_arguments, settings

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    s = settings(parser.parse_args([]))
    assert s["alphas"] == [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6] and s["n_alpha"] == 7
    old = settings(parser.parse_args(["--n-alpha", "13"]))  # the default before 2026-12-03
    assert old["alphas"] == [float(10 ** (k / 2)) for k in range(13)]
    given = settings(parser.parse_args(["--alphas", "3,30"]))
    assert given["alphas"] == [3.0, 30.0] and given["n_alpha"] is None  # recorded as given


def test_an_empty_alpha_list_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "lazy", "--alphas"])
    assert e.value.code == 2
    assert "--alphas" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name, text, says",
    [
        ("no_target.csv", "a,b\n1,2\n3,4\n", "no target column"),
        ("nan.csv", "a,target\n1,0\nnan,1\n2,1\n", "NaN"),
        ("blank.csv", "a,target\n1,0\n,1\n2,1\n", "NaN"),
        ("one_class.csv", "a,target\n1,1\n2,1\n3,1\n", "single value"),
        ("broken.npz", "this is not a zip archive", "not a readable NPZ (not a zip archive"),
        ("empty.csv", "", "empty"),
        # numpy's genfromtxt said "Some errors were detected ! Line #2 (got 2 columns instead
        # of 3)", counting lines after the header; the file's own line number is 3
        (
            "ragged.csv",
            "a,b,target\n1,2,0\n3,4\n5,6,1\n",
            "line 3 (data row 2) has 2 fields, expected 3, the header's columns (a, b, target)",
        ),
        ("long_row.csv", "a,target\n1,0\n\n2,1\n3,1,7\n", "line 5 (data row 3) has 3 fields"),
    ],
)
def test_bad_files_exit_2_with_one_line_naming_the_file(name, text, says, tmp_path, capsys):
    path = write(tmp_path / name, text)
    assert main(["run", "lazy", "--data", path, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and name in err and says in err


@pytest.mark.parametrize("damage", ["truncated", "not_a_zip", "single_npy"])
def test_a_corrupt_npz_is_named_as_not_a_readable_npz(damage, tmp_path, capsys):
    # numpy.load tries a file that is not a zip archive as a pickle, and its error advised
    # allow_pickle=True; a truncated archive gave "BadZipFile: File is not a zip file"
    path = str(tmp_path / f"{damage}.npz")
    rng = np.random.default_rng(0)
    np.savez(path, X=rng.normal(size=(30, 3)), target=np.arange(30) % 2)
    data = open(path, "rb").read()
    if damage == "single_npy":
        np.save(path + ".npy", rng.normal(size=3))
        data = open(path + ".npy", "rb").read()
    else:
        data = data[: len(data) // 2] if damage == "truncated" else b"PK" + data[100:]
    with open(path, "wb") as f:
        f.write(data)
    assert main(["run", "lazy", "--data", path, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"--data {path!r}: not a readable NPZ" in err
    assert "pickle" not in err and not os.path.exists(tmp_path / "x")


def test_csv_targets_become_plus_minus_one_and_features_are_standardised(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(3.0, 2.0, size=(30, 3))
    y = np.where(X[:, 0] > 3.0, 7, 2)
    rows = "\n".join(f"{a},{t},{b},{c}" for (a, b, c), t in zip(X, y))
    path = write(tmp_path / "d.csv", "f0,label,f1,f2\n" + rows + "\n")
    Xtr, ytr, Xte, yte, task, notes = table(path, target="label", n_train=20, n_test=10)
    assert task == "classification" and "2 → −1, 7 → +1" in notes[0]
    assert set(np.unique(np.concatenate([ytr, yte]))) == {-1.0, 1.0}
    np.testing.assert_allclose(Xtr.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Xtr.std(axis=0), 1.0, rtol=1e-12)
    assert Xtr.shape == (20, 3) and Xte.shape == (10, 3)


def test_npz_with_x_and_target_arrays_loads(tmp_path):
    X = np.arange(40.0).reshape(20, 2) ** 1.5
    path = str(tmp_path / "d.npz")
    np.savez(path, X=X, target=np.linspace(-1.0, 2.0, 20))
    Xtr, ytr, _, _, task, _ = table(path, n_train=15, n_test=5)
    assert task == "regression"
    assert Xtr.shape == (15, 2) and len(np.unique(ytr)) == 15  # regression targets kept


def test_teacher_inputs_lie_on_the_sphere_and_targets_have_unit_rms():
    Xtr, ytr, Xte, yte = teacher(n_train=50, n_test=20, dim=5, neurons=3, seed=1)
    np.testing.assert_allclose(np.linalg.norm(np.vstack([Xtr, Xte]), axis=1), 1.0, rtol=1e-12)
    assert np.sqrt(np.mean(ytr**2)) == pytest.approx(1.0, rel=1e-12)
    assert Xte.shape == (20, 5) and yte.shape == (20,)


@pytest.mark.slow
def test_an_existing_run_folder_is_not_reused_with_other_settings(doubled, capsys):
    code = main(["run", "lazy", *TINY, "--alphas", "100", "--width", "4", "--out", doubled])
    err = one_line(capsys.readouterr().err)
    assert code == 2 and "--out" in err and "--resume" in err
    assert [r["alpha"] for r in _results(doubled)["runs"]] == [10.0, 100.0, 1000.0]


@pytest.mark.slow
def test_resume_refuses_changed_data(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(18, CSV_FEATURES))  # every row in the run (12 training, 6 held out)
    y = np.where(X[:, 0] > 0, 1, -1)
    path = _csv(tmp_path / "d.csv", X, y)
    folder = str(tmp_path / "run")
    assert main(["run", "lazy", *CSV_RUN, "--data", path, "--out", folder]) == 0
    X[0, 0] += 1.0
    _csv(path, X, y)
    capsys.readouterr()
    assert main(["run", "lazy", "--data", path, "--resume", folder, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "data differ" in err[0]


def _numbers(tree):
    """Every number in a JSON tree."""
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _numbers(v)]
    if isinstance(tree, list):
        return [x for v in tree for x in _numbers(v)]
    return [tree] if isinstance(tree, float) else []


@pytest.mark.slow
def test_a_relu_sweep_finishes_by_filippov_counts_kinks_and_writes_no_nan(tmp_path, capsys):
    out = tmp_path / "relu"
    argv = [*TINY, "--activation", "relu", "--alphas", "1,10,100"]
    assert cli("run", "lazy", *argv, "--out", out) == 0
    printed = capsys.readouterr().out
    with open(os.path.join(out, "results.json")) as f:
        text = f.read()
    assert "NaN" not in text and "Infinity" not in text
    res = json.loads(text)
    assert all(np.isfinite(_numbers(res)))
    th, fits, runs = res["theory"], res["fits"], res["runs"]
    assert th["theory_applies"] is False and th["expected_slopes"] is None
    assert th["theorem_2_4_rate"] is None and th["C0"] is None and th["alpha_min"] is None
    for name in ("C0", "alpha_min", "theorem_2_4_rate"):
        assert "not smooth" in th["unavailable"][name]
    assert "Thm 2.4 bound on ‖αh(w_α(t)) − y*‖ (all t): not applicable (relu is not smooth" in (
        printed
    )
    assert "no theorem predicts it" in printed and "Thm2.4 cond" not in printed  # no table
    with open(os.path.join(out, "summary.txt")) as f:  # the full table and lines
        summary = f.read()
    assert "Thm 2.4: not applicable" in summary and "PL: inf_t mu(t)" in summary
    # measured on this run: 22, 7, 3 kink events (α = 1, 10, 100)
    events = [r["events"] for r in runs]
    assert events[0] >= 3 and events == sorted(events, reverse=True)
    for r in runs:
        assert r["form"] == "Filippov + direct" and r["failed"] is False
        # one event may settle several surfaces: measured 22 events, 17 + 4 + 3 at α = 1
        assert 0 < r["events"] <= r["crossings"] + r["sliding_entries"] + r["sliding_exits"]
        assert r["theorem_2_4_conditions_hold"] is None and r["theorem_2_4_rate"] is None
        assert r["pl_inf"] >= 0.5 * th["lambda_min"]  # measured inf μ / λ_min ≥ 0.906
    with np.load(os.path.join(out, "trajectories.npz")) as npz:
        assert np.all(npz["weight_gap"][:, 0] == 0.0) and np.all(npz["output_gap"][:, 0] == 0.0)
    # the gaps fall with α even across kinks: measured slope −1.43 (weight), −0.37 (output);
    # no slope is predicted for a non-smooth h, so only the sign is checked (10× margin: −0.14)
    assert fits["weight_gap_slope"] < -0.14 and fits["n_alphas_fitted"] == 3
    assert fits["pl_relative_gap_slope"] is not None
    assert os.path.getsize(os.path.join(out, "pl.png")) > 10_000


@pytest.mark.parametrize(
    "argv, named",
    [(["--depth", "2"], "--depth"), (["--solver", "kvaerno5"], "--solver")],
)
def test_a_relu_net_filippov_cannot_integrate_is_a_usage_error(argv, named, tmp_path, capsys):
    assert main(["run", "lazy", "--activation", "relu", *argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and named in err and "filippov_flow" in err


@pytest.mark.slow
def test_singular_ntk_reports_alpha_min_unavailable_and_keeps_every_part(tmp_path, capsys):
    # every input twice: Σ is singular, C0 = 0, Theorem 2.4's alpha_min does not exist (of 9
    # pairs of equal rows, the 12 training rows hold 3 whole pairs at least)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(9, CSV_FEATURES))
    path = _csv(tmp_path / "twice.csv", np.vstack([X, X]), np.tile(rng.normal(size=9), 2))
    out = tmp_path / "run"
    code = cli("run", "lazy", "--data", path, *CSV_RUN, "--out", out)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    th = _results(out)["theory"]
    assert th["alpha_min"] is None and th["unavailable"]["alpha_min"]
    assert "not applicable, its threshold α_min is unavailable" in captured.out
    with open(os.path.join(out, "summary.txt")) as f:
        summary = f.read()
    assert "alpha_min unavailable" in summary or "C0 unavailable" in summary
    assert os.path.exists(os.path.join(out, f"part-{task_key({'alpha': 10.0})}.npz"))
    # μ/λ_min is undefined at λ_min = 0: no PL figure, the others are drawn
    assert not os.path.exists(os.path.join(out, "pl.png"))
    assert os.path.exists(os.path.join(out, "loss.png"))


@pytest.mark.filterwarnings("error")  # numpy's warning on an empty table would be an error
def test_a_header_only_csv_is_refused_in_one_line_without_a_warning(tmp_path, capsys):
    path = write(tmp_path / "header.csv", "a,b,target\n")
    assert main(["run", "lazy", "--data", path, "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err == (
        f"gradflows run lazy: error: --data {path!r}: no data rows, only the header row\n"
    )


@pytest.mark.slow
def test_verbose_prints_the_full_table_that_the_run_folder_keeps(doubled, tmp_path, capsys):
    # the shared run resumed with every part kept: the report is printed by the same code as
    # at the end of a fresh run (experiments/lazy/_pipeline.py), without solving again
    out = tmp_path / "run"
    shutil.copytree(doubled, out)
    os.remove(out / "results.json")
    os.remove(out / "summary.txt")
    capsys.readouterr()
    assert cli("run", "lazy", "--resume", out, "--no-progress", "--workers", "0", "--verbose") == 0
    printed = capsys.readouterr().out
    with open(os.path.join(out, "summary.txt")) as f:
        table = f.read()
    assert table.startswith("      alpha sup|w-wbar|") and table in printed
    assert "verdicts over" not in printed
