import jax
import jax.numpy as jnp
import numpy as np
import pytest

import models


@pytest.mark.parametrize("scale, factor", [("sqrt", 1 / np.sqrt(7)), ("mean", 1 / 7)])
def test_two_layer_matches_formula(scale, factor):
    model = models.TwoLayerNet(3, 7, activation="tanh", scale=scale, key=jax.random.PRNGKey(0))
    x = jnp.array([0.5, -0.1, 2.0])
    expected = factor * sum(a * jnp.tanh(b @ x) for a, b in zip(model.a, model.b, strict=True))
    assert model.scale == pytest.approx(factor, rel=1e-15)
    np.testing.assert_allclose(model(x), expected, rtol=1e-13)


def test_two_layer_init_variances():
    model = models.TwoLayerNet(50, 2000, key=jax.random.PRNGKey(1))
    assert model.a.shape == (2000,) and model.b.shape == (2000, 50)
    assert np.var(model.a) == pytest.approx(1.0, rel=0.1)
    assert np.var(model.b) == pytest.approx(1 / 50, rel=0.02)


def test_two_layer_bad_arguments_raise():
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match="scale must be 'sqrt' or 'mean', got 'ntk'"):
        models.TwoLayerNet(2, 3, scale="ntk", key=key)
    # a list said "TypeError: unhashable type: 'list'"
    with pytest.raises(ValueError, match=r"scale must be 'sqrt' or 'mean', got \['sqrt'\]"):
        models.TwoLayerNet(2, 3, scale=["sqrt"], key=key)
    with pytest.raises(ValueError, match="width must be an integer >= 1"):
        models.TwoLayerNet(2, -1, key=key)
    with pytest.raises(ValueError, match="in_size"):
        models.TwoLayerNet(True, 3, key=key)
