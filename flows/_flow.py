"""Gradient flow dθ/dt = −∇loss(θ) of any pytree, equinox modules included."""

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from models import partition

from ._checks import check_finite, check_flag, check_loss, check_observables, user_stacklevel
from ._flat import FlatSpec, trainable_of
from ._integrate import integrate
from ._settings import SolveSettings, resolve_flow_inputs


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """A solved gradient flow.

    - `ts`: save times, shape `(T,)`, in flow time (the ODE's own units; a gradient-descent
      step η covers time η).
    - `params`: the parameter pytree with a leading axis of length T (non-trainable leaves
      unchanged, without that axis), or `None` when `save_params=False`.
    - `loss`: shape `(T,)`.
    - `observables`: `{name: array}` with leading axis T.
    - `stats`: `SolveStats` as a dict: steps (accepted, rejected), gradient and
      Hessian-vector evaluations, chunks, the solvers used and the result code.
    - `config`: `SolveSettings.to_dict()` of the settings used, and `t1` (gradient
      descent: `solver="gradient_descent"`, `eta`, `t1`).
    - `undefined`: `{name: times}` for each observable that is undefined (not finite) at
      some save times, with those times; the values there are left as computed (NaN or
      inf). Empty when every observable is defined everywhere.
    """

    ts: np.ndarray
    params: Any
    loss: np.ndarray
    observables: dict
    stats: dict
    config: dict
    undefined: dict = dataclasses.field(default_factory=dict)

    def at(self, i: int):
        """The parameter pytree at save index `i` (an integer in [−T, T), T = len(ts); the
        time is `ts[i]`). **Raises:** `ValueError` without saved parameters; `TypeError` or
        `IndexError` naming `i`."""
        if self.params is None:
            raise ValueError("this trajectory was solved with save_params=False")
        if np.ndim(i) == 0 and np.issubdtype(np.asarray(i).dtype, np.integer):
            i = int(i)  # a 0-d integer array, e.g. jnp.argmin(traj.loss), was refused
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(
                f"i must be an integer save index, got {i!r}; the save times are ts (for "
                "the one nearest a time t: traj.at(int(np.abs(traj.ts - t).argmin())))"
            )
        if not -len(self.ts) <= i < len(self.ts):
            raise IndexError(f"i={i} is out of range for {len(self.ts)} save times")
        trainable, static = partition(self.params)
        return eqx.combine(jax.tree.map(lambda a: a[i], trainable), static)


class UndefinedObservableWarning(RuntimeWarning):
    """An observable is not finite at some save times while the flow itself is: the quantity
    is undefined there (a margin normalised by a zero norm, an angle to a zero vector). It
    is not a failure of the flow; `Trajectory.undefined` lists the times."""


def undefined_observables(ts: np.ndarray, observables: dict) -> dict:
    """`{name: times}` where an observable is not finite (any entry), with one
    `UndefinedObservableWarning` per such observable naming it and the first time."""
    undefined = {}
    for name, values in observables.items():
        leaves = [np.asarray(x).reshape(len(ts), -1) for x in jax.tree.leaves(values)]
        bad = ~np.all(np.isfinite(np.concatenate(leaves, axis=1)), axis=1)
        if bad.any():
            undefined[name] = np.asarray(ts)[bad]
            warnings.warn(
                f"observable {name!r} is undefined (not finite) at {int(bad.sum())} of "
                f"{len(ts)} save times, first at t={undefined[name][0]:.6g}; the flow itself is "
                f"finite (Trajectory.undefined[{name!r}] lists the times)",
                UndefinedObservableWarning,
                stacklevel=user_stacklevel(),
            )
    return undefined


def trajectory(ts, params, saved: dict, stats, config: dict) -> Trajectory:
    """A `Trajectory` from what a `_Recorder` saved, undefined observables reported."""
    observed = saved["observables"]
    undefined = undefined_observables(ts, observed)
    return Trajectory(ts, params, saved["loss"], observed, stats.to_dict(), config, undefined)


class _GradientField(eqx.Module):
    loss: Callable = eqx.field(static=True)
    static: Any
    spec: FlatSpec | None = eqx.field(static=True, default=None)  # y is one flat vector

    def __call__(self, t, y, args):
        if self.spec is not None:
            grad = jax.grad(lambda d: self.loss(eqx.combine(d, self.static)))(self.spec.unravel(y))
            return -self.spec.ravel(grad)
        grad = jax.grad(lambda d: self.loss(eqx.combine(d, self.static)))(y)
        return jax.tree.map(lambda g: -g, grad)


class _Recorder(eqx.Module):
    loss: Callable = eqx.field(static=True)
    observables: tuple = eqx.field(static=True)
    save_params: bool = eqx.field(static=True)
    static: Any
    spec: FlatSpec | None = eqx.field(static=True, default=None)

    def __call__(self, t, y, args):
        params = eqx.combine(y if self.spec is None else self.spec.unravel(y), self.static)
        out = {"loss": self.loss(params)}
        # jnp.asarray: an observable may return a Python number
        out["observables"] = {
            name: jax.tree.map(jnp.asarray, fn(params)) for name, fn in self.observables
        }
        if self.save_params:
            out["params"] = y
        return out


