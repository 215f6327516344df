"""`gradflows run portrait`: the files it writes (on Dask workers and in-process), resume
from the figures' parts, and one-line errors with exit code 2."""

import json
import shutil
import warnings

import numpy as np
import pytest

import flows
from experiments._sweep import task_key
from tests.helpers import cli as run
from tests.helpers import help_defaults, one_line


def _run(*argv):
    return run("run", "portrait", *argv)


@pytest.mark.slow
def test_run_writes_config_results_arrays_and_figures(scheduler, tmp_path):
    out = tmp_path / "run"
    small = ["--grid", "11", "--field-grid", "9", "--alphas", "1", "10", "--gd-steps", "4"]
    argv = ["--w0", "0.37", "-1.21", "--target", "0.8", *small, "--no-progress"]
    assert _run("--out", str(out), *argv, "--scheduler", scheduler) == 0  # the session's cluster
    for name in ("seed", "flows", "conservation"):
        assert (out / f"{name}.npz").stat().st_size > 0
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    config = json.loads((out / "config.json").read_text())
    s = config["settings"]
    assert s["rtol"] == 1e-10 and s["solver"] == "tsit5" and "jax" in config["versions"]
    assert s["w0"] == [0.37, -1.21] and config["experiment"] == "portrait"
    results = json.loads((out / "results.json").read_text())
    assert results["complete"] and results["sweep"]["tasks"] == 3
    assert results["sweep"]["backend"] == f"Dask scheduler {scheduler}"
    lengths = np.array(results["flows"]["path_length_from_w0"])
    np.testing.assert_allclose(lengths[1] / lengths[0], 0.1, rtol=0.15)
    assert results["conservation"]["max_flow_drift_of_balancedness"] <= 1e-8
    assert results["conservation"]["gradient_descent_drift_of_balancedness"] > 1.0
    assert max(results["seed"]["output_gap_at_w0"]) < 1e-12
    with np.load(out / "flows.npz") as saved:
        assert saved["paths"].shape[:3] == (2, 2, 5)


def test_run_writes_svg_when_asked(tmp_path):
    out = tmp_path / "svg"
    argv = ["--format", "svg", "--figures", "seed", "--grid", "7", "--workers", "0"]
    assert _run("--out", str(out), *argv) == 0
    text = (out / "seed.svg").read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and len(text) > 10_000
    assert not (out / "seed.png").exists() and not (out / "flows.npz").exists()


@pytest.mark.slow
def test_resume_keeps_finished_figures_and_computes_only_the_missing(tmp_path, capsys):
    out, again = tmp_path / "run", tmp_path / "resumed"
    argv = ["--figures", "seed,conservation", "--grid", "7", "--gd-steps", "4", "--workers", "0"]
    assert _run("--out", str(out), *argv, "--no-progress") == 0
    again.mkdir()
    shutil.copy(out / "config.json", again)
    seed = task_key({"figure": "seed"})
    part = json.loads((out / f"part-{seed}.json").read_text())
    part["record"]["output_gap_at_w0"] = [0.125, 0.25]  # a kept part is read back, not redone
    (again / f"part-{seed}.json").write_text(json.dumps(part))
    shutil.copy(out / f"part-{seed}.npz", again)
    assert _run("--resume", str(again), "--no-progress", "--workers", "0") == 0
    results = json.loads((again / "results.json").read_text())
    assert results["seed"]["output_gap_at_w0"] == [0.125, 0.25]
    assert (results["sweep"]["tasks"], results["sweep"]["resumed"]) == (2, 1)
    assert (
        results["conservation"] == json.loads((out / "results.json").read_text())["conservation"]
    )  # recomputed: the same numbers
    with np.load(out / "conservation.npz") as a, np.load(again / "conservation.npz") as b:
        for name in a.files:
            np.testing.assert_array_equal(b[name], a[name], err_msg=name)
    capsys.readouterr()
    blows = ["--figures", "conservation", "--eta", "5", "--gd-steps", "60", "--grid", "5"]
    assert _run(*blows, "--workers", "0", "--no-progress", "--out", str(tmp_path / "b")) == 2
    assert "--eta 5.0: " in one_line(capsys.readouterr().err)


def test_a_diverging_eta_is_one_line_without_the_divergence_warning(capsys, tmp_path):
    # --eta 1: the loss is 2.1e4 times |L(0)| above L(0) at step 3 and overflows at step 7,
    # inside the 100-step window of the divergence rule: one error naming both
    argv = ["--figures", "conservation", "--eta", "1", "--grid", "5", "--workers", "0"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _run(*argv, "--no-progress", "--out", str(tmp_path / "run")) == 2
    assert not [w for w in caught if issubclass(w.category, flows.DivergenceWarning)]
    assert one_line(capsys.readouterr().err).startswith(
        "gradflows run portrait: error: --eta 1.0: gradient descent became non-finite at step 7 "
        "(t=7): the loss is inf (it was 2.205 at step 0), after rising to 46967.4 at step 3 "
        "(2.13e+04 times |L(0)| above L(0)); reduce eta (got 1.0)"
    )


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--format", "gif"], "--format"),
        (["--alphas", "1", "-2"], "--alphas"),
        (["--grid", "2"], "--grid"),
        (["--eta", "nan"], "--eta"),
        # each of these ran all three figures before failing (minutes for --t1), and --x and
        # --target were blamed on --eta 0.35
        (["--x", "1e300"], "--x must be at most 1000 in size, got 1e+300"),
        (["--target", "-1e300"], "--target must be at most 1000 in size, got -1e+300"),
        (["--w0", "1e300,1"], "--w0 must be at most 1000 in size, got 1e+300,1"),
        (["--alphas", "1e300"], "--alphas must lie in [0.0001, 10000], got 1e+300"),
        (["--scales", "1e-9"], "--scales must lie in [0.0001, 10000], got 1e-09"),
        (["--t1", "1e300"], "--t1 must be at most 10000 (flow time), got 1e+300"),
        (
            ["--radius", "1e-9", "--w0", "100,1"],
            "--radius 1e-09: the window w0 ± ρ/α is 1e-10 "
            "wide at α = 10, under 1e-06·max(1, |w0|): raise --radius",
        ),
    ],
)
def test_bad_argument_exits_2_with_one_line(capsys, tmp_path, argv, words):
    try:
        code = _run("--out", str(tmp_path / "bad"), *argv)
    except SystemExit as e:  # argparse's own errors
        code = e.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err
    assert not (tmp_path / "bad").exists()


def test_help_states_the_default_of_every_option_with_one():
    import experiments.portraits as portraits

    helps = help_defaults(portraits)
    assert [name for name, text in helps.items() if "default" not in text] == []
    assert helps["--x"] == "the input x (default: 1)"
    assert helps["--eta"] == "gradient-descent step η (default: 0.35)"
    assert helps["--alphas"] == "α of the flow figure (default: 0.1,1,10)"
