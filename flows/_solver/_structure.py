"""Values kept per structure of a pytree, as `jax.jit` keys its traces: the tree's structure,
each array leaf's shape and dtype, each other leaf's type and value."""

import equinox as eqx
import jax


def structure_key(tree):
    """The hashable key of `tree`'s structure (see the module), or None when a leaf that is
    not an array cannot be hashed."""
    leaves, treedef = jax.tree.flatten(tree)
    key = (treedef, *((x.shape, x.dtype) if eqx.is_array(x) else (type(x), x) for x in leaves))
    try:
        hash(key)
    except TypeError:
        return None
    return key


class ByStructure:
    """A store of values by `structure_key`, at most `kept` of them (emptied when full, so
    that many problems in one process do not grow it; no iteration, so a second thread may
    add while another reads). A tree without a key is never stored."""

    def __init__(self, kept: int = 64):
        self.kept = kept
        self._values: dict = {}

    def get(self, tree):
        """The value stored for `tree`'s structure, or None."""
        key = structure_key(tree)
        return None if key is None else self._values.get(key)

    def put(self, tree, value) -> None:
        """Store `value` for `tree`'s structure (nothing when it has no key)."""
        key = structure_key(tree)
        if key is None:
            return
        if len(self._values) >= self.kept:
            self._values.clear()
        self._values[key] = value
