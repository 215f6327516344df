"""`gradflows run eos --optimizer momentum|rmsprop|adam`: the optimizer's (preconditioned)
sharpness recorded against its stability limit beside GD, its figure, and its
hyperparameters refused in one line naming the flag (exit 2)."""

import json

import equinox as eqx
import jax
import numpy as np
import optax
import pytest

import flows
import models
from experiments.eos._cli import DEFAULTS
from experiments.eos._problem import problem_for
from tests.helpers import cli, one_line

TINY = ["--n-train", "20", "--width", "4", "--etas", "0.8", "--t1", "8", "--flows", "gradient"]
TINY += ["--uv-points", "10", "--uv-steps", "200", "--uv-width", "200", "--no-progress"]
TINY += ["--workers", "0"]


@pytest.mark.slow  # 73 s at load 28 on 2 cores: a whole run (GD, flow, catapult panel)
def test_momentum_run_records_its_sharpness_against_2_plus_2_beta_over_eta(tmp_path):
    out = tmp_path / "run"
    assert cli("run", "eos", "--out", out, *TINY, "--optimizer", "momentum", "--beta", "0.5") == 0
    assert (out / "optimizer-0.8.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = json.loads((out / "results.json").read_text())
    (run,) = res["runs"]
    o = run["optimizer"]
    assert o["optimizer"] == "momentum" and o["limit"] == pytest.approx(3.0 / 0.8, rel=1e-15)
    assert o["diverged"] is None and res["config"]["optimizer"] == "momentum"
    with np.load(out / run["file"]) as a:
        t, S, L = a["t_opt"], a["sharpness_opt"], a["loss_opt"]
    np.testing.assert_allclose(t, 0.8 * np.arange(2, 11, 2), rtol=1e-15)
    # the first save, step 2: two heavy-ball steps by optax itself, then flows.sharpness
    problem = problem_for(dict(DEFAULTS, n_train=20, width=4, classes=list(range(10))))
    params, static = models.partition(problem.net0)
    opt = optax.sgd(0.8, momentum=0.5)
    state = opt.init(params)
    for _ in range(2):
        grads = jax.grad(lambda d: problem.loss(eqx.combine(d, static)))(params)
        updates, state = opt.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    net = eqx.combine(params, static)
    assert L[0] == pytest.approx(float(problem.loss(net)), rel=1e-12)
    assert S[0] == pytest.approx(float(flows.sharpness(problem.loss, net)[0]), rel=1e-8)


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--optimizer", "adam", "--beta2", "1.5"], "--beta2 must lie in [0, 1), got 1.5"),
        (["--optimizer", "rmsprop", "--eps", "-1e-8"], "--eps must be >= 0, got -1e-08"),
        (["--optimizer", "momentum", "--beta", "1"], "--beta must lie in [0, 1), got 1.0"),
        (["--optimizer", "adam", "--beta1", "nan"], "--beta1 must be finite, got nan"),
        (["--optimizer", "sgd"], "invalid choice: 'sgd'"),
    ],
)
def test_bad_optimizer_settings_exit_2_with_one_line_naming_the_flag(tmp_path, capsys, argv, says):
    assert cli("run", "eos", "--out", tmp_path / "bad", *TINY, *argv) == 2
    assert says in one_line(capsys.readouterr().err)
    assert not (tmp_path / "bad").exists()
