"""A loss as a function of one flat parameter vector, and its Hessian-vector products: the
matrix-free pieces of the sharpness, the modified flows and the central flow."""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax

from .._checks import check_loss
from .._flat import FlatSpec, trainable_of


def flat_loss(loss: Callable, params: Any, name: str = "params"):
    """`(f, w, spec, static)`: f(w) = loss(params rebuilt from the flat trainable vector w).

    **Raises:** `ValueError` naming `name` (the caller's argument: no trainable leaves, not
    float64); `TypeError` naming `loss` (it does not return a float scalar)."""
    trainable, static = trainable_of(name, params)
    check_loss(loss, params)
    spec = FlatSpec.of(trainable)
    return flat_function(loss, spec, static), spec.ravel(trainable), spec, static


class FlatFunction(eqx.Module):
    """f(w) = loss(params rebuilt from w): a pytree whose static part is the loss and the
    spec, so that jitted code taking it is reused by every call on the same loss structure
    (a new closure per call was a new static argument, hence a new compilation)."""

    loss: Callable = eqx.field(static=True)
    spec: FlatSpec = eqx.field(static=True)
    static: Any

    def __call__(self, w):
        return self.loss(eqx.combine(self.spec.unravel(w), self.static))


def flat_function(loss, spec, static) -> FlatFunction:
    return FlatFunction(loss, spec, static)


def hvp(f, w, v):
    """H(w)v, forward over reverse."""
    return jax.jvp(jax.grad(f), (w,), (v,))[1]


def third(f, w, u, v):
    """∇³f(w)[u, v], the derivative of w ↦ H(w)u in the direction v (a jvp of an HVP)."""
    return jax.jvp(lambda x: hvp(f, x, u), (w,), (v,))[1]
