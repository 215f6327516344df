"""`gradflows run gan`: the files a small run writes, the closed forms it records, resume
from its parts, and one-line errors naming the flag (exit 2)."""

import json
import shutil

import numpy as np
import pytest

from experiments._sweep import task_key
from tests.helpers import cli as run
from tests.helpers import one_line

SMALL = ["--dirac", "gan", "--mixture", "gan", "--mixture-t1", "1", "--mixture-eta", "0.25",
         "--saves", "3", "--width", "3", "--samples", "16", "--t1", "6", "--workers", "0",
         "--no-progress"]  # fmt: skip


def _run(*argv):
    return run("run", "gan", *argv)


@pytest.mark.slow
def test_small_run_writes_results_parts_and_figures(tmp_path, capsys):
    out = tmp_path / "run"
    assert _run("--out", str(out), *SMALL) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["complete"] and results["sweep"]["tasks"] == 3
    assert results["dirac-gan"]["eigenvalue_error"] <= 1e-12
    assert results["dirac-gan"]["max_relative_drift_of_r2"] <= 1e-7  # Tsit5 at rtol 1e-10
    assert results["locus"]["max_error_against_closed_form"] <= 1e-12
    mixture = results["mixture-gan"]
    assert mixture["ts"] == [0.0, 0.5, 1.0] and mixture["flow"]["gap_to_flow"][0] == 0.0
    assert 0 < mixture["simgd"]["gap_to_flow"][-1] < 1.0
    for name in ("portraits", "eigenvalues", "r1_locus", "mixture_samples", "mixture_gaps"):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # an existing --out is refused, naming it
    capsys.readouterr()
    assert _run("--out", str(out), *SMALL) == 2
    assert "--out" in one_line(capsys.readouterr().err)
    # resume: kept parts are read back, not recomputed; only the missing locus is computed
    again = tmp_path / "again"
    again.mkdir()
    shutil.copy(out / "config.json", again)
    for task in ({"part": "dirac", "variant": "gan"}, {"part": "mixture", "variant": "gan"}):
        key = task_key(task)
        part = json.loads((out / f"part-{key}.json").read_text())
        if task["part"] == "dirac":
            part["record"]["r_t1"] = 123.0
        (again / f"part-{key}.json").write_text(json.dumps(part))
        shutil.copy(out / f"part-{key}.npz", again)
    assert _run("--resume", str(again), "--workers", "0", "--no-progress") == 0
    resumed = json.loads((again / "results.json").read_text())
    assert resumed["dirac-gan"]["r_t1"] == 123.0 and resumed["sweep"]["resumed"] == 2
    with np.load(out / "locus.npz") as a, np.load(again / "locus.npz") as b:
        np.testing.assert_array_equal(a["numeric"], b["numeric"])


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--dirac", "gan,bogus"], "--dirac: unknown bogus"),
        (["--mixture", "lsgan"], "--mixture: unknown lsgan"),
        (["--eta", "0"], "--eta must be finite and > 0"),
        (["--mixture-eta", "-0.1"], "--mixture-eta must be finite and > 0"),
        (["--gamma", "-1"], "--gamma must be finite and >= 0"),
        (["--t1", "inf"], "--t1 must be finite"),
        (["--width", "0"], "--width must lie in"),
        (["--rtol", "2"], "--rtol must lie in"),
    ],
)
def test_bad_options_get_one_line_naming_the_flag(tmp_path, capsys, argv, flag):
    assert _run("--out", str(tmp_path / "x"), *argv, "--workers", "0") == 2
    assert flag in one_line(capsys.readouterr().err)
    assert not (tmp_path / "x").exists()


def test_a_diverged_map_records_its_last_radius_without_overflow():
    # --gamma 1e3: SimGD stopped at entries near 2e156, np.linalg.norm squared them to inf,
    # and the run failed after its work with "refusing to write a non-finite number (inf)"
    from experiments.gan._tasks import _dirac_record

    orbit = np.array([[1.0, 1.0], [0.5, 0.5]])
    last = np.array([[0.0, 0.0], [2.1e153, 2.1e156]])
    d = {"orbit": orbit, "flow_steps": 10, "eigenvalues": np.array([-1.0, -2.0]),
         "simgd": last, "altgd": last[:0]}  # fmt: skip
    record = _dirac_record(d)
    assert record["simgd_r_last"] == float(np.hypot(2.1e153, 2.1e156))
    assert record["altgd_r_last"] is None and record["simgd_steps"] == 1
    from experiments.gan._plots import _bounded

    with np.errstate(over="raise"):  # the portraits' check warned "overflow encountered"
        assert not _bounded(last)
