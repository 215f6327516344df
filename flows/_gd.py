"""Gradient descent θ_{k+1} = θ_k − η∇F(θ_k): forward Euler on the gradient flow, in flow time.

A discrete algorithm, not an ODE solver: the iterates are what is studied (their departure
from the flow), so they are computed exactly as written, by a `lax.fori_loop` over the same
vector field (`_GradientField`) and recorded by the same recorder (`_Recorder`) that
`gradient_flow` uses. diffrax's `Euler` with a constant step would interpolate between
iterates at save times that are not on the step grid, and accumulate t by repeated addition.
"""

import warnings
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._checks import (
    check_finite,
    check_flag,
    check_loss,
    check_observables,
    check_positive,
    check_ts,
)
from ._failures import MaxStepsReached
from ._flat import trainable_of
from ._flow import Trajectory, _GradientField, _Recorder, trajectory
from ._progress import progress_bar
from ._settings import SolveSettings, resolve_settings
from ._stats import SolveStats
from ._times import log_times


def euler_step(field, t, y, eta):
    """One step y + η·field(t, y): gradient descent's, and that of any map given as a field."""
    return jax.tree.map(lambda a, g: a + eta * g, y, field(t, y, None))


@eqx.filter_jit
def _descend(field, y, eta, k0, n):
    # A discrete map other than Euler's (a game's alternating or extragradient step) gives
    # its own `step(t, y, eta)`, computed as written.
    advance = getattr(field, "step", None) or (lambda t, y, eta: euler_step(field, t, y, eta))

    def step(i, y):
        return advance((k0 + i) * eta, y, eta)

    return jax.lax.fori_loop(0, n, step, y)


@eqx.filter_jit
def _record(recorder, t, y):
    return recorder(t, y, None)


def _finite(tree) -> bool:
    return all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(tree))


#: A loss above this multiple of |L(0)| is divergence (`DivergenceWarning`).
DIVERGENCE_GROWTH = 1e10


class DivergenceWarning(RuntimeWarning):
    """Gradient descent's loss grew by more than `DIVERGENCE_GROWTH` (1e10) times its initial
    value: η is above the stability limit 2/λ_max of the Hessian and the iterates diverge
    (given at most once per call, with η and the step; a later non-finite loss or iterate is
    a `FloatingPointError`)."""


def _diverged(message: str, records: list, steps, result) -> FloatingPointError:
    """The error of a run that became non-finite, with `step` (the first step known bad) and
    `partial` (the `Trajectory` of the finite saves before it, or None), so that a caller that
    detects divergence itself keeps what was computed."""
    error = FloatingPointError(message)
    error.partial = result(records, steps[: len(records)]) if records else None
    return error


def gradient_descent(
    loss,
    params0: Any,
    t1: float,
    *,
    eta: float,
    ts=None,
    settings: SolveSettings | None = None,
    observables: dict | None = None,
    save_params: bool = True,
    progress: bool = False,
    **overrides,
) -> Trajectory:
    """Gradient descent with step η, θ_{k+1} = θ_k − η∇loss(θ_k), reported in flow time.

    Step k is at t = kη: a step η covers flow time η, so the result sits on the same time axis
    as `gradient_flow` and tends to it as η → 0 (forward Euler, first order).

    **Arguments:**
    - `loss`, `params0`, `observables`, `save_params`, `progress`: as in `gradient_flow`.
    - `t1`: final flow time, > 0, rounded to the step grid: K = round(t1/η) ≥ 1. As in
      `gradient_flow`, the iterates are computed up to the last save time.
    - `eta`: step size η > 0, in flow-time units.
    - `settings`, `**overrides`: a `SolveSettings` as in `gradient_flow`. Gradient descent
      has no solver or tolerance: only `max_steps` applies, as the budget of steps K.
    - `ts`: save times in [0, t1], strictly increasing. Each is rounded to the nearest step
      time kη (repeats after rounding are dropped): `Trajectory.ts` holds the step times
      actually recorded. Default: `log_times(t1, 100, t_min=η)`.

    **Returns:** a `Trajectory`; `stats` has the keys of `SolveStats`, with `num_steps` =
    `num_accepted_steps` = `grad_evals` (the steps taken) and `solvers =
    ["gradient_descent"]`; `config` has `solver="gradient_descent"`, `eta`, `t1`, `max_steps`.

    **Raises:**
    - `ValueError` naming the argument: `t1` or `eta` not a real number, finite and > 0,
      η > t1, `ts` unsorted or outside [0, t1], non-finite or non-float64 `params0`, a
      setting out of range.
    - `TypeError` naming `loss` when it does not return one float scalar.
    - `MaxStepsReached` before any work when K > `max_steps`.
    - `FloatingPointError` naming η and the step when the iterates or the loss become
      non-finite (η above the stability limit 2/λ_max of the Hessian); its attribute
      `partial` is the `Trajectory` of the finite saves before (None if there are none).
      An undefined observable is reported as by `gradient_flow`
      (`UndefinedObservableWarning`, `Trajectory.undefined`).
    - `DivergenceWarning` (a warning, once) naming η and the step when the loss grows above
      1e10 times its first saved value (L(0) with the default `ts`) while still finite.

    **Reference:** Du, Hu & Lee 2018, §4 (gradient descent keeps balancedness only
    approximately: per step C_k changes by exactly η²(G_kG_kᵀ − G_{k+1}ᵀG_{k+1}), so the drift
    over a fixed horizon is first order in η).
    """
    return iterate_map(
        lambda static: _GradientField(loss, static), loss, params0, t1, eta=eta, ts=ts,
        settings=settings, observables=observables, save_params=save_params,
        progress=progress, overrides=overrides,
    )  # fmt: skip


