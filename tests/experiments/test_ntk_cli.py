"""`gradflows run ntk`: files, values, refusal of an existing folder, one-line errors."""

import json
import math

import numpy as np
import pytest

import flows
from experiments import _cli
from experiments.ntk import _compute


@pytest.fixture
def cli(monkeypatch):
    monkeypatch.setattr(_cli, "EXPERIMENTS", {"ntk": "experiments.ntk"})
    return lambda *argv: _cli.main(["run", "ntk", *argv])


SMALL = ["--widths", "4", "16", "--seeds", "3", "--depth", "2", "--n", "6", "--cond-depth", "4"]


def test_run_writes_config_results_arrays_and_figures(cli, tmp_path, capsys):
    out = tmp_path / "run"
    assert cli("--out", str(out), *SMALL, "--mixed", "0.3", "0.9") == 0
    for name in ("config.json", "results.json", "arrays.npz"):
        assert (out / name).stat().st_size > 0
    for name in ("error_vs_width", "condition_vs_depth"):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    line = capsys.readouterr().out.strip()
    assert line.startswith("ntk: slope") and str(out) in line
    config = json.loads((out / "config.json").read_text())
    assert config["activations"]["mixed"] == [0.3, 0.9] and "jax" in config["versions"]
    text = (out / "results.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    res = json.loads(text)
    assert res["condition_number"]["depths"] == [1, 2, 3, 4]
    # cond(K∞) at depth 2 for |s| on the same digits, recomputed here
    X = _compute.inputs("digits", 6, 0)
    lam = np.linalg.eigvalsh(flows.ntk_infinite(X, depth=2, a=0.0, b=1.0)[1])
    got = res["condition_number"]["digits"]["abs"]["cond"][1]
    assert got == pytest.approx(lam[-1] / lam[0], rel=1e-12)
    fit = res["slopes"]["gaussian"]["mixed"]["quadratic"]
    assert fit["per_seed_min"] <= fit["per_seed_mean"] <= fit["per_seed_max"]
    assert res["slopes"]["digits"]["relu"]["delta_phi"] == 0.5
    assert res["slopes"]["digits"]["mixed"]["delta_phi"] == pytest.approx(0.81 / 0.9)
    with np.load(out / "arrays.npz") as saved:
        errors = saved["errors__digits__relu__constant"]
    assert errors.shape == (2, 3) and np.all((errors > 0) & (errors < 2))
    mean = np.array(res["slopes"]["digits"]["relu"]["constant"]["mean_error"])
    np.testing.assert_allclose(mean, errors.mean(axis=1), rtol=1e-14)
    expected = math.log(mean[1] / mean[0]) / math.log(4)
    assert res["slopes"]["digits"]["relu"]["constant"]["slope_of_mean"] == pytest.approx(expected)


def test_existing_folder_is_refused(cli, tmp_path, capsys):
    out = tmp_path / "there"
    out.mkdir()
    (out / "keep.txt").write_text("old")
    assert cli("--out", str(out), *SMALL) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--out" in err and "exists" in err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--widths", "8"], "--widths"),
        (["--widths", "0", "8"], "--widths"),
        (["--widths", "20000", "40000"], "--widths"),  # too many parameters
        (["--seeds", "1"], "--seeds"),
        (["--depth", "0"], "--depth"),
        (["--n", "1"], "--n"),
        (["--cond-depth", "0"], "--cond-depth"),
        (["--mixed", "0", "0"], "--mixed"),
        (["--mixed", "nan", "1"], "--mixed"),
        (["--seeds", "x"], "--seeds"),
    ],
)
def test_bad_values_exit_2_with_one_line_naming_the_flag(cli, capsys, tmp_path, argv, flag):
    try:
        code = cli("--out", str(tmp_path / "bad"), *argv)
    except SystemExit as e:  # argparse's own errors
        code = e.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err
    assert not (tmp_path / "bad").exists()
