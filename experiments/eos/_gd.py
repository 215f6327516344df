"""Gradient descent saved at every step, in chunks, stopped where it diverges."""

import dataclasses
import warnings

import equinox as eqx
import jax
import numpy as np

import flows
from flows import _divergence as flows_divergence
from flows.large_steps import EdgeOfStabilityWarning

CHUNK = 50  # steps per call of flows.gradient_descent


@dataclasses.dataclass(frozen=True)
class Descent:
    """GD from step 0 to the horizon, or to the step before it diverged.

    `trajectory`: a `flows.Trajectory` saved at every step (t = kη, params included);
    `diverged`: None, or `{"step", "t", "loss", "reason"}`: where the loss left for good
    (the start of the excursion that did not come back, or the first non-finite step; loss
    None when not finite), by the rule of `flows.DivergenceWarning`."""

    trajectory: flows.Trajectory
    diverged: dict | None


def descend(loss, params0, *, eta: float, steps: int, report=lambda t, t1: None) -> Descent:
    """`steps` steps of gradient descent with step `eta` from `params0` (flows.gradient_descent,
    `CHUNK` steps per call), every step saved, judged step by step by the divergence rule that
    `flows.gradient_descent` uses (`flows._divergence.DivergenceRule`): a loss that is not
    finite, or one more than `GROWTH` (1e3) times max(|L(0)|, tiny) above L(0) that does not
    come back below within `WINDOW` (100) steps. A spike that comes back (the catapult) is
    kept; an excursion still open at `steps` is followed past it (not kept) until decided.
    On divergence the steps before the excursion's start are kept.

    **Raises:** `FloatingPointError` from `flows.gradient_descent` when the loss is not
    finite at the start (no step taken: the loss, not divergence)."""
    chunks, params, done, verdict, rule = [], params0, 0, None, None
    t1 = steps * eta
    while verdict is None and (done < steps or (rule is not None and rule.check_step is not None)):
        n = min(CHUNK, steps - done) if done < steps else min(CHUNK, rule.check_step - done)
        failed = None
        try:
            with warnings.catch_warnings():  # the rule is applied here, at every step
                warnings.simplefilter("ignore", flows.DivergenceWarning)
                # GD past 2/η is what this experiment studies (S is recorded along it): the
                # warning at each chunk's start would repeat once per chunk
                warnings.simplefilter("ignore", EdgeOfStabilityWarning)
                part = flows.gradient_descent(
                    loss, params, n * eta, eta=eta, ts=eta * np.arange(n + 1), max_steps=n
                )
        except FloatingPointError as e:
            # Every step is saved: `partial` holds the finite steps before the failure.
            if not chunks and rule is None and getattr(e, "partial", None) is None:
                raise  # the loss at the start: no step was taken
            failed, part = e, getattr(e, "partial", None)
        values = part.loss if part is not None else np.zeros(0)
        for i, value in enumerate(values):
            rule = flows_divergence.DivergenceRule(value) if rule is None else rule
            if (chunks or i) and (verdict := rule.update(done + i, value)) is not None:
                break
        if verdict is None and failed is not None:  # the step after the last finite save
            verdict = rule.update(done + max(len(values), 1), np.inf)
            if "the loss is" not in str(failed):
                verdict = dataclasses.replace(
                    verdict,
                    reason=f"the iterates became non-finite within steps {done} to {done + n}",
                )
        if part is not None and done < steps:
            chunks.append(part if not chunks else _slice(part, len(part.ts), start=1))
        done += n
        params = part.at(-1) if part is not None else params
        report(min(done, steps) * eta, t1)
    trajectory = _join(chunks, eta)
    if verdict is None:
        return Descent(trajectory, None)
    keep = max(verdict.step, 1)
    diverged = {
        "step": verdict.step,
        "t": verdict.step * eta,
        "loss": verdict.value,
        "reason": verdict.reason,
    }
    return Descent(_join([_slice(trajectory, keep)], eta), diverged)


def _slice(traj, stop, start=0):
    trainable, static = eqx.partition(traj.params, eqx.is_array)
    trainable = jax.tree.map(lambda a: a[start:stop], trainable)
    return dataclasses.replace(
        traj,
        ts=traj.ts[start:stop],
        params=eqx.combine(trainable, static),
        loss=traj.loss[start:stop],
        observables={k: v[start:stop] for k, v in traj.observables.items()},
    )


def _join(chunks, eta):
    """One trajectory of consecutive chunks (each but the first without its first save)."""
    trainables, static = [], None
    for c in chunks:
        trainable, static = eqx.partition(c.params, eqx.is_array)
        trainables.append(trainable)
    params = eqx.combine(jax.tree.map(lambda *a: np.concatenate(a), *trainables), static)
    steps = np.arange(sum(len(c.ts) for c in chunks))  # the chunks' own ts start at 0
    first = chunks[0]
    return flows.Trajectory(
        eta * steps,
        params,
        np.concatenate([c.loss for c in chunks]),
        {},
        {**first.stats, "num_steps": int(steps[-1])},
        {**first.config, "t1": float(eta * steps[-1])},
    )
