"""`experiments.lazy.run`: the pipeline of `gradflows run lazy` on a user's own equinox model."""

import json
import os

import equinox as eqx
import jax
import numpy as np
import pytest

import experiments.lazy
import flows
import models

ALPHAS = [30.0, 300.0, 3000.0]  # one form of lazy_comparison (remainder): one compilation


@pytest.fixture(scope="module")
def mlp_run(tmp_path_factory):
    rng = np.random.default_rng(0)
    X, X_test = rng.normal(size=(12, 3)), rng.normal(size=(5, 3))
    Y = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    net = eqx.nn.MLP(3, "scalar", 8, 1, activation=jax.nn.gelu, use_bias=False,
                     use_final_bias=False, key=jax.random.PRNGKey(1))  # fmt: skip
    net = jax.tree.map(lambda a: a.astype(np.float64) if eqx.is_array(a) else a, net)
    model = models.symmetrize(net, "doubled")
    out = str(tmp_path_factory.mktemp("api") / "run")
    folder = experiments.lazy.run(
        model,
        (X, Y),
        alphas=ALPHAS,
        heldout=X_test,
        out=out,
        n_times=30,
        t1=20.0,
        solver="tsit5",  # the default exprk4 compiles far longer; tests/flows/test_lazy_exprk.py
        progress=False,
    )
    with open(os.path.join(folder, "results.json")) as f:
        return folder, json.load(f), model, (X, Y)


def test_lazy_run_on_an_mlp_fits_the_doubled_slopes(mlp_run):
    folder, res, _, _ = mlp_run
    fits = res["fits"]
    # measured −1.9994, −1.9992, −1.9996, −0.9999 (off by ≤ 6.1e-4); tolerance 0.02 (the
    # claim of the default run)
    assert abs(fits["weight_gap_slope"] + 2) < 0.02
    assert abs(fits["output_gap_slope"] + 2) < 0.02
    assert abs(fits["heldout_output_gap_slope"] + 2) < 0.02
    assert abs(fits["distance_slope"] + 1) < 0.02
    assert res["theory"]["expected_slopes"]["output_gap"] == -2  # symmetrize read from the model
    for name in ("gaps.png", "loss.png", "pl.png", "trajectories.npz"):
        assert os.path.exists(os.path.join(folder, name)), name


def test_lazy_run_linear_loss_matches_the_closed_form(mlp_run):
    _, res, model, data = mlp_run
    t1 = res["config"]["t1"]
    for run in res["runs"]:
        closed = flows.lazy.linear_closed_form(model, data, run["alpha"], np.array([0.0, t1]))
        # measured 9.3e-16 relative at every α; tolerance 1e-12
        assert run["final_loss_linearized"] == pytest.approx(closed.loss[-1], rel=1e-12)


_X = np.random.default_rng(2).normal(size=(12, 3))
_Y = np.sin(_X[:, 0])


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"data": (_X, _Y[:5])}, ValueError, "data targets have 5 rows but inputs have 12"),
        ({"data": (_X, _Y[:, None, None])}, ValueError,
         "data targets must have shape (12,) or (12, k), got (12, 1, 1)"),
        # a scalar model against (n, 1) targets: every α failed in the folder (run "finished")
        ({"data": (_X, _Y[:, None])}, ValueError,
         "model outputs have shape (12,) but data targets (12, 1)"),
        ({"data": (_X[:, 0], _Y)}, ValueError,
         "data inputs must have shape (n, d) with n >= 1, got (12,)"),
        ({"data": _X}, ValueError, "data must be a pair (X (n, d), Y (n,) or (n, k)), got a "
         "ndarray"),
        ({"data": (_X, _Y * np.nan)}, ValueError, "data targets: non-finite values (NaN or inf)"),
        ({"heldout": _X[:, :2]}, ValueError, "heldout must have shape (n', 3) with n' >= 1 (the "
         "inputs of data have 3 features), got (12, 2)"),
        ({"heldout": (_X[:4], _Y[:3])}, ValueError,
         "heldout targets must have shape (4,) (as data targets), got (3,)"),
        ({"alphas": "1,10"}, TypeError,
         "alphas must be a sequence of numbers such as [1, 10, 100], got str '1,10'"),
        ({"alphas": 10}, TypeError,
         "alphas must be a sequence of numbers such as [1, 10, 100], got int 10"),
        ({"alphas": [1, -1]}, ValueError, "alphas must be > 0, got -1.0"),
        ({"t1": "10"}, ValueError, "t1 must be a number, got '10'"),
        ({"n_times": 2.5}, ValueError, "n_times must be an integer, got 2.5"),
        ({"progress": "yes"}, TypeError, "progress must be True or False, got str 'yes'"),
        ({"out": 3}, TypeError, "out must be a folder path (a str), got int 3"),
    ],
)  # fmt: skip
def test_bad_data_alphas_and_options_are_one_line_naming_them_before_any_folder(
    kwargs, error, message, tmp_path
):
    net = models.TwoLayerNet(3, 4, activation="gelu", key=jax.random.PRNGKey(0))
    out = tmp_path / "run"
    kwargs = {"data": (_X, _Y), "out": str(out), **kwargs}
    with pytest.raises(error) as info:
        experiments.lazy.run(models.symmetrize(net, "doubled"), **kwargs)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    assert not out.exists()


def test_resuming_another_experiments_run_names_it_and_keeps_the_command(tmp_path):
    (tmp_path / "config.json").write_text('{"experiment": "eos", "eta": 0.1}')
    net = models.TwoLayerNet(3, 4, activation="gelu", key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError) as info:
        experiments.lazy.run(
            models.symmetrize(net, "doubled"), (_X, _Y), out=str(tmp_path), resume=True
        )
    assert str(info.value) == (
        f"resume {str(tmp_path)!r} holds a run of eos, not of lazy: resume it with "
        f"gradflows run eos --resume {tmp_path}"
    )
