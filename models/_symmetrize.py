"""`symmetrize`: make the model output exactly zero at initialisation."""

from typing import Literal

import equinox as eqx
import jax
from jaxtyping import Array, PyTree

from . import _checks
from ._frozen import Frozen, read_frozen


def _difference(a: PyTree[Array], b: PyTree[Array]) -> PyTree[Array]:
    return jax.tree_util.tree_map(lambda u, v: u - v, a, b)


class Doubled(eqx.Module):
    """g(w1, w2)(x) = f(w1, x) − f(w2, x), both copies trained, w1 = w2 = w0 at the start.

    For a two-layer net this is the paired-neuron construction: neurons (a, b) and (−a, b).

    **Fields:** `plus`, `minus` (trainable copies of the model), static `how = "doubled"`.

    **Reference:** Chizat, Oyallon & Bach 2019, §3 (paired neurons, h(w0) = 0).
    """

    plus: eqx.Module
    minus: eqx.Module
    how: str = eqx.field(static=True, default="doubled", init=False)

    def __call__(self, x: Array) -> PyTree[Array]:
        """Evaluate plus(x) − minus(x) on one input `x`."""
        return _difference(self.plus(x), self.minus(x))


class Centred(eqx.Module):
    """g(w)(x) = f(w, x) − f(w0, x), with w0 frozen.

    **Fields:** `model` (trainable), `model0` (`Frozen` copy at w0), static `how = "centred"`.

    **Reference:** Chizat, Oyallon & Bach 2019, §3 (CNN experiments subtract a frozen copy).
    """

    model: eqx.Module
    model0: Frozen
    how: str = eqx.field(static=True, default="centred", init=False)

    def __call__(self, x: Array) -> PyTree[Array]:
        """Evaluate model(x) − model0(x) on one input `x`."""
        return _difference(self.model(x), read_frozen(self.model0)(x))


def symmetrize(
    model: eqx.Module, how: Literal["doubled", "centred"] = "doubled"
) -> Doubled | Centred:
    """Wrap a model so that its output is exactly zero at the current parameters w0.

    **Arguments:**

    - `model`: any callable `eqx.Module`.
    - `how`: "doubled" (two trained copies, output plus − minus) or "centred" (one trained
      copy minus a frozen copy).

    **Returns:**

    A `Doubled` or `Centred` module whose `how` field records the choice.

    **Raises:**

    `ValueError` if `how` is not "doubled" or "centred", or `model` is not an `eqx.Module`
    or has non-finite parameters.

    **Reference:** Chizat, Oyallon & Bach 2019, §3 (paired neurons for two-layer nets, a
    subtracted frozen copy for CNNs).
    """
    _checks.equinox_module("model", model)
    if how == "doubled":
        return Doubled(plus=model, minus=model)
    if how == "centred":
        return Centred(model=model, model0=Frozen(model))
    raise ValueError(f"how must be 'doubled' or 'centred', got {how!r}")
