"""`gradflows run balance`: argument errors, and small real runs whose results are checked."""

import json
import os

import numpy as np
import pytest

from experiments import _plotting as P
from experiments import _sweep_progress
from experiments._sweep import task_key
from experiments.balance import _conservation_plots, plot
from experiments.balance._plots import DRIFT_LABEL
from tests.helpers import cli as run
from tests.helpers import help_defaults

SMALL = ["--n-train", "60", "--hidden", "6,4", "--workers", "0", "--no-progress"]


def _run(*argv):
    return run("run", "balance", *argv)


def _results(folder):
    with open(os.path.join(folder, "results.json")) as f:
        return json.load(f)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--parts", "logistic,wings"], "--parts: unknown part(s) wings"),
        (["--classes", "3"], "--classes takes 2 values"),
        (["--classes", "3,3"], "--classes must be two different digits in 0..9, got 3,3"),
        (["--hidden", "16"], "--hidden needs at least two widths"),
        # aborted inside XLA (rc 134, `buffer_.IsConcrete()`) allocating a 1e10-weight layer
        (
            ["--hidden", "100000,100000"],
            "--hidden 100000,100000: the network would have 1e+10 parameters, over the "
            "limit of 1e+07: widths at most 3129 each at 2 hidden layers",
        ),
        (["--rtols", "1e-8"], "--rtols takes 2 values"),
        (["--etas", "0.1,-1"], "--etas must be > 0, got -1"),
        (["--etas", "0.1"], "--etas needs at least two steps"),
        (["--t1", "nan"], "--t1 must be finite and > 0"),
        (["--n-train", "5000"], "--n-train (5000, >= 2) plus --n-test (0) must not exceed"),
        (["--solver", "gauss5"], "--solver must be one of ("),
        (["--drift-solvers", "tsit5,rk4"], "--drift-solvers must be one of ("),
        (["--drift-solvers", "gauss4,gauss4"], "--drift-solvers: each solver once"),
        (["--drift-rtols", "1e-15"], "--drift-rtols must lie in [1e-14, 1)"),
        (["--activations", "relu,tanh"], "--activations: each of relu, leaky_relu, abs"),
        (["--chatter-max-steps", "0"], "--chatter-max-steps must be >= 1"),
        (["--workers", "-1"], "--workers: must be an integer >= 0"),
        # ran every --etas task into an int64 overflow, printing a 301-digit step count
        (
            ["--gd-t1", "1e300"],
            "--gd-t1 1e+300 is 4e+301 steps of the smallest --etas (0.025), over 1e+08",
        ),
    ],
)
def test_bad_arguments_give_one_line_naming_the_argument(capsys, tmp_path, argv, message):
    assert _run("--out", str(tmp_path / "run"), *argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not os.path.exists(tmp_path / "run")


@pytest.mark.parametrize("typed", ["-5", "0", "-0.25", "-1e-20"])
def test_a_refused_number_is_echoed_as_typed(capsys, tmp_path, typed):
    assert _run("--out", str(tmp_path / "run"), "--t1", typed) == 2
    assert capsys.readouterr().err == (
        f"gradflows run balance: error: --t1 must be finite and > 0, got {typed}\n"
    )


def test_an_unknown_solver_lists_the_gauss_legendre_names(capsys, tmp_path):
    assert _run("--out", str(tmp_path / "run"), "--solver", "gauss") == 2
    err = capsys.readouterr().err
    for name in ("tsit5", "kvaerno5", "implicit_midpoint", "gauss4", "gauss6"):
        assert f"'{name}'" in err, err


@pytest.mark.slow
def test_divergent_step_is_reported_as_one_line_naming_etas(capsys, tmp_path, monkeypatch):
    # no heartbeat: at high load the run lasted past its first 10 s and the heartbeat's line
    # made a second one on stderr (the heartbeat: tests/experiments/test_sweep_progress.py)
    monkeypatch.setattr(_sweep_progress, "HEARTBEAT_S", float("inf"))
    argv = ["--parts", "gd", *SMALL, "--hidden", "6,4", "--etas", "0.1,50"]
    assert _run("--out", str(tmp_path / "run"), *argv, "--gd-t1", "2000") == 2
    err = capsys.readouterr().err
    # the loss is 8.5e5 times |L(0)| above L(0) at step 2 and NaN at step 7, inside the
    # 100-step window of the divergence rule: one error naming both
    assert err.count("\n") == 1 and "--etas: gradient descent became non-finite" in err, err
    assert "at step 7 (t=350)" in err and "after rising to 530707 at step 2" in err, err
    assert err.rstrip().endswith("reduce eta (got 50.0)"), err


@pytest.mark.slow
def test_gradient_descent_part_on_digits_writes_results_and_figures(tmp_path):
    out = str(tmp_path / "run")
    etas = [0.04, 0.02, 0.01]
    argv = ["--parts", "gd", *SMALL, "--etas", ",".join(map(str, etas)), "--gd-t1", "4"]
    assert _run("--out", out, *argv, "--n-save", "20") == 0
    results = _results(out)
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
    # One sweep task per η, its arrays in its own part; they reproduce the reported numbers.
    last = gd["runs"][-1]
    assert last["file"] == f"part-{task_key({'part': 'gd', 'eta': 0.01})}.npz"
    saved = np.load(os.path.join(out, last["file"]))
    assert saved["ts"][-1] == 4.0
    assert np.isclose(saved["drift"][-1].sum(), last["drift_at_t1"], rtol=1e-15)
    assert results["sweep"]["backend"] == "in-process (--workers 0)"
    assert results["sweep"]["tasks"] == 3 and results["complete"] is True
    # Figures are drawn from the run folder alone, and can be redrawn.
    assert plot(out) == ["drift.png"]
    assert os.path.getsize(os.path.join(out, "drift.png")) > 10_000


@pytest.mark.slow
def test_gauss_legendre_keeps_balancedness_at_round_off_and_resume_redoes_only_missing(tmp_path):
    out = str(tmp_path / "run")
    argv = ["--parts", "conservation", *SMALL, "--t1", "1e3", "--n-save", "20"]
    argv += ["--drift-solvers", "tsit5,gauss4", "--drift-rtols", "1e-3"]
    assert _run("--out", out, *argv) == 0
    runs = {r["solver"]: r for r in _results(out)["conservation"]["runs"]}
    # Gauss–Legendre conserves the quadratic invariants C_k to round-off at any rtol
    # (measured 3.0e-16 here, Newton residual 3.2e-17), Tsit5 only to about rtol (measured
    # 1.2e-4). The Gauss drift is round-off added per step: even one ε in each of its 41
    # steps would stay below 41·ε = 9e-15.
    assert runs["gauss4"]["drift_relative_max"] <= 1e-14
    assert runs["tsit5"]["drift_relative_max"] >= 1e-6
    assert runs["gauss4"]["newton_residual"] <= 1e-13  # the solver's Newton tolerance
    assert runs["tsit5"]["newton_residual"] is None
    saved = np.load(os.path.join(out, runs["gauss4"]["file"]))
    assert saved["drift_relative"].max() == runs["gauss4"]["drift_relative_max"]
    assert "conservation.png" in os.listdir(out)
    fig = _conservation_plots.conservation_figure(out, _results(out)["conservation"], DRIFT_LABEL)
    assert P.figure_problems(fig) == []
    (ax,) = fig.axes  # the plotted quantity: max over k of the relative drift, per save time
    drift = saved["drift_relative"]
    shown = drift[(saved["ts"] > 0) & (drift > 0)]  # log axes
    np.testing.assert_array_equal(ax.get_lines()[1].get_ydata(), shown)
    # An interrupted run keeps its finished tasks: remove one part, resume, and only that
    # task is computed again (with the same numbers); the other is read back as it was.
    gauss = task_key({"part": "conservation", "solver": "gauss4", "rtol": 1e-3})
    tsit5 = task_key({"part": "conservation", "solver": "tsit5", "rtol": 1e-3})
    with open(os.path.join(out, f"part-{gauss}.json")) as f:
        kept = f.read()
    os.remove(os.path.join(out, f"part-{tsit5}.json"))
    assert _run("--resume", out, "--workers", "0", "--no-progress") == 0
    again = {r["solver"]: r for r in _results(out)["conservation"]["runs"]}
    assert again["gauss4"]["task"]["resumed"] is True
    assert again["tsit5"]["task"]["resumed"] is False
    assert again["tsit5"]["drift_relative_max"] == runs["tsit5"]["drift_relative_max"]
    with open(os.path.join(out, f"part-{gauss}.json")) as f:
        assert f.read() == kept


@pytest.mark.slow
def test_exact_relu_flow_conserves_neuron_invariants_where_tsit5_chatters(tmp_path):
    out = str(tmp_path / "run")
    argv = ["--parts", "homogeneous", *SMALL, "--activations", "relu"]
    argv += ["--homogeneous-t1", "1000", "--chatter-t1", "50", "--chatter-max-steps", "2000"]
    assert _run("--out", out, *argv) == 0
    runs = _results(out)["homogeneous"]["runs"]["relu"]
    exact, baseline = runs["filippov"], runs["tsit5"]
    assert exact["status"] == "finished" and exact["t_reached"] == 1000
    # ‖b_j‖² − a_j² per neuron, relative to max(1, ‖b_j‖² + a_j²): measured 3.0e-9 = 0.30·rtol
    # (rtol 1e-8); it is the solver's error on each smooth piece, which does not grow with
    # the number of pieces (each piece's field conserves it exactly).
    assert exact["neuron_drift_relative_max"] <= 10 * exact["rtol"]
    # measured 1087 steps + 41 events (19 crossings, 16 sliding entries, 11 exits)
    assert exact["sliding_entries"] >= 1 and exact["events"] >= exact["sliding_entries"]
    assert exact["steps_plus_events"] <= 11_280
    # The same net with Tsit5 alone uses up its budget in the chatter: measured t = 15.09
    # after 2337 steps (the budget is checked between save times).
    assert baseline["status"] == "max_steps reached"
    assert baseline["num_steps"] >= 2000 and baseline["t_reached"] < 50
    assert "homogeneous.png" in os.listdir(out)
    homogeneous = _results(out)["homogeneous"]
    assert P.figure_problems(_conservation_plots.homogeneous_figure(out, homogeneous)) == []


def test_help_states_the_default_of_every_option_with_one():
    import experiments.balance as balance

    helps = help_defaults(balance)
    assert [name for name, text in helps.items() if "default" not in text] == []
    assert helps["--t1"] == "horizon of the logistic flows (flow time) (default: 1000000)"
    assert helps["--hidden"].endswith("(>= 3) (default: 16,8)")
    assert helps["--solver"].endswith("gauss6) included (default: tsit5)")
