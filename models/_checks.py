"""Argument checks shared by the constructors; each raises `ValueError` naming the argument."""

import math
import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


def positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def float64_array(name: str, array):
    """`array` as a float64 JAX array: integers are converted (exactly, below 2^53); other
    floating or complex dtypes (float32) are refused, as `flows.gradient_flow` refuses them:
    a silent cast would hide a lower-precision model. **Raises:** `ValueError` naming it."""
    try:
        array = jnp.asarray(array)
    except TypeError:  # a str said "Value 'a' with dtype <U1 is not a valid JAX array type"
        raise ValueError(f"{name} must be a numeric array, got {type(array).__name__}") from None
    if jnp.issubdtype(array.dtype, jnp.integer) or array.dtype == jnp.bool_:
        return array.astype(jnp.float64)
    if array.dtype != jnp.float64:
        raise ValueError(
            f"{name} is {array.dtype}; gradflows computes in float64: pass float64 arrays "
            f"(np.asarray(w, np.float64)), or build them after importing flows or models"
        )
    return array


def fits_in_memory(name: str, count: int) -> None:
    """Refuse a model of `count` float64 parameters that cannot fit in this machine's memory
    (it would die in the allocator, or later, without saying why). **Raises:** `ValueError`
    naming `name` with the count and both sizes."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX: no limit known
        return
    if 8 * count > memory:
        raise ValueError(
            f"{name}: the model would have {count:.3g} parameters, {8 * count / 2**30:.3g} GiB "
            f"in float64, more than this machine's memory ({memory / 2**30:.3g} GiB)"
        )


def positive_float(name: str, value) -> float:
    if isinstance(value, (bool, np.bool_, str, bytes)):  # float(True) and float("1") passed
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}") from None
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return number


def finite_array(name: str, array, ndim: int | None = None):
    """Check shape and finiteness of a user array; tracers are checked for shape only."""
    if isinstance(array, jax.core.Tracer):
        values = None
    else:
        values = np.asarray(array)
        if not np.issubdtype(values.dtype, np.number):
            raise ValueError(f"{name} must be a numeric array, got dtype {values.dtype}")
    shape = np.shape(array)
    if ndim is not None and len(shape) != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {shape}")
    if values is not None and not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must be finite, got non-finite entries")
    return array


def prng_key(name: str, key):
    """Refuse what is not a `jax.random` key: a typed key (`jax.random.key(0)`, shape ()) or a
    raw uint32 key (`jax.random.PRNGKey(0)`, shape (2,)); tracers of either are accepted.
    A missing key (None) or a seed (0) used to fail inside JAX as "unexpected PRNG key type".
    **Raises:** `ValueError` naming `name`."""
    dtype, shape = getattr(key, "dtype", None), getattr(key, "shape", None)
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key) and shape == ():
        return key
    if dtype == np.uint32 and shape is not None and len(shape) == 1:
        return key
    if dtype is not None and shape is not None:
        got = f"an array of dtype {dtype} and shape {tuple(shape)}"
    elif key is None:
        got = "None"
    else:
        got = f"{type(key).__name__} {key!r}"
    raise ValueError(
        f"{name} must be a jax.random key (jax.random.key(0) or jax.random.PRNGKey(0)), got {got}"
    )


def input_shape(x, size: int) -> None:
    if np.shape(x) != (size,):
        raise ValueError(f"x must have shape ({size},), got {np.shape(x)}; use jax.vmap to batch")


def finite_parameters(name: str, module) -> None:
    """Check that every floating-point array leaf of a module is finite (tracers skipped)."""
    for leaf in jax.tree_util.tree_leaves(eqx.filter(module, eqx.is_inexact_array)):
        if not isinstance(leaf, jax.core.Tracer) and not np.all(np.isfinite(np.asarray(leaf))):
            raise ValueError(f"{name} has non-finite parameters (NaN or inf)")


def equinox_module(name: str, value) -> None:
    if not isinstance(value, eqx.Module):
        raise ValueError(f"{name} must be an equinox Module, got {type(value).__name__}")
    if not callable(value):  # a models.Frozen was wrapped, then "'Frozen' object is not callable"
        raise ValueError(f"{name} must be a callable equinox Module, got {type(value).__name__}")
    finite_parameters(name, value)
