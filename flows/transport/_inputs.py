"""Checks of the optimal-transport inputs: one line naming the argument."""

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_float64, check_positive

_MASS_TOL = 1e-10  # |Σ a − 1| accepted: the sum of n float64 weights normalised by hand


def _concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def check_weights(name: str, w, size: int | None = None):
    """`w` as a float64 vector of nonnegative weights summing to 1 (values checked when
    concrete), or a ValueError naming `name`."""
    check_float64(name, w)
    w = jnp.asarray(w, dtype=float)
    if w.ndim != 1 or w.shape[0] == 0:
        raise ValueError(f"{name} must be a nonempty vector of weights (n,), got shape {w.shape}")
    if _concrete(w):
        values = np.asarray(w)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name}: non-finite weights (NaN or inf)")
        if values.min() < 0:
            raise ValueError(f"{name}: weights must be >= 0, got a minimum of {values.min():.3g}")
        if abs(values.sum() - 1.0) > _MASS_TOL:
            raise ValueError(f"{name}: weights must sum to 1, got {values.sum():.17g}")
    return w


def check_cost(cost, n: int, m: int):
    """`cost` as a finite float64 (n, m) matrix (values checked when concrete)."""
    check_float64("cost", cost)
    cost = jnp.asarray(cost, dtype=float)
    if cost.shape != (n, m):
        raise ValueError(f"cost of shape {cost.shape} does not match a ({n},) and b ({m},)")
    if _concrete(cost):
        bad = ~np.isfinite(np.asarray(cost))
        if bad.any():
            raise ValueError(f"cost: {int(bad.sum())} non-finite entries (NaN or inf)")
    return cost


def check_eps(eps):
    """ε > 0 and finite (checked when concrete), one number: a concrete array of several ε
    failed deep inside with "Incompatible shapes for broadcasting" (vmap over ε instead)."""
    if _concrete(eps) and jnp.ndim(eps) == 0:
        return check_positive("eps", eps)
    if _concrete(eps):
        raise ValueError(
            f"eps must be one number, got an array of shape {jnp.shape(eps)} "
            "(for several ε, call once per ε or jax.vmap over it)"
        )
    check_float64("eps", eps)
    return eps
