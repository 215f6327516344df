import jax
import jax.numpy as jnp
import numpy as np
import pytest

import models


@pytest.fixture
def s():
    return 3.0 * jax.random.normal(jax.random.PRNGKey(0), (200,))


@pytest.mark.parametrize(
    "reference, a, b",
    [
        (jax.nn.relu, 0.5, 0.5),
        (jnp.abs, 0.0, 1.0),
        (lambda s: jax.nn.leaky_relu(s, negative_slope=0.01), 1.01 / 2, 0.99 / 2),
    ],
    ids=["relu", "abs", "leaky_relu"],
)
def test_abs_family_special_cases_equal_jax_activations(s, reference, a, b):
    np.testing.assert_allclose(models.abs_family(a, b)(s), reference(s), atol=1e-15)


def test_named_activations_match_jax(s):
    np.testing.assert_allclose(models.activation("tanh")(s), jnp.tanh(s), atol=0)
    np.testing.assert_allclose(models.activation("softplus")(s), jnp.log1p(jnp.exp(s)), atol=1e-14)
    gelu = 0.5 * s * (1 + jax.scipy.special.erf(s / jnp.sqrt(2.0)))
    np.testing.assert_allclose(models.activation("gelu")(s), gelu, atol=1e-14)


def test_abs_family_is_hashable_by_value():
    assert hash(models.abs_family(0.5, 0.5)) == hash(models.abs_family(0.5, 0.5))
    assert models.abs_family(0.5, 0.5) != models.abs_family(0.0, 1.0)


def test_callable_passes_through():
    assert models.activation(jnp.sin) is jnp.sin


def test_unknown_activation_raises_listing_names():
    with pytest.raises(ValueError, match="activation must be one of.*'softplus'.*got 'sigmoid'"):
        models.activation("sigmoid")
    with pytest.raises(ValueError, match="activation"):
        models.activation(3)


def test_abs_family_rejects_non_finite():
    with pytest.raises(ValueError, match="b must be a finite number"):
        models.abs_family(0.5, float("nan"))


@pytest.mark.parametrize(
    "name, a, b",
    [("relu", 0.5, 0.5), ("abs", 0.0, 1.0), ("leaky_relu", 1.01 / 2, 0.99 / 2)],
)
def test_kinked_names_resolve_to_the_abs_family(name, a, b):
    act = models.activation(name)
    assert act == models.abs_family(a, b)
    # one-sided slopes a − b below the kink and a + b above it
    np.testing.assert_allclose(jax.vmap(jax.grad(act))(jnp.array([-1.0, 1.0])), [a - b, a + b])
