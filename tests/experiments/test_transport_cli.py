"""`gradflows run transport`: files and values of a tiny run, resume from parts, refusal of an
existing folder, one-line errors."""

import json
import shutil

import numpy as np
import pytest

from experiments._sweep import task_key
from experiments.transport._data import clouds, cost
from flows.transport import sinkhorn
from tests.helpers import cli, one_line

SMALL = ["--n", "12", "--eps", "1,0.1", "--plan-eps", "0.1", "--flow-n", "5", "--t1", "0.5"]
SMALL += ["--no-progress"]


def _run(*argv):
    return cli("run", "transport", *argv)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("transport") / "run"
    assert _run("--out", out, *SMALL, "--workers", "0") == 0
    return out


@pytest.mark.slow
def test_run_writes_results_figures_and_the_values_of_a_solve(finished):
    out = finished
    for name in ("iterations_vs_eps", "sparsity_vs_eps", "plans", "particle_flow"):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (out / "results.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    res = json.loads(text)
    assert res["complete"] is True and len(res["cells"]) == 8
    cell = res["cells"]["chi2"]["0.1"]
    x, y = clouds(12, 0)
    a = np.full(12, 1 / 12)
    expected = sinkhorn(a, a, cost(x, y), 0.1, "chi2", tol=1e-10, eps_schedule=[1.0])
    assert cell["converged"] and cell["iterations"] == int(expected.iterations)
    assert cell["dual"] == pytest.approx(float(expected.dual), abs=1e-12)
    assert abs(cell["gap"]) <= 1e-10 and cell["marginal_error"] <= 1e-10
    for flow in res["flows"].values():
        assert flow["mean_error"] < 1e-8  # the mean decays as e^-t
    with np.load(out / "arrays.npz") as saved:
        assert saved["plan__kl"].shape == (12, 12) and saved["positions__chi2"].shape == (7, 5, 2)


@pytest.mark.slow
def test_resume_computes_only_the_missing_part(finished, tmp_path):
    folder = tmp_path / "resumed"
    folder.mkdir()
    for path in [finished / "config.json", *finished.glob("part-*")]:
        shutil.copy(path, folder)
    missing = task_key({"measure": "cell", "divergence": "js", "eps": 1.0})
    (folder / f"part-{missing}.json").unlink()
    assert _run("--resume", folder, "--no-progress", "--workers", "0") == 0
    res = json.loads((folder / "results.json").read_text())
    assert res["sweep"]["resumed"] == res["sweep"]["tasks"] - 1
    ref = json.loads((finished / "results.json").read_text())
    assert res["cells"]["js"]["1"]["iterations"] == ref["cells"]["js"]["1"]["iterations"]


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
        (["--eps", "0,1"], "--eps: each ε must be in [1e-06, 100], got 0"),
        # was cells failing with "refusing to write a non-finite number (inf)"
        (["--eps", "1e-300,1", "--plan-eps", "1"], "--eps: each ε must be in [1e-06, 100]"),
        (["--plan-eps", "1e-300"], "--plan-eps must be in [1e-06, 100], got 1e-300"),
        (["--plan-eps", "0.5"], "--plan-eps 0.5 must be one of --eps"),
        (["--n", "1"], "--n must lie in [2, 5000], got 1"),
        (["--tol", "0"], "--tol must be in [1e-15, 0.01]"),
    ],
)
def test_bad_values_exit_2_with_one_line_naming_the_flag(tmp_path, capsys, argv, says):
    assert _run("--out", tmp_path / "x", *SMALL, *argv) == 2
    assert says in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("log_y", [True, False])
def test_a_grid_where_no_cell_converged_is_drawn(log_y):
    # --max-iters 1: every cell failed, and the log y axis of no data failed the run (exit
    # 1, "Data cannot be log-scaled because all values are <= 0") after all its work
    from experiments.transport._plots import _per_eps_figure

    cells = {f: {e: {"converged": False} for e in ("1", "0.1")} for f in ("kl", "chi2")}
    config = {"divergences": ["kl", "chi2"], "max_iters": 1}
    fig = _per_eps_figure({"cells": cells}, config, "iterations", "iterations", "t", log_y)
    fig.canvas.draw()
    assert [t.get_text() for t in fig.axes[0].texts] == [
        "no (f, ε) cell converged: no values to draw"
    ]
    assert fig.axes[0].get_yscale() == "linear"
    # no y values on an axis of no data (it ran from −0.04 to 0.05), and no claimed trend
    assert list(fig.axes[0].get_yticks()) == []
    assert fig._suptitle.get_text() == "iterations against ε: no (f, ε) cell converged"


@pytest.mark.parametrize("failed", [False, True])
def test_not_converged_legend_entry_only_where_a_cell_failed(failed):
    from experiments.transport._plots import _per_eps_figure

    cells = {f: {"1": {"converged": True, "iterations": 3}} for f in ("kl", "chi2")}
    cells["chi2"]["0.1"] = {"converged": not failed, "iterations": 7}
    cells["kl"]["0.1"] = {"converged": True, "iterations": 5}
    config = {"divergences": ["kl", "chi2"], "max_iters": 500}
    fig = _per_eps_figure({"cells": cells}, config, "iterations", "iterations", "t", True)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels[:2] == ["kl", "chi2"]
    assert any("not converged" in label for label in labels) is failed


@pytest.mark.parametrize(
    "grid, plan",
    [("1,0.1,0.01,0.001", 0.01), ("1,0.1", 0.1), ("0.003,0.0001", 0.003), ("0.1,0.001", 0.1)],
)
def test_plan_eps_not_given_is_the_grid_value_nearest_0_01(grid, plan):
    """`--eps 1,0.1` alone exited 2 with "--plan-eps 0.01 must be one of --eps", naming an
    option the user had not given."""
    import argparse

    from experiments.transport._cli import add_arguments, settings

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert settings(parser.parse_args(["--eps", grid]))["plan_eps"] == plan
    given = settings(parser.parse_args(["--eps", grid, "--plan-eps", grid.split(",")[0]]))
    assert given["plan_eps"] == float(grid.split(",")[0])


def test_the_per_eps_titles_claim_only_what_the_cells_show():
    # over --eps 1,0.5 every plan was dense under "χ² and triangular plans gain exact zeros
    # as ε falls; the others stay dense"
    from experiments.transport._plots import _iterations_title, _sparsity_title

    def cells(chi2_fractions, iterations=(3, 5)):
        cell = lambda n, z: {"converged": True, "iterations": n, "nonzero_fraction": z}  # noqa: E731
        return {"cells": {
            "kl": {"1": cell(iterations[0], 1.0), "0.5": cell(iterations[1], 1.0)},
            "chi2": {"1": cell(2, chi2_fractions[0]), "0.5": cell(3, chi2_fractions[1])},
        }}  # fmt: skip

    config = {"divergences": ["kl", "chi2"]}
    assert _sparsity_title(cells((1.0, 1.0)), config).startswith("Every plan is dense")
    title = _sparsity_title(cells((0.9, 0.6)), config)
    assert title == "chi2 plans gain exact zeros as ε falls; the others stay dense"
    assert "have exact zeros" in _sparsity_title(cells((0.6, 0.9)), config)
    assert _iterations_title(cells((1, 1)), config).startswith("Iterations grow as ε falls")
    title = _iterations_title(cells((1, 1), iterations=(5, 3)), config)
    assert title.startswith("Iterations to the tolerance against ε")
