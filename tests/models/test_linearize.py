import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import models


class _Custom(eqx.Module):
    """A user-written module: static fields, an integer array, a vector output."""

    w: jax.Array
    v: jax.Array
    counts: jax.Array
    power: int = eqx.field(static=True)

    def __call__(self, x):
        return jnp.sin(self.w @ x) ** self.power + self.v * jnp.sum(x * self.counts)


def _custom(key):
    k1, k2 = jax.random.split(key)
    return _Custom(
        w=jax.random.normal(k1, (3, 2)),
        v=jax.random.normal(k2, (3,)),
        counts=jnp.array([1, 2]),
        power=3,
    )


MODELS = {
    "mlp": lambda key: models.MLP(2, 4, 2, key=key),
    "two_layer": lambda key: models.TwoLayerNet(2, 5, key=key),
    "deep_linear": lambda key: models.DeepLinearNet.gaussian([2, 3, 3, 2], scale=1.0, key=key),
    "custom": _custom,
}


def _shift(module, direction):
    """The module with its trainable parameters moved by a flat vector."""
    params, static = models.partition(module)
    flat, unravel = ravel_pytree(params)
    return eqx.combine(unravel(flat + direction), static)


@eqx.filter_jit
def _second_difference(module, x, a, b):
    h = [_shift(module, d)(x) for d in (a + b, a, b, jnp.zeros_like(a))]
    return h[0] - h[1] - h[2] + h[3]


@pytest.fixture(scope="module", params=sorted(MODELS))
def setup(request):
    k_model, k_x, k_a, k_b = jax.random.split(jax.random.PRNGKey(0), 4)
    model = MODELS[request.param](k_model)
    p = ravel_pytree(models.partition(model)[0])[0].size
    x = jax.random.normal(k_x, (2,))
    a = 0.5 * jax.random.normal(k_a, (p,))
    b = 0.5 * jax.random.normal(k_b, (p,))
    return model, x, a, b


def test_linearized_equals_model_at_w0(setup):
    model, x, _, _ = setup
    np.testing.assert_allclose(models.linearize(model)(x), model(x), rtol=0, atol=1e-12)


def test_linearized_is_affine_and_model_is_not(setup):
    model, x, a, b = setup
    lin = models.linearize(model)
    assert jnp.max(jnp.abs(_second_difference(lin, x, a, b))) <= 1e-12
    assert jnp.max(jnp.abs(_second_difference(model, x, a, b))) > 1e-3


@eqx.filter_jit
def _taylor_and_linearized(model, x, a):
    params, static = models.partition(model)
    flat, unravel = ravel_pytree(params)
    value, jvp = jax.jvp(lambda f: eqx.combine(unravel(f), static)(x), (flat,), (a,))
    return value + jvp, _shift(models.linearize(model), a)(x)


def test_linearized_matches_first_order_taylor_at_shifted_w(setup):
    model, x, a, _ = setup
    taylor, linearized = _taylor_and_linearized(model, x, a)
    np.testing.assert_allclose(linearized, taylor, rtol=1e-12, atol=1e-12)


def test_gradient_of_linearized_at_w0_equals_model_gradient(setup):
    model, x, _, _ = setup

    @eqx.filter_jit
    def flat_jacobian(module):
        params, static = models.partition(module)
        flat, unravel = ravel_pytree(params)
        return jax.jacobian(lambda f: eqx.combine(unravel(f), static)(x))(flat)

    np.testing.assert_allclose(
        flat_jacobian(models.linearize(model)), flat_jacobian(model), rtol=1e-12, atol=1e-14
    )


def test_linearized_trainable_parameters_are_the_model_parameters(setup):
    model, _, _, _ = setup
    lin = models.linearize(model)
    trainable = models.partition(lin)[0]
    assert jax.tree_util.tree_leaves(trainable.model0) == []
    assert jax.tree_util.tree_structure(trainable.model) == jax.tree_util.tree_structure(
        models.partition(model)[0]
    )


def test_linearize_rejects_non_modules():
    with pytest.raises(ValueError, match="model must be an equinox Module"):
        models.linearize(lambda x: x)


def test_linearize_rejects_non_finite_parameters():
    model = models.MLP(2, 3, 1, key=jax.random.PRNGKey(0))
    broken = eqx.tree_at(lambda m: m.biases[0], model, model.biases[0].at[1].set(jnp.nan))
    with pytest.raises(ValueError, match="model has non-finite parameters"):
        models.linearize(broken)


def test_linearize_of_centred_keeps_frozen_copy_fixed():
    model = models.TwoLayerNet(2, 4, key=jax.random.PRNGKey(0))
    lin = models.linearize(models.symmetrize(model, "centred"))
    trainable = models.partition(lin)[0]
    assert len(jax.tree_util.tree_leaves(trainable)) == 2
    assert models.linearize(model)(jnp.ones(2)) != 0
    assert lin(jnp.ones(2)) == 0
