"""Gradient descent θ_{k+1} = θ_k − η∇F(θ_k): forward Euler on the gradient flow, in flow time.

A discrete algorithm, not an ODE solver: the iterates are what is studied (their departure
from the flow), so they are computed exactly as written, by the loop of
`flows.large_steps.optimize` (`flows._optimize`) with the optax transformation `_SGD`, and
recorded by the same recorder (`_Recorder`) that `gradient_flow` uses. diffrax's `Euler`
with a constant step would interpolate between iterates at save times that are not on the
step grid, and accumulate t by repeated addition.
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from ._checks import check_positive
from ._divergence import DivergenceWarning as DivergenceWarning
from ._flow import Trajectory
from ._optimize import run
from ._settings import SolveSettings


class _SGD(eqx.Module):
    """optax's `sgd(eta)` with η an array field, so that one compiled loop serves every η
    (an optax closure is a new static object per η, and would compile again)."""

    eta: jax.Array

    def init(self, params):
        return optax.EmptyState()

    def update(self, grads, state, params=None):
        return jax.tree.map(lambda g: self.eta * -g, grads), state


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
    - `FloatingPointError` naming η, the step and the loss before it when the iterates or
      the loss become non-finite (η above the stability limit 2/λ_max of the Hessian); its
      attribute `partial` is the `Trajectory` of the finite saves before (None if there are none).
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
    eta = check_positive("eta", eta)
    sgd = _SGD(jnp.asarray(eta))
    return run(
        loss,
        params0,
        t1,
        optimizer=optax.GradientTransformation(sgd.init, sgd.update),
        eta=eta,
        ts=ts,
        settings=settings,
        observables=observables,
        save_params=save_params,
        progress=progress,
        overrides=overrides,
        name="gradient descent",
        solver="gradient_descent",
    )
