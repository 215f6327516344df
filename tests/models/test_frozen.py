import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

import models


class _Holder(eqx.Module):
    w: jax.Array
    frozen: models.Frozen


def test_partition_puts_everything_inside_frozen_in_static():
    holder = _Holder(w=jnp.ones(3), frozen=models.Frozen({"a": jnp.ones(2), "b": jnp.zeros(4)}))
    trainable, static = models.partition(holder)
    assert [x.shape for x in jax.tree_util.tree_leaves(trainable)] == [(3,)]
    assert static.frozen is holder.frozen
    assert eqx.combine(trainable, static).frozen.value["b"].shape == (4,)


def test_read_frozen_blocks_gradients():
    def f(w):
        return jnp.sum(models.read_frozen(models.Frozen(w)) * w)

    w = jnp.array([1.0, 2.0, 3.0])
    assert jnp.array_equal(jax.grad(f)(w), w)


def test_read_frozen_refuses_what_is_not_frozen_naming_it():
    # used to fail as "'int' object has no attribute 'value'"
    for value, kind in ((3, "int"), (jnp.ones(2), "ArrayImpl"), ({"value": 1.0}, "dict")):
        with pytest.raises(TypeError) as info:
            models.read_frozen(value)
        assert str(info.value) == (
            f"frozen must be a models.Frozen, got {kind}: wrap the value as models.Frozen(value)"
        )
