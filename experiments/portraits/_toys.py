"""The two-weight toy models of the portraits and their linearisation."""

import dataclasses
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike

import flows
import models

from ._checks import _point


@dataclasses.dataclass(frozen=True)
class TwoWeightNet:
    """The seed's toy network f(w) = w2·σ(w1·x) at a fixed input x; hashable, compared by value.

    **Arguments:**

    - `activation`: a name accepted by `models.activation` ("tanh", "gelu", "softplus", …) or
      an elementwise callable. Use a smooth one: the linearisation needs Dh locally Lipschitz.
    - `x`: the input (a float).

    Calling it on `w`, shape `(2,)` = (w1, w2), returns the scalar output.

    **Reference:** Chizat, Oyallon & Bach 2019, §1 (the two-weight picture of lazy training).
    """

    activation: Any = "tanh"
    x: float = 1.0

    def __call__(self, w: Array) -> Array:
        sigma = models.activation(self.activation)
        return w[1] * sigma(w[0] * self.x)

    @property
    def formula(self) -> str:
        name = self.activation if isinstance(self.activation, str) else "σ"
        return f"w2·{name}(w1·{self.x:g})"


@dataclasses.dataclass(frozen=True)
class ScalarLinearNet:
    """The two-layer scalar linear net f(w) = w2·w1·x; hashable, compared by value.

    Under gradient flow of any loss of f, w1² − w2² is conserved.

    **Reference:** Du, Hu & Lee 2018 (balancedness of homogeneous layers); Saxe, McClelland &
    Ganguli 2014 (deep linear networks).
    """

    x: float = 1.0

    def __call__(self, w: Array) -> Array:
        return w[1] * w[0] * self.x

    @property
    def formula(self) -> str:
        return f"w2·w1·{self.x:g}"


@dataclasses.dataclass(frozen=True)
class ModelLoss:
    """F(w) = R(f(w)) = loss(f(w), y*) for a two-weight model f and a scalar target y*;
    hashable, compared by value (so equal objectives share one compilation).

    **Fields:** `model` (f, a function of `w`, shape `(2,)`, returning a scalar), `target`
    (y*, a float), `loss` (a `flows` loss object or name; default ½(y − y*)²).
    """

    model: Callable
    target: float = 1.0
    loss: Any = "squared"

    @property
    def formula(self) -> str:
        if self.loss == "squared":
            return f"½({getattr(self.model, 'formula', 'f(w)')} − {self.target:g})²"
        return f"R({getattr(self.model, 'formula', 'f(w)')}), y* = {self.target:g}"

    def __call__(self, w: Array) -> Array:
        prediction = jnp.reshape(self.model(w), (1,))
        return flows.get_loss(self.loss)(prediction, jnp.full((1,), self.target))


def balancedness(w: Array) -> Array:
    """w1² − w2², the conserved quantity of `ScalarLinearNet` flows (shape `(2,)` → scalar)."""
    return w[0] ** 2 - w[1] ** 2


class _TwoWeights(eqx.Module):
    """A model with one trainable leaf `w` (shape (2,)); the input is ignored."""

    w: Array
    fn: Callable = eqx.field(static=True)

    def __call__(self, x=None) -> Array:
        return jnp.reshape(self.fn(self.w), ())


def _formula(model: Callable, name: str = "f(w)") -> str:
    """ "f(w) = <model.formula>" if the model has a formula, else "f(w)"."""
    formula = getattr(model, "formula", None)
    return f"{name} = {formula}" if isinstance(formula, str) else name


def _at(module: eqx.Module, w: Array) -> eqx.Module:
    """`module` with its single trainable leaf replaced by `w`."""
    trainable, static = models.partition(module)
    leaves, treedef = jax.tree.flatten(trainable)
    return eqx.combine(jax.tree.unflatten(treedef, [w] * len(leaves)), static)


def _network(model: Callable, w0: Array, centred: bool) -> eqx.Module:
    net = _TwoWeights(w0, model)
    return models.symmetrize(net, "centred") if centred else net


def _evaluate(module: eqx.Module) -> Callable:
    return lambda w: jnp.reshape(_at(module, w)(None), ())


def linearized(model: Callable, w0: ArrayLike, *, centred: bool = False) -> Callable:
    """The linearisation f̄(w) = f(w0) + ∇f(w0)·(w − w0) of a two-weight model, as a function.

    Built with `models.linearize` on a one-leaf equinox module (a single `jax.jvp`; no
    Jacobian is formed), so it is differentiable and vmappable like `model` itself.

    **Arguments:**

    - `model`: f, any JAX-traceable function of `w`, shape `(2,)`, returning a scalar.
    - `w0`: the linearisation point, shape `(2,)`.
    - `centred`: linearise g(w) = f(w) − f(w0) instead (`models.symmetrize(…, "centred")`),
      so that g(w0) = 0 as Chizat et al.'s theorems assume.

    **Returns:**

    f̄ (or ḡ): a function of `w`, shape `(2,)`, returning a scalar.

    **Raises:**

    `ValueError` if `w0` is not a finite array of shape `(2,)`.

    **Reference:** Chizat, Oyallon & Bach 2019, §1 (h̄(w) = h(w0) + Dh(w0)(w − w0)).
    """
    w0 = _point("w0", w0)
    return _evaluate(models.linearize(_network(model, jnp.asarray(w0), centred)))


# ----------------------------------------------------------------------------- checks
