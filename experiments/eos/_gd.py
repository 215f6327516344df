"""Gradient descent saved at every step, in chunks, stopped where it diverges."""

import dataclasses
import warnings

import equinox as eqx
import jax
import numpy as np

import flows

#: GD has diverged once its loss exceeds this multiple of the initial loss (or is not finite).
DIVERGED = 1e3
CHUNK = 50  # steps per call of flows.gradient_descent


@dataclasses.dataclass(frozen=True)
class Descent:
    """GD from step 0 to the last finite step below the divergence threshold.

    `trajectory`: a `flows.Trajectory` saved at every step (t = kη, params included);
    `diverged`: None, or `{"step", "t", "loss", "reason"}` where it stopped."""

    trajectory: flows.Trajectory
    diverged: dict | None


def descend(loss, params0, *, eta: float, steps: int, report=lambda t, t1: None) -> Descent:
    """`steps` steps of gradient descent with step `eta` from `params0` (flows.gradient_descent,
    `CHUNK` steps per call), every step saved. It stops at the first step whose loss is not
    finite or exceeds `DIVERGED`·L(0), and reports that step and its loss; when the iterates
    overflow inside a chunk (non-finite parameters), the last finite step before it.
    Divergence is detected here (at `DIVERGED`), so `flows.DivergenceWarning` is not shown."""
    chunks, params, done, diverged = [], params0, 0, None
    t1 = steps * eta
    while done < steps and diverged is None:
        n = min(CHUNK, steps - done)
        failed = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", flows.DivergenceWarning)
                part = flows.gradient_descent(
                    loss, params, n * eta, eta=eta, ts=eta * np.arange(n + 1), max_steps=n
                )
        except FloatingPointError as e:
            # Every step is saved: `partial` holds the finite steps before the failure.
            failed, part = e, getattr(e, "partial", None)
            if part is None:
                last = chunks[-1] if chunks else None
                diverged = {
                    "step": done,
                    "t": done * eta,
                    "loss": float(last.loss[-1]) if last is not None else None,
                    "reason": f"the iterates became non-finite within steps {done} to "
                    f"{done + n}; loss is the last finite one",
                }
                break
        bad = ~np.isfinite(part.loss) | (part.loss > DIVERGED * (chunks or [part])[0].loss[0])
        if bad.any():
            j = int(np.argmax(bad))
            keep = j  # steps done + 0 .. done + j - 1 are below the threshold
            diverged = {
                "step": done + j,
                "t": (done + j) * eta,
                "loss": float(part.loss[j]) if np.isfinite(part.loss[j]) else None,
                "reason": f"the loss exceeded {DIVERGED:g} times its initial value"
                if np.isfinite(part.loss[j])
                else "the loss became non-finite",
            }
            part = _slice(part, max(keep, 1))
        elif failed is not None:  # the step after the last finite one is the failure
            j = len(part.ts)
            diverged = {
                "step": done + j,
                "t": (done + j) * eta,
                "loss": None,
                "reason": "the loss became non-finite"
                if "the loss is" in str(failed)
                else f"the iterates became non-finite after step {done + j - 1}",
            }
        chunks.append(part if not chunks else _slice(part, len(part.ts), start=1))
        done += n
        params = part.at(-1)
        report(min(done, steps) * eta, t1)
    return Descent(_join(chunks, eta), diverged)


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
