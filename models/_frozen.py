"""`Frozen`: a marker for arrays the gradient flow must not move."""

import equinox as eqx
import jax
from jaxtyping import PyTree


class Frozen(eqx.Module):
    """Wraps a pytree that is held fixed: it is never trainable and never differentiated.

    **Arguments:**

    - `value`: any pytree (e.g. a frozen copy w0 of a model).

    Modules holding a `Frozen` read it through [`read_frozen`][models.read_frozen], which
    applies `jax.lax.stop_gradient` to its array leaves, and [`partition`][models.partition]
    puts all of it in the static half.
    """

    value: PyTree


def read_frozen(frozen: Frozen) -> PyTree:
    """The frozen value, with `jax.lax.stop_gradient` on every array leaf.

    Non-array leaves (e.g. an activation function stored as a field) pass through unchanged.

    **Raises:** `TypeError` naming `frozen` when it is not a `Frozen` (an array or a number
    used to fail as "object has no attribute 'value'").
    """
    if not isinstance(frozen, Frozen):
        raise TypeError(
            f"frozen must be a models.Frozen, got {type(frozen).__name__}: wrap the value as "
            "models.Frozen(value)"
        )
    return jax.tree_util.tree_map(
        lambda leaf: jax.lax.stop_gradient(leaf) if eqx.is_array(leaf) else leaf, frozen.value
    )


def partition(pytree: PyTree) -> tuple[PyTree, PyTree]:
    """Split a pytree into (trainable, static), with everything inside a `Frozen` static.

    **Arguments:**

    - `pytree`: any pytree, typically an `eqx.Module`.

    **Returns:**

    `(trainable, static)`: the floating-point arrays outside any `Frozen`, and the rest, as
    two pytrees of the same structure with `None` holes. Rejoin them with `eqx.combine`.
    """
    return eqx.partition(pytree, eqx.is_inexact_array, is_leaf=lambda x: isinstance(x, Frozen))
