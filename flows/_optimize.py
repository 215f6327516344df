"""Any optax optimizer as a discrete map on the flow's time axis: step k at t = kη₀.

Like gradient descent, the iterates are what is studied, so they are computed exactly as
written: a `lax.fori_loop` of `optimizer.update` and `optax.apply_updates` between save
steps, recorded by the same `_Recorder` that `gradient_flow` uses, with the divergence rule
of `flows._divergence`. `gradient_descent` is the case `optimizer = sgd(η)`; the discrete
maps of `flows.games` (a step of their own, `_MapSteps`) run through the same loop.
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from ._checks import (
    check_finite,
    check_flag,
    check_loss,
    check_observables,
    check_positive,
    check_ts,
)
from ._divergence import DivergenceRule, diverged, since, warn_diverged
from ._failures import MaxStepsReached
from ._flat import trainable_of
from ._flow import Trajectory, _Recorder, trajectory
from ._progress import progress_bar
from ._settings import SolveSettings, resolve_settings
from ._stats import SolveStats
from ._times import log_times


class _Schedule(eqx.Module):
    """The factor η_k/η₀ by which step k's update is scaled (`schedule` given)."""

    schedule: Any = eqx.field(static=True)
    eta: jax.Array

    def __call__(self, k):
        return self.schedule(k) / self.eta


class _OptaxSteps(eqx.Module):
    """Step k of an optax optimizer on ∇loss: `(y, state) ↦ (y + updates, state')`, the
    updates scaled by η_k/η₀ where a schedule is given."""

    loss: Any
    static: Any
    optimizer: Any
    scale: Any

    def init(self, y):
        return self.optimizer.init(y)

    def __call__(self, k, y, state):
        grads = jax.grad(lambda d: self.loss(eqx.combine(d, self.static)))(y)
        updates, state = self.optimizer.update(grads, state, y)
        if self.scale is not None:
            factor = self.scale(k)
            updates = jax.tree.map(lambda u: u * factor, updates)
        return optax.apply_updates(y, updates), state


class _MapSteps(eqx.Module):
    """Step k of the map y ↦ `field.step(kη, y, η)` where the field defines its own step (a
    game's alternating or extragradient step), else y ↦ y + η·field(kη, y), computed as
    written; no state."""

    field: Any
    eta: jax.Array

    def init(self, y):
        return optax.EmptyState()

    def __call__(self, k, y, state):
        t, eta = k * self.eta, self.eta
        step = getattr(self.field, "step", None)
        if step is not None:
            return step(t, y, eta), state
        return jax.tree.map(lambda a, g: a + eta * g, y, self.field(t, y, None)), state


@eqx.filter_jit
def _advance(stepper, y, state, k0, n):
    def step(i, carry):
        return stepper(k0 + i, *carry)

    return jax.lax.fori_loop(0, n, step, (y, state))


@eqx.filter_jit
def _record(recorder, state_observables, static, t, y, state, scale, k):
    out = recorder(t, y, None)
    params = eqx.combine(y, static)
    for name, fn in state_observables:
        out["observables"][name] = jax.tree.map(jnp.asarray, fn(params, state))
    if scale is not None:
        out["observables"]["eta"] = jnp.asarray(scale.schedule(k), jnp.float64)
    return out


def check_optimizer(optimizer) -> optax.GradientTransformation:
    """`optimizer` if it is an optax `GradientTransformation`, else one line naming it."""
    if not isinstance(optimizer, optax.GradientTransformation):
        raise TypeError(
            "optimizer must be an optax GradientTransformation (e.g. optax.adam(eta)), got "
            f"{type(optimizer).__name__}"
        )
    return optimizer


