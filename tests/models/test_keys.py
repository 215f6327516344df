"""Every constructor that draws parameters refuses what is not a `jax.random` key, in one
line naming `key` (None or a seed used to fail inside JAX as "unexpected PRNG key type"),
and accepts both kinds of key, also under `jax.vmap`."""

import jax
import numpy as np
import pytest

import models

_BUILDS = [
    lambda key: models.TwoLayerNet(3, 10, key=key),
    lambda key: models.MLP(3, 4, 2, key=key),
    lambda key: models.DeepLinearNet.gaussian([2, 3, 1], scale=1.0, key=key),
    lambda key: models.DeepLinearNet.balanced([2, 3, 1], scale=1.0, key=key),
    lambda key: models.DeepLinearNet.decoupled(
        np.array([[2.0, 0.3], [0.1, 1.0]]), u0=0.1, hidden=3, key=key
    ),
]
_HINT = "key must be a jax.random key (jax.random.key(0) or jax.random.PRNGKey(0)), got "


@pytest.mark.parametrize("build", _BUILDS)
@pytest.mark.parametrize(
    "key, got",
    [
        (None, "None"),
        (0, "int 0"),
        (np.zeros(3), "an array of dtype float64 and shape (3,)"),
        (np.zeros((2, 2), np.uint32), "an array of dtype uint32 and shape (2, 2)"),
    ],
)
def test_a_bad_key_is_refused_naming_key(build, key, got):
    with pytest.raises(ValueError) as info:
        build(key)
    assert str(info.value) == _HINT + got


@pytest.mark.parametrize("build", _BUILDS)
def test_raw_and_typed_keys_draw_the_same_model(build):
    raw, typed = build(jax.random.PRNGKey(3)), build(jax.random.key(3))
    for a, b in zip(jax.tree.leaves(raw), jax.tree.leaves(typed), strict=True):
        np.testing.assert_array_equal(a, b)


def test_keys_are_accepted_under_vmap():
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    a = jax.vmap(lambda k: models.TwoLayerNet(3, 10, key=k).a)(keys)
    assert a.shape == (3, 10)
    np.testing.assert_array_equal(a[1], models.TwoLayerNet(3, 10, key=keys[1]).a)
