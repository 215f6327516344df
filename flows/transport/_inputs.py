"""Checks of the optimal-transport inputs: one line naming the argument."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_float64, check_positive

_MASS_TOL = 1e-10  # |Σ a − 1| accepted: the sum of n float64 weights normalised by hand
#: The largest max|c|/ε accepted: beyond it one rounding of the cost (2⁻⁵² relative) moves
#: (u + v − c)/ε by more than 0.2, so that no plan is resolved in float64; ε = 1e-100 on a
#: unit cost ran to `max_iters` (cost/ε did not overflow), ε = 5e-324 on NaN.
_MAX_SCALE = 1e15


def _concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def _at_run_time(x, bad, message: str):
    """`x`, raising `message` when the solve runs where `bad` holds: the check of a traced
    argument (under `jit`, `vmap`, `grad`), whose values are not known when it is called.
    Unchecked, ε = −1 under `jit` returned a plan with certificates of 1e-16, and a NaN
    cost or weights summing to 2 ran all `max_iters` iterations before "did not converge"."""
    return eqx.error_if(x, bad, f"{message} (checked at run time: the argument is traced)")


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
    good = jnp.all(jnp.isfinite(w)) & (jnp.min(w) >= 0) & (jnp.abs(jnp.sum(w) - 1.0) <= _MASS_TOL)
    return _at_run_time(w, ~good, f"{name}: weights must be finite, >= 0 and sum to 1")


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
    return _at_run_time(cost, ~jnp.all(jnp.isfinite(cost)), "cost: non-finite entries (NaN or inf)")


def check_eps(eps):
    """ε > 0 and finite (checked when concrete), one number: a concrete array of several ε
    failed deep inside with "Incompatible shapes for broadcasting" (vmap over ε instead)."""
    if _concrete(eps) and np.ndim(eps) == 0:
        return check_positive("eps", eps)
    if _concrete(eps):
        raise ValueError(
            f"eps must be one number, got an array of shape {np.shape(eps)} "
            "(for several ε, call once per ε or jax.vmap over it)"
        )
    check_float64("eps", eps)
    if jnp.ndim(eps) != 0:
        raise ValueError(f"eps must be one number, got an array of shape {jnp.shape(eps)}")
    return _at_run_time(eps, ~(jnp.isfinite(eps) & (eps > 0)), "eps must be finite and > 0")


def check_eps_for_cost(eps, cost, what: str = "a cost"):
    """A ValueError naming `eps` when max|c|/ε > 1e15 (values checked when concrete): the
    arguments (u + v − c)/ε are then uncertain by more than 0.2 from the cost's rounding alone
    (and beyond 1e154 their squares overflow): the iterations ran to `max_iters`. `what`
    names the cost in the message."""
    if not (_concrete(eps) and _concrete(cost)):
        return
    top = float(np.max(np.abs(np.asarray(cost))))
    if top / _MAX_SCALE > float(eps):
        low, high = float(np.min(np.asarray(cost))), float(np.max(np.asarray(cost)))
        raise ValueError(
            f"eps={float(eps):g} is too small for {what} with entries in [{low:g}, {high:g}]: "
            f"max|cost|/eps > {_MAX_SCALE:g}, where one rounding of the cost moves "
            "(u + v - cost)/eps by more than 0.2 and no plan is resolved in float64; "
            f"the smallest usable eps is max|cost| x "
            f"{1 / _MAX_SCALE:g} = {top / _MAX_SCALE:.3g}"
        )


def check_limits(tol, max_iters) -> tuple[float, int]:
    """(tol, max_iters) as a finite tol > 0 and an integer max_iters ≥ 1, or a ValueError
    naming the argument (a str tol failed with "could not convert string to float")."""
    tol = check_positive("tol", tol)
    if isinstance(max_iters, bool) or not isinstance(max_iters, (int, np.integer)) or max_iters < 1:
        raise ValueError(f"max_iters must be a positive integer, got {max_iters!r}")
    return tol, int(max_iters)


def check_init(init, a, b):
    """`init` as float64 potentials (u (n,), v (m,)), finite (checked when concrete), or a
    ValueError naming `init` and the shapes expected."""
    n, m = a.shape[0], b.shape[0]
    expected = f"a pair (u, v) of finite potentials of shapes ({n},) and ({m},)"
    if not isinstance(init, (tuple, list)) or len(init) != 2:
        shape = getattr(init, "shape", None)
        got = type(init).__name__ + ("" if shape is None else f" of shape {tuple(shape)}")
        raise ValueError(f"init must be {expected}, got {got}")
    check_float64("init", tuple(init))
    u, v = (jnp.asarray(p, dtype=float) for p in init)
    if u.shape != (n,) or v.shape != (m,):
        raise ValueError(f"init must be {expected}, got shapes {u.shape} and {v.shape}")
    for name, p in (("u", u), ("v", v)):
        if _concrete(p) and not np.all(np.isfinite(np.asarray(p))):
            raise ValueError(f"init: the potential {name} holds NaN or inf; expected {expected}")
    # (u + c, v − c) is the same plan: centred, u + v − c loses no digits to a large shift
    # (KL from (1e10, 0) stopped at max_iters=100000 with an L1 error of 3e-6)
    shift = jnp.mean(u)
    return u - shift, v + shift


def check_schedule(eps_schedule, eps) -> list:
    """The ε values of `eps_schedule`: a sequence of numbers > 0, strictly decreasing and
    above `eps` (compared when concrete), or a ValueError naming `eps_schedule`."""
    if eps_schedule is None:
        return []
    listed = isinstance(eps_schedule, (list, tuple))
    if not listed and getattr(eps_schedule, "ndim", None) != 1:
        raise ValueError(
            "eps_schedule must be a sequence of decreasing eps values above eps "
            f"(e.g. [1, 0.1]), got {type(eps_schedule).__name__} {eps_schedule!r}"
        )
    stages = []
    for e in eps_schedule:
        try:
            stages.append(check_eps(e))
        except ValueError as error:
            raise ValueError(f"eps_schedule: {error}") from None
    values = [float(e) for e in [*stages, eps] if _concrete(e)]
    if len(values) == len(stages) + 1:
        for k, (high, low) in enumerate(zip(values, values[1:])):
            if not high > low:
                what = "eps" if k == len(stages) - 1 else f"eps_schedule[{k + 1}]={low:g}"
                raise ValueError(
                    f"eps_schedule must decrease strictly to above eps={float(eps):g}; "
                    f"eps_schedule[{k}]={high:g} is not above {what}"
                    + (f"={low:g}" if what == "eps" else "")
                )
    return stages
