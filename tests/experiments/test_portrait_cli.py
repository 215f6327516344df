"""`gradflows run portrait`: the files it writes, and one-line errors with exit code 2."""

import json

import numpy as np
import pytest

from tests.helpers import cli as run


def _run(*argv):
    return run("run", "portrait", *argv)


@pytest.mark.slow
def test_run_writes_config_results_arrays_and_figures(tmp_path):
    out = tmp_path / "run"
    small = ["--grid", "11", "--field-grid", "9", "--alphas", "1", "10", "--gd-steps", "4"]
    assert _run("--out", str(out), "--w0", "0.37", "-1.21", "--target", "0.8", *small) == 0
    for name in ("seed", "flows", "conservation"):
        assert (out / f"{name}.npz").stat().st_size > 0
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    config = json.loads((out / "config.json").read_text())
    s = config["settings"]
    assert s["rtol"] == 1e-10 and s["solver"] == "tsit5" and "jax" in config["versions"]
    assert s["w0"] == [0.37, -1.21] and config["experiment"] == "portrait"
    results = json.loads((out / "results.json").read_text())
    lengths = np.array(results["flows"]["path_length_from_w0"])
    np.testing.assert_allclose(lengths[1] / lengths[0], 0.1, rtol=0.15)
    assert results["conservation"]["max_flow_drift_of_balancedness"] <= 1e-8
    assert results["conservation"]["gradient_descent_drift_of_balancedness"] > 1.0
    assert max(results["seed"]["output_gap_at_w0"]) < 1e-12
    with np.load(out / "flows.npz") as saved:
        assert saved["paths"].shape[:3] == (2, 2, 5)


def test_run_writes_svg_when_asked(tmp_path):
    out = tmp_path / "svg"
    assert _run("--out", str(out), "--format", "svg", "--figures", "seed", "--grid", "7") == 0
    text = (out / "seed.svg").read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and len(text) > 10_000
    assert not (out / "seed.png").exists() and not (out / "flows.npz").exists()


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--format", "gif"], "--format"),
        (["--alphas", "1", "-2"], "--alphas"),
        (["--grid", "2"], "--grid"),
        (["--eta", "nan"], "--eta"),
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
