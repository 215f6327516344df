"""Argument checks shared by the public functions: one clear error naming the argument."""

import jax
import jax.numpy as jnp
import numpy as np


def check_positive(name: str, value) -> float:
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return value


def check_float64(name: str, tree) -> None:
    """The one precision rule of every entry point: floating arrays in `tree` (the state
    that moves) must be float64, and JAX's float64 mode must be on. Refused, not promoted:
    a silent cast would hand back parameters of another dtype than were given, and the
    caller's float32 model may be deliberate."""
    if not jax.config.jax_enable_x64:
        raise ValueError(
            f"{name}: jax_enable_x64 is off (it was turned off after importing flows); "
            "gradflows computes in float64: jax.config.update('jax_enable_x64', True)"
        )
    for leaf in jax.tree.leaves(tree):
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and jnp.issubdtype(dtype, jnp.floating) and dtype != jnp.float64:
            raise ValueError(
                f"{name} holds {dtype} arrays (first of shape {tuple(leaf.shape)}); gradflows "
                f"computes in float64: cast them, e.g. jax.tree.map(lambda a: a.astype("
                f"'float64') if eqx.is_inexact_array(a) else a, model), or build the model "
                "after importing flows"
            )


def check_finite(name: str, tree) -> None:
    for leaf in jax.tree.leaves(tree):
        if isinstance(leaf, (jax.Array, np.ndarray, float)) and jnp.issubdtype(
            jnp.asarray(leaf).dtype, jnp.inexact
        ):
            if not bool(jnp.all(jnp.isfinite(leaf))):
                raise ValueError(f"{name} contains non-finite values (NaN or inf)")


def check_ts(ts, t1: float) -> np.ndarray:
    ts = np.asarray(ts, dtype=np.float64)
    if ts.ndim != 1 or ts.size == 0:
        raise ValueError(f"ts must be a non-empty 1-D array, got shape {ts.shape}")
    if not np.all(np.isfinite(ts)):
        raise ValueError("ts contains non-finite values")
    if np.any(np.diff(ts) <= 0):
        raise ValueError("ts must be strictly increasing")
    if ts[0] < 0 or ts[-1] > t1:
        raise ValueError(f"ts must lie in [0, t1={t1}], got [{ts[0]}, {ts[-1]}]")
    return ts
