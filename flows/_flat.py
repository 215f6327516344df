"""Flattening a parameter pytree to one vector, with a hashable spec (so that jitted code
that holds it is reused across calls, unlike the closure `ravel_pytree` returns), and a
model's outputs as a function of the flat parameters."""

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from models import partition

from ._checks import check_float64

MODEL_KIND = "an equinox Module called on one input x of shape (d,)"


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
        leaves = jax.tree.leaves(tree)
        if any(isinstance(x, jax.core.Tracer) for x in leaves):
            return jnp.concatenate([jnp.ravel(x) for x in leaves])
        # Concrete leaves are joined on the host: eager jax would compile a program per leaf
        # shape (and `jnp.asarray` of the result one more), on a cold start.
        return jax.device_put(np.concatenate([np.ravel(np.asarray(x)) for x in leaves]))

    def unravel(self, flat):
        leaves, start = [], 0
        for shape, dtype in zip(self.shapes, self.dtypes):
            size = math.prod(shape)
            leaves.append(flat[start : start + size].reshape(shape).astype(dtype))
            start += size
        return jax.tree.unflatten(self.treedef, leaves)

    def unravel_rows(self, flat):
        """`unravel` of each row of `flat` `(T, size)`, in numpy: leaves `(T, *shape)`. Host
        side, so that a new T compiles nothing (eager jax slices would, once per shape)."""
        flat = np.asarray(flat)
        leaves, start = [], 0
        for shape, dtype in zip(self.shapes, self.dtypes):
            size = math.prod(shape)
            block = flat[:, start : start + size].reshape((len(flat), *shape))
            leaves.append(block.astype(dtype))
            start += size
        return jax.tree.unflatten(self.treedef, leaves)


def trainable_of(name: str, tree, what: str = "a pytree"):
    """`partition(tree)` after the checks every entry point makes on what moves: some
    trainable (inexact array) leaves, float64 (`check_float64`). `what` says what `name`
    must be. **Raises:** `ValueError` naming `name`."""
    try:
        trainable, static = partition(tree)
    except Exception:  # not a pytree at all
        trainable, static = None, None
    if trainable is None or not jax.tree.leaves(trainable):
        numbers = [
            x for x in jax.tree.leaves(tree) if isinstance(x, (int, float)) or eqx.is_array(x)
        ]
        kinds = sorted({str(getattr(x, "dtype", type(x).__name__)) for x in numbers})
        held = (
            f" (it holds {', '.join(kinds)}: integer and Python numbers do not move)"
            if kinds
            else ""
        )
        raise ValueError(
            f"{name} must be {what} holding trainable float64 arrays; got "
            f"{type(tree).__name__}, which has none{held}"
        )
    check_float64(name, trainable)
    if not sum(math.prod(np.shape(leaf)) for leaf in jax.tree.leaves(trainable)):
        raise ValueError(f"{name} must hold at least one trainable entry; its arrays are empty")
    return trainable, static


def flat_model(static, spec, X):
    """w ↦ vec(h(w)) on the inputs X, for flat trainable parameters w."""

    def h(wf):
        return jnp.ravel(jax.vmap(eqx.combine(spec.unravel(wf), static))(X))

    return h


def outputs(model, X):
    """(w0, h, (static, spec, X)): the flat trainable parameters, w ↦ vec(h(w)) on the inputs
    X, and the pieces that rebuild h inside a jitted function."""
    trainable, static = trainable_of("model", model, MODEL_KIND)
    spec = FlatSpec.of(trainable)
    X = jnp.asarray(X, dtype=jnp.float64)
    return spec.ravel(trainable), flat_model(static, spec, X), (static, spec, X)


@eqx.filter_jit
def jacobian_rows(static, spec, w, X):
    """Dh(w) on the inputs X, shape (n·k, p), by reverse mode: one compiled program per
    model structure and input shape (eagerly, each of its operations compiles apart)."""
    return jax.jacrev(flat_model(static, spec, X))(w)


def jacobian(model, X):
    """(J, w0, h): J = Dh(w0), shape (n·k, p), formed explicitly by reverse mode."""
    w0, h, (static, spec, X) = outputs(model, X)
    return jacobian_rows(static, spec, w0, X), w0, h
