"""Flattening a parameter pytree to one vector, with a hashable spec (so that jitted code
that holds it is reused across calls, unlike the closure `ravel_pytree` returns)."""

import dataclasses
import math

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class FlatSpec:
    treedef: object
    shapes: tuple
    dtypes: tuple

    @classmethod
    def of(cls, tree):
        leaves, treedef = jax.tree.flatten(tree)
        return cls(treedef, tuple(x.shape for x in leaves), tuple(str(x.dtype) for x in leaves))

    @property
    def size(self) -> int:
        return sum(math.prod(s) for s in self.shapes)

    def ravel(self, tree):
        return jnp.concatenate([jnp.ravel(x) for x in jax.tree.leaves(tree)])

    def unravel(self, flat):
        leaves, start = [], 0
        for shape, dtype in zip(self.shapes, self.dtypes):
            size = math.prod(shape)
            leaves.append(flat[start : start + size].reshape(shape).astype(dtype))
            start += size
        return jax.tree.unflatten(self.treedef, leaves)