def gradient_flow(
    loss: Callable,
    params0: Any,
    t1: float,
    *,
    settings: SolveSettings | None = None,
    ts=None,
    observables: dict | None = None,
    save_params: bool = True,
    progress: bool = False,
    checkpoint: str | None = None,
    **overrides,
) -> Trajectory:
    """Integrate the gradient flow dθ/dt = −∇loss(θ) from θ(0) = `params0` to t = `t1`.

    **Arguments:**
    - `loss`: scalar function of the parameter pytree. Keep the same function object across
      calls to reuse the compilation.
    - `params0`: any pytree (an equinox Module included). Inexact array leaves move; all
      other leaves, and arrays inside frozen modules, stay fixed.
    - `t1`: final flow time, > 0.
    - `ts`: save times, shape `(T,)`, strictly increasing in [0, t1]. Default:
      `log_times(t1, 100)` (t = 0 and 100 log-spaced times from 1e-3·min(1, t1) to t1).
    - `settings`: a `SolveSettings` (solver, rtol, atol, max_steps, chunks); default
      `SolveSettings()`, whose solver "auto" switches between Tsit5 and exprb32 by the rule
      of "How to choose a solver" (docs/solvers.md); `solver=flows.Auto(...)` or
      `flows.Kvaerno5(...)` sets a solver's options. `max_steps` bounds the steps of the
      whole solve; `chunks` larger than T means one diffrax call per save time (T calls).
      The Gauss–Legendre solvers "implicit_midpoint", "gauss4", "gauss6" (orders 2/4/6) keep
      quadratic invariants such as balancedness to round-off at any rtol; they step onto
      every save time, so `chunks` is ignored for them.
    - `**overrides`: any field of `SolveSettings` by name, replacing that field of
      `settings`: `gradient_flow(loss, p, t1, rtol=1e-8)` is
      `gradient_flow(loss, p, t1, settings=SolveSettings(rtol=1e-8))`.
    - `observables`: `{name: fn(params) -> array}` recorded at every save time, so long runs
      need not keep every weight.
    - `save_params`: keep the trainable parameters at every save time.
    - `progress`: show a tqdm bar over chunks, with the time reached.
    - `checkpoint`: path of an `.npz` written atomically after each chunk and within one
      about every 5 s of wall time (the first after the first 8 steps, i.e. right after
      compiling; `flows._checkpoint.Pacer`); if it exists when the call starts, the solve
      resumes from it, mid-chunk too (the step size is re-estimated), but only
      if it was written for this problem: its fingerprint (the start state, every setting
      but `max_steps`, the save times, the pytree structure, the loss and the gradient at
      the start) must match, else `ValueError` naming the file and what differs. A str or
      `os.PathLike`; a missing folder is created (with its parents).

    **Returns:** a `Trajectory`.

    **Raises:**
    - `ValueError` naming the argument: `t1` not a real number (`"10"`), ≤ 0 or non-finite,
      `ts` unsorted or outside [0, t1], non-finite `params0` or one without trainable
      arrays, trainable arrays that are not float64 (float32 is refused, not promoted;
      complex too: the flow moves real parameters), a setting out of range (see
      `SolveSettings`).
    - `TypeError` for a keyword that is neither an argument nor a setting, and naming `loss`
      when it does not return one float64 scalar (a vector, a tuple, a float32, integer or
      complex one).
    - `ValueError` naming `checkpoint` for a file written for another problem, a folder, an
      empty path or a place that cannot be written; `TypeError` naming `checkpoint` for a
      value that is not a path (an int, say).
    - `ZeroGradientWarning` (a warning) when the gradient is exactly zero at the start, so
      that the flow stays there.
    - `FloatingPointError` with the time reached and what happened: the step size collapsed
      (with the state's and the field's norms), the state really grew, or it (or the loss)
      became non-finite. An observable that is undefined at some times is not a failure: it
      gives an `UndefinedObservableWarning` and `Trajectory.undefined`.
    - `FloatingPointError` (Gauss–Legendre solvers) with the time and the Newton residual,
      if the stage equations cannot be solved to 1e-13 even at smaller steps.
    - `MaxStepsReached` (a `RuntimeError`) with the time reached (also as its attribute `.t`)
      and the setting to change.

    **References:** Tsitouras 2011, Comput. Math. Appl. 62 (Tsit5); Hochbruck, Ostermann &
    Schweitzer 2009, SIAM J. Numer. Anal. 47 (exprb32); Kværnø 2004, BIT 44 (Kvaerno5);
    Hairer & Wanner, Solving ODEs II (the stiffness tests, Gauss–Legendre); the solve is
    diffrax's `diffeqsolve` (Kidger 2021, "On Neural Differential Equations", thesis).
    """
    t1, ts, settings = resolve_flow_inputs(t1, ts, settings, overrides)
    save_params = check_flag("save_params", save_params)
    trainable, static = trainable_of("params0", params0)
    check_finite("params0", trainable)
    check_loss(loss, params0)
    obs = check_observables(observables, params0)
    # One flat state vector: diffrax's per-step work is then a few array operations, not a
    # few per leaf (measured: docs/performance.md).
    spec = FlatSpec.of(trainable)
    saved, _, stats = integrate(
        _GradientField(loss, static, spec),
        spec.ravel(trainable),
        ts,
        _Recorder(loss, obs, save_params, static, spec),
        settings,
        progress=progress,
        desc="gradient flow",
        checkpoint=checkpoint,
    )
    params = None
    if save_params:
        params = eqx.combine(spec.unravel_rows(saved["params"]), static)
        params = jax.tree.map(lambda a: np.asarray(a) if eqx.is_array(a) else a, params)
    return trajectory(ts, params, saved, stats, {**settings.to_dict(), "t1": t1})
