import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import models

MODELS = {
    "mlp": lambda key: models.MLP(3, 6, 2, activation="gelu", key=key),
    "two_layer": lambda key: models.TwoLayerNet(3, 8, key=key),
}


@pytest.mark.parametrize("how", ["doubled", "centred"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_symmetrized_output_is_exactly_zero_at_w0(name, how):
    model = MODELS[name](jax.random.PRNGKey(0))
    xs = 2.0 * jax.random.normal(jax.random.PRNGKey(1), (20, 3))
    sym = models.symmetrize(model, how)
    assert sym.how == how
    assert jnp.all(jnp.abs(model(xs[0])) > 0)
    assert jnp.max(jnp.abs(jax.vmap(sym)(xs))) <= 1e-15


def test_centred_trains_only_model_and_subtracts_w0():
    model = MODELS["mlp"](jax.random.PRNGKey(0))
    centred = models.symmetrize(model, "centred")
    trainable, _ = models.partition(centred)
    assert jax.tree_util.tree_leaves(trainable.model0) == []
    assert len(jax.tree_util.tree_leaves(trainable)) == len(
        jax.tree_util.tree_leaves(models.partition(model)[0])
    )
    moved = eqx.tree_at(lambda c: c.model.weights[0], centred, centred.model.weights[0] + 0.3)
    x = jnp.array([0.2, -0.5, 1.0])
    expected = eqx.tree_at(lambda m: m.weights[0], model, model.weights[0] + 0.3)(x) - model(x)
    np.testing.assert_allclose(moved(x), expected, rtol=1e-14)
    assert abs(expected) > 1e-3


def test_doubled_trains_both_copies():
    model = MODELS["two_layer"](jax.random.PRNGKey(0))
    doubled = models.symmetrize(model, "doubled")
    trainable, _ = models.partition(doubled)
    assert len(jax.tree_util.tree_leaves(trainable)) == 2 * len(jax.tree_util.tree_leaves(model))
    grads = eqx.filter_grad(lambda d: d(jnp.array([0.1, 0.2, 0.3])))(doubled)
    np.testing.assert_allclose(grads.plus.a, -grads.minus.a, rtol=0, atol=0)
    assert jnp.max(jnp.abs(grads.plus.a)) > 1e-3


def test_unknown_how_raises():
    model = MODELS["mlp"](jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="how must be 'doubled' or 'centred', got 'paired'"):
        models.symmetrize(model, "paired")


@pytest.mark.parametrize("how", ["doubled", "centred"])
def test_symmetrize_rejects_non_finite_parameters(how):
    model = MODELS["two_layer"](jax.random.PRNGKey(0))
    broken = eqx.tree_at(lambda m: m.a, model, model.a.at[0].set(jnp.inf))
    with pytest.raises(ValueError, match="model has non-finite parameters"):
        models.symmetrize(broken, how)


@pytest.mark.parametrize("wrap", [lambda m: models.symmetrize(m, "doubled"), models.linearize])
def test_a_module_that_is_not_callable_is_refused_naming_model(wrap):
    # a models.Frozen was wrapped, then calling the result said "'Frozen' object is not callable"
    with pytest.raises(ValueError) as info:
        wrap(models.Frozen(jnp.ones(2)))
    assert str(info.value) == "model must be a callable equinox Module, got Frozen"
