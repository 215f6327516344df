"""A checkpoint is resumed only for the problem it was written for (issue #24, part 1)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import flows.nonsmooth._filippov as F
import models

HALF = lambda w: 0.5 * jnp.sum(w**2)  # noqa: E731  F = ½‖w‖², w(t) = e^{-t} w(0)


def _write(path, w0=(1.0, 2.0), loss=HALF, **kw):
    return flows.gradient_flow(loss, jnp.array(w0), 1.0, checkpoint=path, **kw)


def test_a_checkpoint_of_another_start_point_is_refused_naming_the_file(tmp_path):
    path = str(tmp_path / "ck.npz")
    _write(path)
    # Before the fingerprint this returned the old trajectory: w(0) = (1, 2), w(1) off by 1.84.
    with pytest.raises(ValueError, match=r"^checkpoint '.*ck\.npz' was written for another "
                       r"problem: the start state, the loss at the start \(17 now, 2\.5 in "
                       r"the file\)") as e:  # fmt: skip
        _write(path, w0=(5.0, -3.0))
    assert "\n" not in str(e.value)


def test_a_checkpoint_of_another_loss_or_other_settings_is_refused(tmp_path):
    path = str(tmp_path / "ck.npz")
    _write(path)
    with pytest.raises(ValueError, match=r"the loss at the start \(5 now, 2\.5 in the file\), "
                       r"the gradient at the start"):  # fmt: skip
        _write(path, loss=lambda w: jnp.sum(w**2))
    with pytest.raises(ValueError, match=r"problem: the settings differ"):
        _write(path, rtol=1e-9)
    with pytest.raises(ValueError, match=r"problem: the save times differ"):
        _write(path, ts=np.linspace(0.0, 1.0, 7))


def test_a_run_stopped_part_way_is_not_resumed_from_another_start(tmp_path):
    path = str(tmp_path / "ck.npz")
    kw = dict(solver="tsit5", rtol=1e-10, atol=1e-12, chunks=6)
    full = _write(str(tmp_path / "full.npz"), **kw)
    with pytest.raises(flows.MaxStepsReached):
        _write(path, max_steps=full.stats["num_steps"] // 2, **kw)
    with pytest.raises(ValueError, match="the start state"):
        _write(path, w0=(5.0, -3.0), **kw)
    # The same problem (a new but equal loss function; only the budget max_steps raised)
    # resumes, and ends where the full solve does (measured: 0 difference, same steps).
    resumed = _write(path, loss=lambda w: 0.5 * jnp.sum(w**2), **kw)
    np.testing.assert_allclose(resumed.params[-1], full.params[-1], rtol=1e-12)
    np.testing.assert_allclose(resumed.params[-1], np.exp(-1.0) * np.array([1.0, 2.0]), rtol=1e-9)


def test_a_checkpoint_without_fingerprint_is_refused(tmp_path):
    path = str(tmp_path / "old.npz")
    np.savez(path, ts=flows.log_times(1.0, 100, t_min=1e-3), done=1, t=0.5, phase="tsit5")
    with pytest.raises(ValueError, match=r"holds no fingerprint .*delete it to start afresh"):
        _write(path)


def test_a_lazy_comparison_checkpoint_of_another_alpha_is_refused(tmp_path):
    net = models.MLP(2, 3, 1, activation="tanh", key=jax.random.PRNGKey(1))
    X = jnp.array([[1.0, 0.2], [-0.3, 0.8], [0.5, -1.0]])
    Y = jnp.array([0.3, -0.2, 0.7])
    kw = dict(
        checkpoint=str(tmp_path / "lazy.npz"),
        ts=np.linspace(0, 1, 3),
        solver="tsit5",
        remainder=False,
    )
    flows.lazy.lazy_comparison(net, (X, Y), 2.0, 1.0, **kw)
    with pytest.raises(ValueError, match=r"problem: the data, the loss at the start \("):
        flows.lazy.lazy_comparison(net, (X, Y), 3.0, 1.0, **kw)


X = np.array([[1.0, 0.0], [-0.5, 1.0], [0.5, 1.0]])
Y = np.array([-1.0, 0.5, 1.5])
TS = np.linspace(0.0, 2.0, 5)


def _neuron(a, b):
    net = models.TwoLayerNet(2, 1, activation="relu", key=jax.random.PRNGKey(0))
    return eqx.tree_at(lambda n: (n.a, n.b), net, (jnp.array([a]), jnp.array([b])))


def test_a_filippov_checkpoint_of_another_start_or_other_data_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(F, "_CHECKPOINT_EVERY_S", 0.0)  # write after every piece
    path = str(tmp_path / "ck.npz")
    full = F.filippov_flow(_neuron(1.0, [0.3, 0.5]), (X, Y), 2.0, ts=TS, checkpoint=path)
    with pytest.raises(ValueError, match=r"problem: the start state, the loss at the start"):
        F.filippov_flow(_neuron(1.2, [0.3, 0.5]), (X, Y), 2.0, ts=TS, checkpoint=path)
    with pytest.raises(ValueError, match=r"problem: the data, the loss at the start"):
        F.filippov_flow(_neuron(1.0, [0.3, 0.5]), (X, Y + 1), 2.0, ts=TS, checkpoint=path)
    again = F.filippov_flow(_neuron(1.0, [0.3, 0.5]), (X, Y), 2.0, ts=TS, checkpoint=path)
    np.testing.assert_array_equal(again.loss, full.loss)
