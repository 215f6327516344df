"""`gradflows run ntk`: files, values, resume from parts, the same bits on a Dask LocalCluster,
refusal of an existing folder, one-line errors."""

import json
import math
import shutil

import numpy as np
import pytest

import flows
from experiments._sweep import task_key
from experiments.ntk import _compute
from tests.helpers import cli, one_line

SMALL = ["--widths", "4,16", "--seeds", "3", "--depth", "2", "--n", "6", "--cond-depth", "4"]
SMALL += ["--no-progress", "--mixed", "0.3", "0.9"]


def _run(*argv):
    return cli("run", "ntk", *argv)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("ntk") / "run"
    assert _run("--out", out, *SMALL, "--workers", "0") == 0
    return out


@pytest.mark.slow
def test_run_writes_config_results_arrays_and_figures(finished, capsys):
    out = finished
    for name in ("config.json", "results.json", "arrays.npz"):
        assert (out / name).stat().st_size > 0
    for name in ("error_vs_width", "condition_vs_depth"):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p.name for p in out.iterdir() if p.name.startswith(".tmp-")]
    config = json.loads((out / "config.json").read_text())
    assert config["experiment"] == "ntk" and config["widths"] == [4, 16]
    assert config["activations"]["mixed"] == [0.3, 0.9] and "jax" in config["versions"]
    text = (out / "results.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    res = json.loads(text)
    assert res["complete"] is True and res["config"] == config
    assert res["condition_number"]["depths"] == [1, 2, 3, 4]
    # cond(K∞) at depth 2 for |s| on the same digits, recomputed here
    X = _compute.inputs("digits", 6, 0)
    lam = np.linalg.eigvalsh(flows.ntk.ntk_infinite(X, depth=2, a=0.0, b=1.0)[1])
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


def _errors_task(data, act, scheme, m):
    return {"measure": "errors", "data": data, "activation": act, "scheme": scheme, "width": m}


@pytest.mark.slow
def test_resume_keeps_finished_parts_and_computes_only_the_missing(finished, tmp_path, capsys):
    folder = tmp_path / "resumed"
    folder.mkdir()
    for path in [finished / "config.json", *finished.glob("part-*")]:
        shutil.copy(path, folder)
    missing = task_key(_errors_task("gaussian", "abs", "quadratic", 16))
    for ext in ("json", "npz"):
        (folder / f"part-{missing}.{ext}").unlink()
    # a kept part is read back, not recomputed: mark them with errors 0.5 and 0.25 (slope -0.5)
    for m, value in ((4, 0.5), (16, 0.25)):
        kept = task_key(_errors_task("digits", "relu", "constant", m))
        np.savez(folder / f"part-{kept}.npz", errors=np.full(3, value))
    capsys.readouterr()
    assert _run("--resume", folder, "--no-progress", "--workers", "0") == 0
    assert str(folder) in capsys.readouterr().out
    res = json.loads((folder / "results.json").read_text())
    assert res["sweep"]["tasks"] == 30 and res["sweep"]["resumed"] == 29  # 2·3·2·2 + 2·3
    assert res["slopes"]["digits"]["relu"]["constant"]["slope_of_mean"] == pytest.approx(-0.5)
    name = "errors__gaussian__abs__quadratic"
    with np.load(finished / "arrays.npz") as a, np.load(folder / "arrays.npz") as b:
        np.testing.assert_array_equal(b[name], a[name])  # same keys, same networks
    assert _run("--resume", folder, "--depth", "4") == 2
    err = one_line(capsys.readouterr().err)
    assert "--depth 4 differs from the run's 2" in err


@pytest.mark.slow
def test_two_workers_give_the_same_bits_as_in_process(finished, tmp_path):
    out = tmp_path / "two"
    assert _run("--out", out, *SMALL, "--workers", "2") == 0
    with np.load(finished / "arrays.npz") as a, np.load(out / "arrays.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for name in a.files:
            np.testing.assert_array_equal(b[name], a[name], err_msg=name)
    ref, res = (json.loads((d / "results.json").read_text()) for d in (finished, out))
    assert res["slopes"] == ref["slopes"] and res["condition_number"] == ref["condition_number"]
    assert res["sweep"]["backend"].startswith("Dask LocalCluster, 2 worker")
    workers = {json.loads(p.read_text())["stats"]["worker"] for p in out.glob("part-*.json")}
    assert workers == {"0", "1"}  # both workers took tasks
    assert (out / "logs" / "cluster.log").exists()


def test_existing_folder_is_refused(tmp_path, capsys):
    out = tmp_path / "there"
    out.mkdir()
    (out / "keep.txt").write_text("old")
    assert _run("--out", out, *SMALL) == 2
    err = one_line(capsys.readouterr().err)
    assert "--out" in err and "exists" in err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--widths", "8"], "--widths needs at least two different widths"),
        (["--widths", "8,8"], "--widths: each value once, got 8,8"),
        (["--widths", "0", "8"], "--widths must lie in [1, 100000], got 0"),
        (["--widths", "-8,16"], "--widths must lie in [1, 100000], got -8"),
        (["--widths", "8,x"], "--widths: 'x' is not a whole number"),
        (["--widths", "20000", "40000"], "--widths: the largest network"),  # > 2.5e8 weights
        (["--seeds", "1"], "--seeds must lie in [2, 10000], got 1"),
        (["--depth", "0"], "--depth must lie in [1, 50], got 0"),
        (["--n", "1"], "--n must lie in [2, 300], got 1"),
        (["--cond-depth", "0"], "--cond-depth must lie in [1, 10000], got 0"),
        (["--mixed", "0", "0"], "--mixed: a = b = 0 is the zero activation"),
        (["--mixed", "nan,1"], "--mixed must be finite numbers, got nan"),
        (["--mixed", "1"], "--mixed takes 2 values"),
        (["--seed", "-1"], "--seed must lie in [0, "),
        (["--seeds", "x"], "argument --seeds: invalid int value"),
    ],
)
def test_bad_values_exit_2_with_one_line_naming_the_flag(tmp_path, capsys, argv, says):
    assert _run("--out", tmp_path / "bad", *argv) == 2
    assert says in one_line(capsys.readouterr().err)
    assert not (tmp_path / "bad").exists()


def test_negative_mixed_coefficients_are_values_not_flags(tmp_path, capsys):
    # `--mixed -0.3 0.9` and `--mixed -0.3,0.9` parse alike; a bad --n still stops the run
    for argv in (["--mixed", "-0.3", "0.9"], ["--mixed", "-0.3,0.9"]):
        assert _run("--out", tmp_path / "x", *argv, "--n", "1") == 2
        assert "--n must lie in" in one_line(capsys.readouterr().err)