_HESSIAN_ADVICE = "is above the stability limit 2/λ_max of the Hessian"


def iterate_map(make_field, loss, params0, t1, *, eta, ts, settings, observables, save_params,
                progress, overrides, what="gradient descent", config=None,
                advice=_HESSIAN_ADVICE) -> Trajectory:  # fmt: skip
    """`gradient_descent`'s iteration, checks, records and failures for the map
    y ↦ y + η·field(t, y) (or `field.step(t, y, η)` where the field defines one), with
    `field = make_field(static)` on the trainable leaves of `params0`; `what` names the map in
    messages, `advice` says what η is when the iterates diverge, `config` replaces entries
    of the trajectory's config (its `"solver"` also names `stats["solvers"]`)."""
    t1 = check_positive("t1", t1)
    eta = check_positive("eta", eta)
    settings = resolve_settings(settings, overrides)
    save_params = check_flag("save_params", save_params)
    progress = check_flag("progress", progress)
    n_steps = int(round(t1 / eta))
    if n_steps < 1:
        raise ValueError(f"eta must be <= t1 (at least one step), got eta={eta}, t1={t1}")
    if ts is None:
        ts = log_times(t1, 100, t_min=eta) if n_steps > 1 else np.array([0.0, t1])
    ts = check_ts(ts, t1)
    # Checked in floats before any integer cast: t1/eta = 5e300 steps overflowed int64
    last = min(float(np.rint(ts[-1] / eta)), float(n_steps))
    if last > settings.max_steps:
        raise MaxStepsReached(
            f"gradient descent to t={last * eta:.6g} with eta={eta:g} takes "
            f"{last:.6g} steps, over max_steps={settings.max_steps}; raise max_steps",
            0.0,
        )
    save_steps = np.unique(np.minimum(np.rint(ts / eta).astype(np.int64), n_steps))
    trainable, static = trainable_of("params0", params0)
    check_finite("params0", trainable)
    check_loss(loss, params0)
    field = make_field(static)
    recorder = _Recorder(loss, check_observables(observables, params0), save_params, static)

    named = {
        "solver": "gradient_descent",
        "eta": eta,
        "t1": t1,
        "max_steps": settings.max_steps,
        **(config or {}),
    }

    def result(records, steps) -> Trajectory:
        saved = jax.tree.map(lambda *leaves: np.stack(leaves), *records)
        params = eqx.combine(saved["params"], static) if save_params else None
        k = int(steps[-1])
        stats = SolveStats(
            num_steps=k,
            num_accepted_steps=k,
            grad_evals=k,
            chunks=len(steps),
            solvers=[named["solver"]],
        )
        return trajectory(steps * eta, params, saved, stats, named)

    records, y, k, loss0, warned = [], trainable, 0, None, False
    with progress_bar(
        total=int(save_steps[-1]),
        desc=what,
        unit="step",
        disable=not progress,
        leave=False,
    ) as bar:
        for k_save in save_steps:
            y_next = _descend(field, y, jnp.asarray(eta), jnp.asarray(k), jnp.asarray(k_save - k))
            if not _finite(y_next):
                raise _diverged(
                    f"{what} became non-finite between step {k} (t={k * eta:.6g}) "
                    f"and step {k_save} (t={k_save * eta:.6g}); reduce eta (got {eta})",
                    records, save_steps, result,
                )  # fmt: skip
            bar.update(int(k_save - k))
            bar.set_postfix(t=f"{k_save * eta:.3g}")
            y, k = y_next, int(k_save)
            record = jax.tree.map(np.asarray, _record(recorder, jnp.asarray(k * eta), y))
            value = float(record["loss"])
            loss0 = value if loss0 is None else loss0
            if not np.isfinite(value) and k == 0:  # said "reduce eta": no step was taken
                raise _diverged(
                    f"the loss is {value} at the start, t=0, before any step (not a matter "
                    "of eta); check the loss, the data scale and the initialisation",
                    records, save_steps, result,
                )  # fmt: skip
            if not np.isfinite(value):
                raise _diverged(
                    f"{what} became non-finite at step {k} (t={k * eta:.6g}): the "
                    f"loss is {value} (it was {loss0:.6g} at step {save_steps[0]}); reduce "
                    f"eta (got {eta})",
                    records, save_steps, result,
                )  # fmt: skip
            if not warned and abs(value) > DIVERGENCE_GROWTH * abs(loss0) > 0:
                warned = True
                warnings.warn(
                    f"{what} diverges: the loss grew {abs(value / loss0):.3g} times "
                    f"(from {loss0:.6g} to {value:.6g}) by step {k} (t={k * eta:.6g}); eta={eta} "
                    f"{advice}: reduce eta",
                    DivergenceWarning,
                    stacklevel=3,  # the caller of gradient_descent (or of a game's map)
                )
            records.append(record)
    return result(records, save_steps)
