"""Argument checks shared by the public functions: one clear error naming the argument."""

import jax
import jax.numpy as jnp
import numpy as np


def check_positive(name: str, value) -> float:
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return value


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
