import jax
import jax.numpy as jnp
import numpy as np
import pytest

import models


def test_mlp_matches_explicit_formula():
    model = models.MLP(3, 4, 2, activation="softplus", key=jax.random.PRNGKey(0))
    x = jnp.array([0.3, -1.2, 0.7])
    (w1, w2, w3), (b1, b2, b3) = model.weights, model.biases
    sp = jax.nn.softplus
    expected = (w3 @ sp(w2 @ sp(w1 @ x + b1) + b2) + b3)[0]
    assert model(x).shape == ()
    np.testing.assert_allclose(model(x), expected, rtol=1e-14)


def test_mlp_shapes_dtype_and_no_bias():
    model = models.MLP(3, 5, 3, bias=False, key=jax.random.PRNGKey(1))
    assert [w.shape for w in model.weights] == [(5, 3), (5, 5), (5, 5), (1, 5)]
    assert model.biases is None
    assert model.weights[0].dtype == jnp.float64


def test_mlp_init_variance_is_one_over_fan_in():
    model = models.MLP(400, 300, 1, key=jax.random.PRNGKey(2))
    assert np.var(model.weights[0]) == pytest.approx(1 / 400, rel=0.02)
    assert np.var(model.weights[1]) == pytest.approx(1 / 300, rel=0.2)


def test_mlp_batches_with_vmap():
    model = models.MLP(2, 3, 1, key=jax.random.PRNGKey(3))
    xs = jax.random.normal(jax.random.PRNGKey(4), (6, 2))
    np.testing.assert_allclose(jax.vmap(model)(xs), [model(x) for x in xs], rtol=1e-14)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(in_size=0, width=3, depth=1), "in_size must be an integer >= 1, got 0"),
        (dict(in_size=2, width=0, depth=1), "width must be an integer >= 1, got 0"),
        (dict(in_size=2, width=3, depth=0), "depth must be an integer >= 1, got 0"),
        (dict(in_size=2, width=2.5, depth=1), "width"),
        (dict(in_size=2, width=3, depth=1, activation="nope"), "activation"),
    ],
)
def test_mlp_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        models.MLP(**kwargs, key=jax.random.PRNGKey(0))


def test_mlp_wrong_input_shape_raises():
    model = models.MLP(2, 3, 1, key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=r"x must have shape \(2,\)"):
        model(jnp.ones((4, 2)))