def _check_schedule(schedule, eta: float, n: int):
    """Every step size η_k = schedule(k), k < n, finite and > 0, else one line naming
    `schedule`, the step and the value."""
    if schedule is None:
        return None
    if not callable(schedule):
        raise TypeError(
            f"schedule must be a function of the step (optax's convention), got "
            f"{type(schedule).__name__}"
        )
    try:
        values = np.asarray(jax.vmap(schedule)(jnp.arange(max(n, 1))), dtype=np.float64)
    except Exception as e:  # whatever the user's function raises on a step
        first = (str(e).strip().splitlines() or [""])[0][:200]
        # Python's if on the step, or a list indexed by it
        traced = (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError)
        hint = (
            "; it is called on a traced array of steps, as optax's schedules are: write it "
            "with jnp operations (jnp.where, not if; jnp.asarray(table)[k], not a list)"
            if isinstance(e, traced)
            else ""
        )
        raise ValueError(
            f"schedule fails on the steps ({type(e).__name__}: {first}){hint}"
        ) from None
    if values.shape != (max(n, 1),):
        raise ValueError(f"schedule must return one number per step, got shape {values.shape}")
    bad = np.flatnonzero(~(np.isfinite(values) & (values > 0)))
    if bad.size:
        k = int(bad[0])
        raise ValueError(
            "schedule must return a finite step size > 0 at every step, got "
            f"{float(values[k])!r} at step {k} (t={k * eta:.6g})"
        )
    return _Schedule(schedule, jnp.asarray(eta))


def _check_state_observables(state_observables, params, state) -> tuple:
    if state_observables is None:
        return ()
    if not isinstance(state_observables, dict):
        raise TypeError(
            "state_observables must be a dict {name: fn(params, opt_state) -> array}, got "
            f"{type(state_observables).__name__}"
        )
    for name, fn in state_observables.items():
        if not callable(fn):
            raise TypeError(f"state_observables[{name!r}] must be a function, got {fn!r}")
        try:
            eqx.filter_eval_shape(fn, params, state)
        except Exception as e:  # whatever the user's function raises on this state
            first = (str(e).strip().splitlines() or [""])[0][:200]
            raise ValueError(
                f"state_observables[{name!r}] fails on the parameters and optimizer state of "
                f"this run ({type(e).__name__}: {first})"
            ) from None
    return tuple(sorted(state_observables.items()))


def optimize(
    loss,
    params0: Any,
    t1: float,
    *,
    optimizer,
    eta: float,
    schedule=None,
    ts=None,
    settings: SolveSettings | None = None,
    observables: dict | None = None,
    state_observables: dict | None = None,
    save_params: bool = True,
    progress: bool = False,
    **overrides,
) -> Trajectory:
    """Run an optax optimizer on `loss` from `params0`, reported in flow time: step k at
    t = kη₀ with η₀ = `eta`, K = round(t1/η₀) steps.

    Each step is `updates, state = optimizer.update(∇loss(θ_k), state, θ_k)`,
    θ_{k+1} = `optax.apply_updates(θ_k, updates)`, from `state = optimizer.init(θ_0)`
    (trainable leaves only, as `gradient_flow` moves them). `gradient_descent(..., eta=η)`
    is this with `optax.sgd(η)`, to the last bit.

    **Arguments:**
    - `loss`, `params0`, `observables`, `save_params`, `progress`, `settings`,
      `**overrides`: as in `gradient_descent` (only `max_steps` applies, as the budget of
      steps K).
    - `t1`: final flow time, > 0; K = round(t1/η₀) ≥ 1.
    - `optimizer`: an optax `GradientTransformation` (`optax.sgd(eta, momentum=0.9)`,
      `optax.rmsprop(eta)`, `optax.adam(eta)`, a chain...), with its own learning rate.
      Keep the same object across calls to reuse the compilation.
    - `eta`: η₀ > 0, the base learning rate: it sets the time axis (a step covers flow
      time η₀), whatever the optimizer does with it.
    - `schedule`: None, or a function of the step k = 0, 1, … returning the step size η_k
      (optax's convention: `optax.warmup_cosine_decay_schedule(...)`). Step k's update
      is multiplied by η_k/η₀, so build `optimizer` with learning rate η₀: for optax's
      optimizers, whose last stage is the learning rate, that is the optimizer built with
      `learning_rate=schedule`. Checked before any step; recorded as `observables["eta"]`.
      The time axis stays t = kη₀.
    - `state_observables`: `{name: fn(params, opt_state) -> array}` recorded at every save
      with the optimizer's state after the step (e.g. the preconditioned sharpness,
      `flows.large_steps.preconditioned_sharpness`).
    - `ts`: save times in [0, t1], rounded to the step grid as by `gradient_descent`.
      Default: `log_times(t1, 100, t_min=η₀)`.

    **Returns:** a `Trajectory` as `gradient_descent`'s, with `config["solver"] =
    "optimize"` and `config["schedule"]` (whether one was given).

    **Raises:**
    - `TypeError` naming `optimizer` when it is not an optax `GradientTransformation`,
      `schedule` when it is not a function, `state_observables` when it is not a dict of
      functions.
    - `ValueError` naming `schedule` and the step when it returns a step size that is not
      finite and > 0 (before any step), and the arguments as `gradient_descent` does.
    - `MaxStepsReached`, `FloatingPointError` (naming η₀ and the step, with `partial`) and
      `DivergenceWarning` as `gradient_descent` raises them.

    **Reference:** Cohen, Kaur, Li, Kolter & Talwalkar 2021 (step k at t = kη);
    Cohen et al. 2022, "Adaptive gradient methods at the edge of stability" (adaptive
    optimizers at the edge).
    """
    optimizer = check_optimizer(optimizer)
    return run(
        loss,
        params0,
        t1,
        optimizer=optimizer,
        eta=eta,
        schedule=schedule,
        ts=ts,
        settings=settings,
        observables=observables,
        state_observables=state_observables,
        save_params=save_params,
        progress=progress,
        overrides=overrides,
        name="the optimizer",
        solver="optimize",
    )


