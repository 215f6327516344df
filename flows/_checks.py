"""Argument checks shared by the public functions: one clear error naming the argument."""

import inspect
import math
import os
import sys
import warnings
from collections.abc import Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


def check_number(name: str, value, kind=float):
    """`value` as a finite float (or an int when `kind is int`), or a ValueError naming it:
    a str (`"10"`) or a bool is refused, not converted."""
    try:
        if isinstance(value, (bool, str)):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(number) or math.isinf(number):
        raise ValueError(f"{name} must be finite, got {number}")
    if kind is int:
        if number != int(number):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        return int(number)
    return number


def check_flag(name: str, value) -> bool:
    """`value` if it is a bool (numpy's included), else a `TypeError` naming it: "yes", "no"
    or 0.5 would be taken by truth value ("no" is true)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def check_positive(name: str, value) -> float:
    """`value` as a float, finite and > 0 (`check_number`), or a ValueError naming it."""
    value = check_number(name, value)
    if value <= 0:
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
        if dtype is not None and jnp.issubdtype(dtype, jnp.complexfloating):
            raise ValueError(
                f"{name} holds {dtype} arrays (first of shape {tuple(leaf.shape)}); a gradient "
                "flow moves real parameters (jax.grad of a real loss in a complex parameter "
                "is the conjugate of the descent direction): hold the real and imaginary "
                "parts as two float64 arrays"
            )
        if dtype is not None and jnp.issubdtype(dtype, jnp.floating) and dtype != jnp.float64:
            raise ValueError(
                f"{name} holds {dtype} arrays (first of shape {tuple(leaf.shape)}); gradflows "
                f"computes in float64: cast them, e.g. jax.tree.map(lambda a: a.astype("
                f"'float64') if eqx.is_inexact_array(a) else a, model), or build the model "
                "after importing flows"
            )


def check_finite(name: str, tree) -> None:
    """A ValueError naming `name` if a floating leaf of `tree` holds NaN or inf. Checked in
    numpy on the host: eager jax operations would compile a program per leaf shape."""
    for leaf in jax.tree.leaves(tree):
        if isinstance(leaf, (jax.Array, np.ndarray, float)):
            values = np.asarray(leaf)
            if jnp.issubdtype(values.dtype, jnp.inexact) and not np.all(np.isfinite(values)):
                raise ValueError(f"{name}: non-finite values (NaN or inf)")


def check_observables(observables, params=None, argument: str = "observables") -> tuple:
    """`observables` (`{name: fn(params) -> array}`, or None) as sorted `(name, fn)` pairs.
    With `params` (the start of the flow), each is also traced once on it
    (`equinox.filter_eval_shape`: no computation), so that an observable written for another
    model fails now, in one line naming it, not inside the solve.
    **Raises:** `TypeError` naming `observables` (not a dict) or the entry whose value is not
    a function (a list of functions used to fail as "'list' object has no attribute
    'items'", a string as "'str' object is not callable" inside the solve); `ValueError`
    naming `observables['name']` when it fails on `params` (a shape mismatch: written for
    another model) and `TypeError` naming it when it returns no number (a str, None).
    `argument`: the name in the messages (`central_flow`'s `predicted` was called
    observables)."""
    if observables is None:
        return ()
    if not isinstance(observables, Mapping):
        raise TypeError(
            f"{argument} must be a dict {{name: fn(params) -> array}}, got "
            f"{type(observables).__name__}"
        )
    for name, fn in observables.items():
        if not isinstance(name, str):
            raise TypeError(f"{argument}: each name must be a str, got {name!r}")
        if not callable(fn):
            raise TypeError(
                f"{argument}[{name!r}] must be a function of the parameters, got "
                f"{type(fn).__name__}"
            )
        if params is not None:
            _check_observable(f"{argument}[{name!r}]", fn, params)
    return tuple(sorted(observables.items()))


def _check_observable(entry: str, fn, params) -> None:
    try:
        out = eqx.filter_eval_shape(fn, params)
    except Exception as e:  # whatever the user's function raises on these parameters
        first = (str(e).strip().splitlines() or [""])[0][:200]
        raise ValueError(
            f"{entry} fails on the parameters of this flow ({type(e).__name__}: "
            f"{first}); is it written for another model?"
        ) from None
    leaves = jax.tree.leaves(out)
    numeric = (bool, int, float, complex, np.number, np.bool_)
    for leaf in leaves:
        dtype = getattr(leaf, "dtype", None)
        ok = isinstance(leaf, numeric) or (
            dtype is not None and (jnp.issubdtype(dtype, jnp.number) or dtype == jnp.bool_)
        )
        if not ok:
            raise TypeError(
                f"{entry} must return numbers (an array or a pytree of arrays), "
                f"got {type(leaf).__name__} {leaf!r:.60}"
            )
    if not leaves:
        raise TypeError(f"{entry} must return numbers, got {out!r:.60}")


def check_ts(ts, t1: float) -> np.ndarray:
    try:
        ts = np.asarray(ts, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"ts must be an array of flow times, got {ts!r} ({e})") from None
    if ts.ndim != 1 or ts.size == 0:
        raise ValueError(f"ts must be a non-empty 1-D array, got shape {ts.shape}")
    check_finite("ts", ts)
    if np.any(np.diff(ts) <= 0):
        raise ValueError("ts must be strictly increasing")
    if ts[0] < 0 or ts[-1] > t1:
        raise ValueError(f"ts must lie in [0, t1={t1}], got [{ts[0]}, {ts[-1]}]")
    return ts


def warn_low_precision(name: str, value, stacklevel: int = 3) -> None:
    """Warn, naming `name`, when `value` is a floating array below float64 (float32 data with
    a float64 model was taken silently). It is promoted to float64 by the caller (or by
    JAX, for data a loss closes over), but its values keep their float32 rounding, relative
    6e-8, which then bounds what a float64 flow resolves."""
    dtype = getattr(value, "dtype", None)
    if dtype is None or not jnp.issubdtype(dtype, jnp.floating) or dtype == jnp.float64:
        return
    warnings.warn(
        f"{name} is {dtype} (shape {tuple(jnp.shape(value))}), promoted to float64: its values "
        f"keep their {dtype} rounding (relative {float(jnp.finfo(dtype).eps):.1g}), which "
        "bounds what the float64 flow resolves; build the data in float64",
        UserWarning,
        stacklevel=stacklevel,
    )


def _check_signature(loss, params) -> None:
    """`loss` must take the parameters alone: a two-argument loss R(pred, target) failed
    inside equinox as "missing 1 required positional argument"."""
    try:
        signature = inspect.signature(loss)
    except (TypeError, ValueError):  # a builtin or C callable: left to the call
        return
    try:
        signature.bind(params)
    except TypeError as e:
        name = getattr(loss, "__name__", type(loss).__name__)
        raise TypeError(
            f"loss must be a function of the parameters alone, loss(params) -> float64 "
            f"scalar; got {name}{signature} ({e}): close over the data, e.g. "
            "lambda model: R(jax.vmap(model)(X), Y)"
        ) from None


def check_loss(loss, params) -> None:
    """`loss(params)` must be one float scalar, the objective a gradient flow descends: found
    by `equinox.filter_make_jaxpr` (tracing, no computation). **Raises:** `TypeError`
    naming `loss` (a vector of per-example losses, a float32, integer, boolean or complex
    scalar, a tuple; a function of more than the parameters, named with its signature).
    **Warns:** `UserWarning` when the loss closes over float32 (or lower) arrays, its data
    (`warn_low_precision`)."""
    if not callable(loss):
        raise TypeError(f"loss must be a function of the parameters, got {type(loss).__name__}")
    _check_signature(loss, params)
    closed, out, static = eqx.filter_make_jaxpr(loss)(params)
    for const in closed.consts:  # arrays the loss closes over: its data
        if jnp.ndim(const) >= 1:
            warn_low_precision("an array the loss closes over (its data?)", const, 4)
    leaves = jax.tree.leaves(eqx.combine(out, static))
    if len(leaves) == 1 and getattr(leaves[0], "shape", None) == ():
        dtype = leaves[0].dtype
        if dtype == jnp.float64:
            return
        if jnp.issubdtype(dtype, jnp.floating):
            raise TypeError(
                f"loss must return a float64 scalar, got {dtype}: the flow is computed in "
                "float64 and a lower-precision loss caps its accuracy (look for an astype "
                "or a constant of that dtype in the loss)"
            )
        if jnp.issubdtype(dtype, jnp.complexfloating):
            raise TypeError(
                f"loss must return a real float scalar, got a complex one ({dtype}): a "
                "gradient flow descends a real objective (take e.g. the squared modulus)"
            )
        kind = "a boolean" if dtype == jnp.bool_ else "an integer"
        raise TypeError(
            f"loss must return a float scalar, got {kind} one ({dtype}): "
            f"{kind} loss has no gradient"
        )
    shapes = "; ".join(f"{getattr(x, 'dtype', type(x).__name__)} of shape "
                       f"{tuple(getattr(x, 'shape', ()))}" for x in leaves)  # fmt: skip
    raise TypeError(
        f"loss must return one float scalar (shape ()), got {shapes or 'nothing'}; reduce "
        "per-example losses with a sum or a mean"
    )


def user_stacklevel() -> int:
    """`warnings.warn`'s stacklevel, for a warning issued in the caller of this function, of
    the first frame outside the `flows` package: the user's call, however many frames the
    public function runs through (a fixed count pointed into `flows/games/` for the game
    maps and `gda_flow`, whose public functions sit one frame further out)."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(2), 2  # the frame that calls warnings.warn is level 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level
