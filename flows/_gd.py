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
from ._divergence import DivergenceRule
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


class DivergenceWarning(RuntimeWarning):
    """Gradient descent diverges by the rule of `flows._divergence` (shared with
    `experiments.eos`): its loss rose more than `GROWTH` (1e3) times max(|L(0)|, tiny) above
    L(0) and did not come back below within `WINDOW` (100) steps; η is above the stability
    limit 2/λ_max of the Hessian (given at most once per call, naming η, the step where the
    excursion began and its loss; a later non-finite loss or iterate is a
    `FloatingPointError`). A spike that comes back (the catapult) and a loss that falls
    (below 0 included) are not divergence."""


def _since(rule) -> str:
    """ ", after rising to ... at step j (...)" while an excursion is open."""
    if rule is None or rule.start is None:
        return ""
    j, value = rule.start
    ratio = rule.ratio(value)
    return f", after rising to {value:.6g} at step {j} ({ratio:.3g} times |L(0)| above L(0))"


_HESSIAN_ADVICE = "is above the stability limit 2/λ_max of the Hessian"


def _warn_diverged(eta, rule, k, verdict, what="gradient descent", advice=_HESSIAN_ADVICE):
    """The `DivergenceWarning` of `gradient_descent` (or of the map `what`), naming η, the
    excursion's step and loss."""
    j, value = (verdict.step, verdict.value) if verdict is not None else rule.start
    then = (
        "became non-finite"
        if verdict is None or verdict.confirmed_value is None
        else (f"was {verdict.confirmed_value:.6g}")
    )
    warnings.warn(
        f"{what} diverges: the loss rose from {rule.loss0:.6g} to {value:.6g} by step "
        f"{j} (t={j * eta:.6g}), {rule.ratio(value):.3g} times |L(0)| above L(0), and did not "
        f"come back below {rule.growth:g} times within {rule.window} steps (it {then} at step "
        f"{k}); eta={eta} {advice}: reduce eta",
        DivergenceWarning,
        stacklevel=4,  # _warn_diverged, iterate_map, gradient_descent (or a game's map): its caller
    )


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
    - `flows.large_steps.EdgeOfStabilityWarning` (once) naming η, S(0) and ηS(0) where
      S(0) > 2/η at `params0` (S by 20 Lanczos products, a lower bound).
    - `MaxStepsReached` before any work when K > `max_steps`.
    - `FloatingPointError` naming η and the step when the iterates or the loss become
      non-finite (η above the stability limit 2/λ_max of the Hessian); its attribute
      `partial` is the `Trajectory` of the finite saves before (None if there are none).
      An undefined observable is reported as by `gradient_flow`
      (`UndefinedObservableWarning`, `Trajectory.undefined`).
    - `DivergenceWarning` (a warning, once) naming η, the step and the loss where the rule
      of `DivergenceWarning` found divergence: the loss rose more than 1e3 times
      max(|L(0)|, tiny) above its first saved value (L(0) with the default `ts`) and had not
      come back below within 100 steps. The loss is looked at the saves and at the window's
      end, which may lie past `t1` (up to 100 more steps, not saved). A spike that comes
      back (a catapult) is not divergence, nor a loss that falls below 0.

    **Reference:** Du, Hu & Lee 2018, §4 (gradient descent keeps balancedness only
    approximately: per step C_k changes by exactly η²(G_kG_kᵀ − G_{k+1}ᵀG_{k+1}), so the drift
    over a fixed horizon is first order in η).
    """
    return iterate_map(
        lambda static: _GradientField(loss, static), loss, params0, t1, eta=eta, ts=ts,
        settings=settings, observables=observables, save_params=save_params,
        progress=progress, overrides=overrides,
    )  # fmt: skip


def iterate_map(make_field, loss, params0, t1, *, eta, ts, settings, observables, save_params,
                progress, overrides, what="gradient descent", config=None,
                advice=_HESSIAN_ADVICE) -> Trajectory:  # fmt: skip
    """`gradient_descent`'s iteration, checks, records and failures for the map
    y ↦ y + η·field(t, y) (or `field.step(t, y, η)` where the field defines one), with
    `field = make_field(static)` on the trainable leaves of `params0`; `what` names the map in
    messages, `advice` says what η is when the iterates diverge, `config` replaces entries
    of the trajectory's config (its `"solver"` also names `stats["solvers"]`). The warning
    at S(0) > 2/η is gradient descent's alone (`what="gradient descent"`)."""
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
    if what == "gradient descent":
        from .large_steps._edge_warning import warn_above_edge  # (large_steps imports flows)

        warn_above_edge(
            "gradient_descent", loss, params0, eta, 2.0, "S(0)",
            "GD is unstable along the top eigenvector from its first step (it catapults or "
            "diverges), and no flow is its limit there", stacklevel=4,  # the caller of GD
        )  # fmt: skip
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

    records, y, k, rule, warned = [], trainable, 0, None, False
    saves = iter(save_steps)
    k_save = next(saves)
    with progress_bar(
        total=int(save_steps[-1]),
        desc=what,
        unit="step",
        disable=not progress,
        leave=False,
    ) as bar:
        while k_save is not None or (
            rule is not None and rule.check_step is not None and not warned
        ):
            # the next save, or sooner the end of an open excursion's window (past the
            # last save when the run ends inside it: the window belongs to the rule)
            check = rule.check_step if rule is not None and not warned else None
            k_next = min(s for s in (k_save, check) if s is not None)
            saving = k_next == k_save
            y_next = _descend(field, y, jnp.asarray(eta), jnp.asarray(k), jnp.asarray(k_next - k))
            if not _finite(y_next) and not saving and k_save is None:
                _warn_diverged(
                    eta, rule, k_next, None, what, advice
                )  # past the horizon: all saves kept
                break
            if not _finite(y_next):
                raise _diverged(
                    f"{what} became non-finite between step {k} (t={k * eta:.6g}) "
                    f"and step {k_next} (t={k_next * eta:.6g}){_since(rule)}; reduce eta "
                    f"(got {eta})",
                    records, save_steps, result,
                )  # fmt: skip
            if saving:
                bar.update(int(k_next - k))
                bar.set_postfix(t=f"{k_next * eta:.3g}")
            y, k = y_next, int(k_next)
            record = jax.tree.map(np.asarray, _record(recorder, jnp.asarray(k * eta), y))
            value = float(record["loss"])
            if not np.isfinite(value) and k == 0:  # said "reduce eta": no step was taken
                raise _diverged(
                    f"the loss is {value} at the start, t=0, before any step (not a matter "
                    "of eta); check the loss, the data scale and the initialisation",
                    records, save_steps, result,
                )  # fmt: skip
            rule = DivergenceRule(value) if rule is None else rule
            if not np.isfinite(value) and saving:
                # -inf: a loss unbounded below, which no step size cures ("reduce eta" misled)
                advice = (
                    f"reduce eta (got {eta})"
                    if value != -np.inf
                    else f"the loss is unbounded below along this path: gradient descent reaches "
                    f"-inf at every eta, only later as eta shrinks (got eta={eta}); check the loss"
                )
                raise _diverged(
                    f"{what} became non-finite at step {k} (t={k * eta:.6g}): the "
                    f"loss is {value} (it was {rule.loss0:.6g} at step {save_steps[0]})"
                    f"{_since(rule)}; {advice}",
                    records, save_steps, result,
                )  # fmt: skip
            verdict = rule.update(k, value) if not warned else None
            if verdict is not None:
                warned = True
                _warn_diverged(eta, rule, k, verdict, what, advice)
            if saving:
                records.append(record)
                k_save = next(saves, None)
    return result(records, save_steps)
