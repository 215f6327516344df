"""`gradflows run eos`: the run folder (files, parts, resume, refusal), the values it records
(sharpness at step 0, the catapult panel), bad input as one line, exit 2."""

import json
import shutil

import numpy as np
import pytest

import flows
from experiments.eos._cli import DEFAULTS, DIGITS, parameters
from experiments.eos._problem import problem_for
from tests.helpers import cli, one_line

# One η, a tiny net on digits (the problem the defaults were before), a short horizon, the
# gradient flow alone (the modified and central flows' compilations would dominate;
# tests/flows/large_steps pins them): the wiring in seconds.
TINY = ["--data", "digits", "--activation", "tanh", "--output-scale", "0.1", "--seed", "0"]
TINY += ["--n-train", "20", "--width", "4", "--etas", "0.8", "--t1", "8", "--k", "2"]
TINY += ["--flows", "gradient"]
TINY += ["--uv-points", "10", "--uv-steps", "200", "--uv-width", "200", "--no-progress"]
TINY += ["--workers", "0"]


def _run(*argv):
    return cli("run", "eos", *argv)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("eos") / "run"
    assert _run("--out", out, *TINY) == 0
    return out


def test_run_writes_config_parts_results_and_figures(finished):
    out = finished
    for name in ("config.json", "results.json", "eta-0.8.png", "update_cosine.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "catapult.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(list(out.glob("part-*.json"))) == 2  # one η, the catapult panel
    text = (out / "results.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    res = json.loads(text)
    assert res["complete"] is True and res["config"]["experiment"] == "eos"
    config = res["config"]
    assert config["classes"] == list(range(10)) and config["seed"] == 0
    assert config["data"] == "digits" and config["dataset"].startswith("scikit-learn digits")
    assert config["rtol"] == DEFAULTS["rtol"] and config["solver"] == "tsit5"
    assert "jax" in res["versions"] and "diffrax" in config["versions"]
    (run,) = res["runs"]
    # the settings the flows used, the library's max_steps resolved
    solver = flows.SolveSettings(solver="tsit5", rtol=DEFAULTS["rtol"], atol=DEFAULTS["atol"])
    assert run["solver"] == solver.to_dict()
    assert set(run) >= {"gradient_flow", "hover", "diverged", "t_edge", "lanczos"}
    assert "central_flow" not in run and run["failed"] == {}
    assert run["steps"] == 10 and run["diverged"] is None


def _settings(**changes):
    return {**DEFAULTS, **DIGITS, "n_train": 20, "width": 4, **changes}


def test_sharpness_recorded_at_step_0_is_flows_sharpness_of_w0(finished):
    res = json.loads((finished / "results.json").read_text())
    (run,) = res["runs"]
    with np.load(finished / run["file"]) as a:
        S, t, t_gd = a["sharpness_gd"], a["t"], a["t_gd"]
        loss_gd, dist = a["loss_gd"], a["distance_gradient_flow"]
    problem = problem_for(_settings())
    expected = np.asarray(flows.sharpness(problem.loss, problem.net0, 2))
    # measured: equal to 1e-15 relative (the same Lanczos from the same start); tolerance 1e-9
    np.testing.assert_allclose(S[0], expected, rtol=1e-9)
    assert run["sharpness_initial"] == pytest.approx(expected[0], rel=1e-9)
    assert loss_gd[0] == pytest.approx(float(problem.loss(problem.net0)), rel=1e-12)
    np.testing.assert_allclose(t_gd, 0.8 * np.arange(11), rtol=1e-12)
    np.testing.assert_allclose(t, t_gd[::2], rtol=1e-12)  # --sharpness-every 2
    assert dist[0] == 0.0 and np.all(dist[1:] > 0)  # the flows start at w0


def test_catapult_panel_final_lambda_falls_below_two_over_eta_between_2_and_4(finished):
    res = json.loads((finished / "results.json").read_text())
    c = res["catapult"]
    with np.load(finished / c["file"]) as a:
        x, eta_lam, diverged, spike = a["x"], a["eta_lam_final"], a["diverged"], a["spike"]
    lazy, catapult = x < 2, (x > 2) & (x < 4) & ~diverged
    assert catapult.sum() >= 3 and np.all(eta_lam[catapult] < 2)
    assert np.all(spike[catapult] > 1) and np.all(diverged[x > 4.2])
    # lazy phase: λ barely moves; measured max |λ/λ0 − 1| = 8e-3 at m = 200; tolerance 0.1
    assert np.allclose(eta_lam[lazy], x[lazy], rtol=0.1)
    # the gradient flow conserves λ² − 4f²/m (measured drift 1e-12; tolerance 1e-8)
    assert c["invariant"]["gradient_flow_relative_drift_max"] < 1e-8


def test_resume_keeps_finished_parts_and_computes_only_the_missing(finished, tmp_path, capsys):
    folder = tmp_path / "resumed"
    folder.mkdir()
    for path in [finished / "config.json", *finished.glob("part-*")]:
        shutil.copy(path, folder)
    res = json.loads((finished / "results.json").read_text())
    missing = res["catapult"]["task"]["key"]
    for ext in ("json", "npz"):
        (folder / f"part-{missing}.{ext}").unlink()
    assert _run("--resume", folder, "--no-progress", "--workers", "0") == 0
    again = json.loads((folder / "results.json").read_text())
    assert again["sweep"]["tasks"] == 2 and again["sweep"]["resumed"] == 1
    assert again["runs"][0]["task"]["resumed"] is True
    assert again["catapult"]["lam0"] == res["catapult"]["lam0"]
    capsys.readouterr()
    assert _run("--resume", folder, "--t1", "9") == 2
    assert "--t1 9.0 differs from the run's 8.0" in one_line(capsys.readouterr().err)


def test_existing_folder_is_refused(finished, capsys):
    assert _run("--out", finished, *TINY) == 2
    err = one_line(capsys.readouterr().err)
    assert "already exists" in err and "--resume" in err


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--etas", "0"], "--etas must be > 0, got 0"),
        (["--etas", "-0.5,0.4"], "--etas must be > 0, got -0.5"),
        (["--k", "400"], "--k must be <= p, the network's 330 parameters, got 400"),
        # the shared parameter limit (experiments/_sizes), before any solve
        (
            ["--width", "4096", "--depth", "16"],
            "--width 4096 --depth 16: the network would have 2.52e+08 parameters, over the "
            "limit of 1e+07: --width at most 813 at --depth 16",
        ),
        (["--classes", "3"], "--classes must be 'all' or two or more different digits"),
        (["--task", "binary"], "--task binary needs two --classes, got 10"),
        (["--flows", "gradient,exact"], "--flows: unknown exact"),
        (["--t1", "1"], "--t1 (1) must be at least 10 steps of the largest --etas"),
        # saved t = 0 alone: no flow solved, and S(0) reported as "stayed below 2/η"
        (
            ["--sharpness-every", "6"],
            "--sharpness-every 6 leaves 1 save(s) after t = 0 in the 10 GD steps of --etas "
            "0.8: at most 5",
        ),
        (["--rtol", "0"], "--rtol"),
        (
            ["--data", "random", "--classes", "0,1", "--loss", "cross_entropy"],
            "--classes 0,1, --loss cross_entropy: --data random has one output and the squared "
            "loss; these options apply to --data digits",
        ),
        # was ignored: the digits have 64 pixels
        (["--dim", "4"], "--dim 4: --dim sets the input dimension of --data random"),
        # the step count was printed as a 301-digit integer
        (
            ["--t1", "1e300"],
            "--t1 1e+300 is 1.25e+300 steps of the smallest --etas (0.8), over 200000",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_the_flag(tmp_path, capsys, argv, says):
    argv = [*TINY, *argv]
    assert _run("--out", tmp_path / "bad", *argv) == 2
    assert says in one_line(capsys.readouterr().err)
    assert not (tmp_path / "bad").exists()


def test_the_default_problem_is_the_peer_example_with_half_the_squared_error():
    """The defaults: 128 standard-normal points in R^8, a swish MLP 8 → 16 → 16 → 1, ½ the
    mean squared error: `benchmarks/_peer_mlp.py`'s example (the notebook of
    alex-damian/central_flows_jax, with our draws), whose loss has no ½, so that GD at η on
    ours is GD at η/2 on it, step for step."""
    from benchmarks._peer_mlp import peer_mlp

    s = dict(DEFAULTS, classes=list(range(10)))
    problem = problem_for(s)
    assert problem.p == parameters(s) == 433 and problem.X.shape == (128, 8)
    loss, net, eta = peer_mlp(DEFAULTS["seed"])
    # measured: equal to round-off (the same draws, the same network); tolerance 1e-12
    assert float(problem.loss(problem.net0)) == pytest.approx(float(loss(net)) / 2, rel=1e-12)
    assert float(DEFAULTS["etas"]) == 2 * eta
