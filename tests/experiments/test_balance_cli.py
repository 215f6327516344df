"""`gradflows run balance`: argument errors, and a small real run whose results are checked."""

import json
import os

import numpy as np
import pytest

from experiments.balance import plot
from tests.helpers import cli as run


def _run(*argv):
    return run("run", "balance", *argv)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--parts", "logistic,wings"], "--parts: unknown part(s) wings"),
        (["--classes", "3"], "--classes takes 2 values"),
        (["--classes", "3,3"], "--classes must be two different digits in 0..9, got 3,3"),
        (["--hidden", "16"], "--hidden needs at least two widths"),
        (["--rtols", "1e-8"], "--rtols takes 2 values"),
        (["--etas", "0.1,-1"], "--etas must be > 0, got -1"),
        (["--etas", "0.1"], "--etas needs at least two steps"),
        (["--t1", "nan"], "--t1 must be finite and > 0"),
        (["--n-train", "5000"], "--n-train (5000, >= 2) plus --n-test (0) must not exceed"),
    ],
)
def test_bad_arguments_give_one_line_naming_the_argument(capsys, tmp_path, argv, message):
    assert _run("--out", str(tmp_path / "run"), *argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


@pytest.mark.slow
def test_divergent_step_is_reported_as_one_line_naming_etas(capsys, tmp_path):
    argv = ["--parts", "gd", "--n-train", "60", "--hidden", "6,4", "--etas", "0.1,50"]
    assert _run("--out", str(tmp_path / "run"), *argv, "--gd-t1", "2000") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--etas: gradient descent became non-finite" in err, err


@pytest.mark.slow
def test_gradient_descent_part_on_digits_writes_results_and_figures(tmp_path):
    out = str(tmp_path / "run")
    etas = [0.04, 0.02, 0.01]
    code = _run(
        "--out",
        out,
        "--parts",
        "gd",
        "--n-train",
        "60",
        "--hidden",
        "6,4",
        "--etas",
        ",".join(map(str, etas)),
        "--gd-t1",
        "4",
        "--n-save",
        "20",
    )
    assert code == 0
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    data = results["data"]
    assert data["linearly_separable_through_origin"] is True
    assert data["max_margin"]["margin"] > 0
    assert results["settings"]["dims"] == [64, 6, 4, 1]
    assert results["versions"]["jax"] and results["versions"]["diffrax"]
    gd = results["gd"]
    assert [r["eta"] for r in gd["runs"]] == sorted(etas, reverse=True)
    assert [r["num_steps"] for r in gd["runs"]] == [100, 200, 400]
    # Drift at a fixed horizon is first order in η.
    assert abs(gd["drift_exponent_in_eta"] - 1.0) <= 0.05
    # The saved arrays reproduce the reported numbers.
    saved = np.load(os.path.join(out, gd["runs"][-1]["file"]))
    assert saved["ts"][-1] == 4.0
    assert np.isclose(saved["drift"][-1].sum(), gd["runs"][-1]["drift_at_t1"], rtol=1e-15)
    # Figures are drawn from the run folder alone, and can be redrawn.
    assert plot(out) == ["drift.png"]
    assert os.path.getsize(os.path.join(out, "drift.png")) > 10_000
