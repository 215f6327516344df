"""Each bad input raises an error that names the argument or the time reached."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models


def loss(p):
    return 0.5 * jnp.sum(p**2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(t1=0.0), "t1"),
        (dict(t1=-1.0), "t1"),
        (dict(t1=float("nan")), "t1"),
        (dict(t1=1.0, ts=[0.0, 0.5, 0.2]), "ts"),
        (dict(t1=1.0, ts=[0.0, 2.0]), "ts"),
        (dict(t1=1.0, ts=[-1.0, 0.5]), "ts"),
        (dict(t1=1.0, solver="euler"), "solver"),
        (dict(t1=1.0, max_steps=0), "max_steps"),
        (dict(t1=1.0, rtol=float("nan")), "rtol"),
        (dict(t1=1.0, rtol=0.0), "rtol"),
        (dict(t1=1.0, rtol=1e-30), "rtol"),
        (dict(t1=1.0, atol=-1.0), "atol"),
        (dict(t1=1.0, chunks=0), "chunks"),
    ],
)
def test_gradient_flow_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        flows.gradient_flow(loss, jnp.ones(2), **kwargs)


def test_gradient_flow_rejects_non_finite_params():
    with pytest.raises(ValueError, match="params0"):
        flows.gradient_flow(loss, jnp.array([1.0, jnp.nan]), 1.0)


def test_blow_up_reports_the_time_reached():
    # x' = exp(x) from x0 = 0 blows up at t = 1.
    with pytest.raises(FloatingPointError, match=r"blowing up|non-finite near t=(0\.9|1\b)"):
        flows.gradient_flow(lambda x: -jnp.sum(jnp.exp(x)), jnp.zeros(1), 2.0, solver="tsit5")


def test_max_steps_names_the_setting_and_time():
    with pytest.raises(flows.MaxStepsReached, match=r"max_steps=5 reached at t="):
        flows.gradient_flow(loss, jnp.ones(2), 100.0, solver="tsit5", max_steps=5, chunks=1)


def _lazy_setup():
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    net = models.TwoLayerNet(3, 4, activation="tanh", key=k[0])
    return net, jax.random.normal(k[1], (5, 3)), jax.random.normal(k[2], (5,))


@pytest.mark.parametrize("alpha", [0.0, -1.0, float("inf"), float("nan")])
def test_lazy_comparison_rejects_bad_alpha(alpha):
    net, X, Y = _lazy_setup()
    with pytest.raises(ValueError, match="alpha"):
        flows.lazy.lazy_comparison(net, (X, Y), alpha, 1.0)


def test_lazy_comparison_rejects_bad_data():
    net, X, Y = _lazy_setup()
    with pytest.raises(ValueError, match="data inputs"):
        flows.lazy.lazy_comparison(net, (X.at[0, 0].set(jnp.nan), Y), 1.0, 1.0)
    with pytest.raises(ValueError, match="data targets"):
        flows.lazy.lazy_comparison(net, (X, Y[:3]), 1.0, 1.0)
    with pytest.raises(ValueError, match="do not fit the model"):
        flows.lazy.lazy_comparison(net, (X[:, :2], Y), 1.0, 1.0)
    with pytest.raises(ValueError, match="heldout"):
        flows.lazy.lazy_comparison(net, (X, Y), 1.0, 1.0, heldout=np.ones((2, 4)))
    with pytest.raises(ValueError, match="model parameters"):
        bad = models.TwoLayerNet(3, 4, activation="tanh", key=jax.random.PRNGKey(1))
        bad = jax.tree.map(lambda a: a * jnp.nan if isinstance(a, jax.Array) else a, bad)
        flows.lazy.lazy_comparison(bad, (X, Y), 1.0, 1.0)
