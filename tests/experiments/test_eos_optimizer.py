"""`gradflows run eos --optimizer momentum|rmsprop|adam`: the optimizer's (preconditioned)
sharpness recorded against its stability limit beside GD, its figure, and its
hyperparameters refused in one line naming the flag (exit 2)."""

import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import flows
import models
from experiments.eos._cli import DEFAULTS, DIGITS
from experiments.eos._problem import problem_for
from tests.helpers import cli, one_line

TINY = ["--data", "digits", "--activation", "tanh", "--output-scale", "0.1", "--seed", "0"]
TINY += ["--n-train", "20", "--width", "4", "--etas", "0.8", "--t1", "8", "--flows", "gradient"]
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
    problem = problem_for({**DEFAULTS, **DIGITS, "n_train": 20, "width": 4})
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


@pytest.mark.slow  # a whole run with its central flow: 266-358 s at load 12-19 on 2 cores
def test_rmsprop_run_draws_its_central_flow_holding_the_effective_sharpness_at_2_over_eta(
    tmp_path,
):
    from experiments.eos._rmsprop_central import rmsprop_start
    from flows.large_steps import preconditioned_sharpness

    out, eta = tmp_path / "run", 0.05
    tiny = [x if x != "0.8" else str(eta) for x in TINY]
    assert cli("run", "eos", "--out", out, *tiny, "--optimizer", "rmsprop") == 0
    assert (out / "optimizer-0.05.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    o = run["optimizer"]
    c = o["central_flow"]
    print(c)
    assert o["limit"] == pytest.approx(2 / eta, rel=1e-15)
    # measured: the edge at t = 3.9034 (step 78), held to 1.6e-6 at the run's rtol 1e-6 (the
    # solver's tolerance sets it: 5.7e-13 at rtol 1e-11, test_central_rmsprop.py), a second
    # eigenvalue at 2/η at t = 5.85 (k = 1: the flow stops there)
    assert c["t_edge"] == pytest.approx(3.9034, rel=1e-3) and c["held"] < 2e-5
    assert c["stopped"] is None or "eigenvalue 2" in c["stopped"]["reason"]
    with np.load(out / run["file"]) as a:
        t, S, tracked = a["t_cf_opt"], a["sharpness_cf_opt"], a["tracked_cf_opt"]
        L, pred = a["loss_cf_opt"], a["predicted_loss_cf_opt"]
    assert t[0] == 0 and np.all(np.diff(t) > 0)
    np.testing.assert_array_equal(pred[tracked == 0], L[tracked == 0])  # Σ = 0 off the edge
    assert np.all(pred[tracked == 1] > L[tracked == 1])
    # the flow starts at RMSProp's first preconditioner ν_1 = β2ν̄ + (1 − β2)∇L(w0)⊙²
    problem = problem_for({**DEFAULTS, **DIGITS, "n_train": 20, "width": 4})
    _, nu1 = rmsprop_start(problem.loss, problem.net0, 0.99)
    P = jax.tree.map(lambda v: np.sqrt(v) + 1e-8, nu1)
    S0 = float(preconditioned_sharpness(problem.loss, problem.net0, P, tol=1e-12, max_iters=200)[0])
    assert S[0] == pytest.approx(S0, rel=1e-8)


def test_optimizer_figure_names_the_problem_and_draws_the_loss_from_t_0():
    from experiments.eos._optimizer import optimizer_figure

    o = {"optimizer": "rmsprop", "limit": 4.0, "edge_step": 2, "median_ratio": 1.01}
    a = {"t_opt": np.array([0.5, 1.0]), "loss_opt": np.array([0.9, 0.8])}
    a |= {"sharpness_opt": np.array([3.0, 4.1]), "t_gd": np.array([0.0, 0.5, 1.0])}
    a |= {"loss_gd": np.array([1.0, 0.95, 0.9]), "t": np.array([0.0, 0.5, 1.0])}
    config = {"model": "mlp [4]", "data": "digits 0-9, 20 train", "loss": "mse"}
    fig = optimizer_figure({"eta": 0.5, "optimizer": o}, a, config)
    title = fig._suptitle.get_text()
    assert title.startswith("rmsprop at η = 0.5: reached its limit at step 2, then median ×1.010")
    assert title.endswith("\nmlp [4]; digits 0-9, 20 train; loss: ½ × mean squared error")
    ax_l = fig.axes[1]
    (line,) = [ln for ln in ax_l.get_lines() if ln.get_label() == "rmsprop"]
    np.testing.assert_array_equal(line.get_xdata(), [0.0, 0.5, 1.0])  # was from t = 0.5
    np.testing.assert_array_equal(line.get_ydata(), [1.0, 0.9, 0.8])  # GD's loss at t = 0


def test_an_optimizer_that_diverges_by_the_rule_is_recorded_diverged_and_cut_there():
    # momentum at η = 3 on the eos MLP ended at a loss of 7.8e38 recorded as diverged: None,
    # "at its limit from step 2 (median ×0.789)": the rule's DivergenceWarning was not read
    from experiments.eos._optimizer import optimizer_run

    loss = lambda w: 0.5 * jnp.sum(jnp.array([1.0, 0.3]) * w**2)  # noqa: E731
    s = {"optimizer": "momentum", "beta": 0.9, "t1": 250.0, "sharpness_every": 2}
    record, arrays = optimizer_run(loss, jnp.ones(2), s={**s, "beta2": None, "eps": 1e-8}, eta=5.0)
    assert record["diverged"].startswith("the optimizer diverges: the loss rose from 0.65 to")
    # the saves before the excursion (step 4: 3961 = 6e3 × L(0)) are kept, none after
    np.testing.assert_array_equal(arrays["t_opt"], [10.0])
    assert record["loss_final"] == pytest.approx(float(arrays["loss_opt"][-1]))


def test_rmsprop_above_its_edge_at_the_start_is_recorded_with_no_central_flow(monkeypatch):
    # the central flow's refusal was matched on its text "params0: S(0)": once RMSProp's
    # named λ_max(P⁻¹H)(0), `--optimizer rmsprop --etas 0.05` on the default problem
    # (172.6 > 2/η = 40) failed the run after its work with exit 2, where docs/eos.md says
    # the figure says so and draws no flow
    import flows.large_steps as large_steps
    from experiments.eos._rmsprop_central import rmsprop_central
    from flows.large_steps._central import StartAboveEdge

    says = "params0: λ_max(P⁻¹H)(0) = 172.617 > 2/eta = 40 (by 332 %): ..."

    def above(*args, **kwargs):
        raise StartAboveEdge(says)

    monkeypatch.setattr(large_steps, "central_flow", above)
    s = {"t1": 0.2, "k": 1, "eps": 1e-8, "solver": "tsit5", "rtol": 1e-6, "atol": 1e-8}
    record, arrays = rmsprop_central(None, None, s={**s, "max_steps": None}, eta=0.05,
                                     beta2=0.99, nu0=None, ts=np.array([0.0]))  # fmt: skip
    assert record["stopped"] == {"t": 0.0, "reason": says} and record["events"] == 0
    assert arrays["t_cf_opt"].size == 0