def run(
    loss,
    params0,
    t1,
    *,
    optimizer,
    eta,
    ts,
    settings,
    observables,
    save_params,
    progress,
    overrides,
    name,
    solver,
    schedule=None,
    state_observables=None,
    make_map=None,
    config=None,
    limit=None,
) -> Trajectory:
    """The loop of `optimize`, `gradient_descent` and the maps of `flows.games`; `name` is
    the run's name in messages, `solver` its name in `config` and `stats`. With `make_map`,
    `optimizer` is ignored and the map is `_MapSteps(make_map(static), η)` on the trainable
    leaves; `config` adds entries to the trajectory's config; `limit` the stability limit
    that η is above in the `DivergenceWarning` (default: the Hessian's for gradient descent,
    the optimizer's otherwise). The warning at S(0) > 2/η is gradient descent's alone."""
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
            f"{name} to t={last * eta:.6g} with eta={eta:g} takes "
            f"{last:.6g} steps, over max_steps={settings.max_steps}; raise max_steps",
            0.0,
        )
    save_steps = np.unique(np.minimum(np.rint(ts / eta).astype(np.int64), n_steps))
    scale = _check_schedule(schedule, eta, int(save_steps[-1]))
    trainable, static = trainable_of("params0", params0)
    check_finite("params0", trainable)
    check_loss(loss, params0)
    if solver == "gradient_descent":
        from .large_steps._edge_warning import warn_above_edge  # (large_steps imports flows)

        warn_above_edge(
            "gradient_descent", loss, params0, eta, 2.0, "S(0)",
            "GD is unstable along the top eigenvector from its first step (it catapults or "
            "diverges), and no flow is its limit there", stacklevel=4,  # the caller of GD
        )  # fmt: skip
    if make_map is None:
        stepper = _OptaxSteps(loss, static, optimizer, scale)
    else:
        stepper = _MapSteps(make_map(static), jnp.asarray(eta))
    state = stepper.init(trainable)
    recorder = _Recorder(loss, check_observables(observables, params0), save_params, static)
    by_state = _check_state_observables(state_observables, params0, state)

    def result(records, steps) -> Trajectory:
        saved = jax.tree.map(lambda *leaves: np.stack(leaves), *records)
        params = eqx.combine(saved["params"], static) if save_params else None
        k = int(steps[-1])
        stats = SolveStats(
            num_steps=k, num_accepted_steps=k, grad_evals=k, chunks=len(steps), solvers=[solver]
        )
        named = {"solver": solver, "eta": eta, "t1": t1, "max_steps": settings.max_steps}
        if optimizing:
            named["schedule"] = schedule is not None
        return trajectory(steps * eta, params, saved, stats, {**named, **(config or {})})

    gd = solver == "gradient_descent"
    optimizing = make_map is None and not gd
    advice = f"reduce eta (got {eta})"
    if schedule is not None:  # the schedule sets the step: "reduce eta" alone misled
        advice = f"reduce eta (got {eta}) or the schedule's step sizes (it sets each step)"
    advice += " or check the optimizer's hyperparameters" if optimizing else ""
    if limit is None:
        limit = "the stability limit 2/λ_max of the Hessian" if gd else "the optimizer's limit"
    records, y, k, rule, warned = [], trainable, 0, None, False
    if save_steps[0] != 0:
        # the rule's L(0) is the loss at params0: from the first save instead (step 6 of an
        # eos run), momentum's warning said "the loss rose from 1.1509" where L(0) = 0.39,
        # and its threshold moved with it
        value = float(eqx.filter_jit(loss)(params0))
        if not np.isfinite(value):
            raise diverged(
                f"the loss is {value} at the start, t=0, before any step (not a matter of "
                "eta); check the loss, the data scale and the initialisation",
                records, save_steps, result,
            )  # fmt: skip
        rule = DivergenceRule(value)
    saves = iter(save_steps)
    k_save = next(saves)
    with progress_bar(
        total=int(save_steps[-1]), desc=name, unit="step", disable=not progress, leave=False
    ) as bar:
        while k_save is not None or (
            rule is not None and rule.check_step is not None and not warned
        ):
            # the next save, or sooner the end of an open excursion's window (past the
            # last save when the run ends inside it: the window belongs to the rule)
            check = rule.check_step if rule is not None and not warned else None
            k_next = min(s for s in (k_save, check) if s is not None)
            saving = k_next == k_save
            n = jnp.asarray(k_next - k)
            y_next, state_next = _advance(stepper, y, state, jnp.asarray(k), n)
            if not _finite(y_next) and not saving and k_save is None:
                warn_diverged(name, eta, rule, k_next, None, limit)  # past the horizon
                break
            if not _finite(y_next):
                bad, last = _first_non_finite(stepper, loss, static, y, state, k)
                raise diverged(
                    f"{name} became non-finite at step {bad} (t={bad * eta:.6g}): the iterate "
                    f"holds NaN or inf (the loss was {last:.6g} at step {bad - 1}){since(rule)}; "
                    f"{advice}",
                    records, save_steps, result,
                )  # fmt: skip
            if saving:
                bar.update(int(k_next - k))
                bar.set_postfix(t=f"{k_next * eta:.3g}")
            y, state, k = y_next, state_next, int(k_next)
            at = (jnp.asarray(k * eta), y, state, scale, jnp.asarray(k))
            record = jax.tree.map(np.asarray, _record(recorder, by_state, static, *at))
            value = float(record["loss"])
            if not np.isfinite(value) and k == 0:  # said "reduce eta": no step was taken
                raise diverged(
                    f"the loss is {value} at the start, t=0, before any step (not a matter "
                    "of eta); check the loss, the data scale and the initialisation",
                    records, save_steps, result,
                )  # fmt: skip
            rule = DivergenceRule(value) if rule is None else rule
            if not np.isfinite(value) and saving:
                # -inf: a loss unbounded below, which no step size cures ("reduce eta" misled)
                unbounded = (
                    f"the loss is unbounded below along this path: {name} reaches -inf at "
                    f"every eta, only later as eta shrinks (got eta={eta}); check the loss"
                )
                raise diverged(
                    f"{name} became non-finite at step {k} (t={k * eta:.6g}): the loss is "
                    f"{value} (it was {rule.loss0:.6g} at step 0){since(rule)}; "
                    f"{advice if value != -np.inf else unbounded}",
                    records, save_steps, result,
                )  # fmt: skip
            verdict = rule.update(k, value) if not warned else None
            if verdict is not None:
                warned = True
                warn_diverged(name, eta, rule, k, verdict, limit)
            if saving:
                records.append(record)
                k_save = next(saves, None)
    return result(records, save_steps)


def _first_non_finite(stepper, loss, static, y, state, k):
    """`(j, L)`: the first step j > k whose iterate is not finite, stepping one at a time from
    the finite (y, state) at step k, and the loss L at step j − 1."""
    while True:
        y_next, state_next = _advance(stepper, y, state, jnp.asarray(k), jnp.asarray(1))
        if not _finite(y_next):
            return k + 1, float(loss(eqx.combine(y, static)))
        y, state, k = y_next, state_next, k + 1


def _finite(tree) -> bool:
    return all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(tree))
