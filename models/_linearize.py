"""`linearize`: the first-order Taylor model h̄(w) = h(w0) + Dh(w0)(w − w0)."""

import equinox as eqx
import jax
from jaxtyping import Array, PyTree

from . import _checks
from ._frozen import Frozen, partition, read_frozen


class Linearized(eqx.Module):
    """The linearisation of a model at its initial parameters w0.

    **Fields:**

    - `model`: the trainable copy (parameters w); same pytree as the linearised model.
    - `model0`: `Frozen` copy of the model at w0.

    Calling it on one input x returns h(w0, x) + D_w h(w0, x)(w − w0), computed with a single
    `jax.jvp` (no Jacobian is formed). Its output has the model's output structure.

    **Reference:** Chizat, Oyallon & Bach 2019, §1–2 (the linearised model h̄).
    """

    model: eqx.Module
    model0: Frozen

    def __call__(self, x: Array) -> PyTree[Array]:
        """Evaluate h̄(w, x) = h(w0, x) + Dh(w0, x)(w − w0) on one input `x`."""
        params, static = partition(self.model)
        params0, _ = partition(read_frozen(self.model0))
        tangent = jax.tree_util.tree_map(lambda w, w0: w - w0, params, params0)
        out0, dout = jax.jvp(lambda p: eqx.combine(p, static)(x), (params0,), (tangent,))
        return jax.tree_util.tree_map(lambda a, b: a + b, out0, dout)


def linearize(model: eqx.Module) -> Linearized:
    """Linearise a model in its parameters around its current parameters w0.

    **Arguments:**

    - `model`: any callable `eqx.Module` (array fields are parameters; static fields, non-float
      arrays and anything inside a `Frozen` are held fixed), called as `model(x)` with any
      output pytree.

    **Returns:**

    A `Linearized` module equal to `model` at w0, affine in its trainable parameters.

    **Raises:**

    `ValueError` if `model` is not an `eqx.Module` or has non-finite parameters.

    **Reference:** Chizat, Oyallon & Bach 2019, §1 (h̄(w) = h(w0) + Dh(w0)(w − w0)).
    """
    _checks.equinox_module("model", model)
    return Linearized(model=model, model0=Frozen(model))
