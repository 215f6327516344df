"""The fast path of the Filippov piece loop: runs of pieces that end in plain crossings, in one
compiled program (a `lax.while_loop` over pieces, each a diffrax solve ending at its event).

At a crossing both one-sided fields agree on a side (Filippov 1988, §2.4), so the entry only
changes side: the loop decides it as `Pieces.settle` does (the same `_inspect` passes, the
product z = X̃Bᵀ shared by both) and starts the next piece. It returns to the host before
anything else: an event that needs the host's decisions (a sliding entry, an exit, a second
entry due at the same event), a piece that saved (the host keeps the saves), `t1`, the
per-call event budget (so that progress and checkpoints happen between calls), the step
budget, or a piece it does not keep (one that ran past `_WINDOW` save times or `steps` steps
without an event, or failed), which the host then solves as before.
"""

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._solver._solve import _initial_state, save_state, solve_from_state
from ._pieces import _AT_KINK, _SLACK, check_chatter, inspect_at

_WINDOW = 8  # save times a piece of the loop saves at (the host's `_SAVE_WINDOW`)

# why the loop returned
DONE = 0  # t1, a piece that saved, or a budget: the host carries on with the loop
SETTLE = 1  # the last piece ended at an event the host decides (`Pieces.settle`)
ABORTED = 2  # the next piece was not kept: the host solves it


class Run(NamedTuple):
    """What `crossing_run` returns (arrays); counts are increments over the call."""

    t: jax.Array
    y: jax.Array
    dt0: jax.Array
    sign: jax.Array
    slack: jax.Array
    done: jax.Array  # save times done after the call
    saved: jax.Array  # (_WINDOW, size): the saves of the last piece, `n_saved` rows valid
    n_saved: jax.Array
    why: jax.Array
    num_steps: jax.Array
    num_accepted_steps: jax.Array
    num_rejected_steps: jax.Array
    pieces: jax.Array
    events: jax.Array  # events decided in the loop (crossings or no change of side)
    crossings: jax.Array
    event_t: jax.Array  # (budget,): the times of those events
    event_ij: jax.Array  # (budget, 2): their entries
    crossed: jax.Array  # (budget,): whether the entry changed side


def _decide(field, y, mode, sign):
    """`Pieces.settle` for an event that is a plain crossing (or no decision at all):
    (host needed, new sign, new slack, (i, j), crossed). Host needed: an exit, a sliding
    entry, or a second entry due after the first was decided; `Pieces.settle` then takes
    every decision from this state, as it would have."""
    zero_slack = jnp.zeros_like(mode.slack)
    at = eqx.tree_at(lambda md: (md.sign, md.slack), mode, (sign, zero_slack))
    z = field.Xt @ field.unpack(y)[1].T  # y is the same in both passes
    dist, ends, _, i, j, z_plus, z_minus = inspect_at(field, y, z, at, mode.sliding)
    exits = jnp.any(ends)
    due = ~mode.sliding[i, j] & (dist[i, j] <= _AT_KINK)
    slides = (z_plus < 0) & (0 < z_minus)
    up = (z_plus > 0) & (z_minus >= 0) | (z_plus >= 0) & (z_minus > 0)
    down = (z_plus < 0) & (z_minus <= 0) | (z_plus <= 0) & (z_minus < 0)
    old = sign[i, j]
    side = jnp.where(up, 1.0, jnp.where(down, -1.0, -old))
    new_sign = jnp.where(due, sign.at[i, j].set(side), sign)
    crossed = due & (side != old)

    def second():  # the next pass of `Pieces.settle`, with (i, j) handled
        handled = mode.sliding.at[i, j].set(True)
        again = eqx.tree_at(lambda md: md.sign, at, new_sign)
        dist2, ends2, _, i2, j2, _, _ = inspect_at(field, y, z, again, handled)
        more = jnp.any(ends2) | ~handled[i2, j2] & (dist2[i2, j2] <= _AT_KINK)
        return more, dist2

    more, dist = jax.lax.cond(due & ~exits & ~slides, second, lambda: (False, dist))
    host = exits | due & slides | more
    new_sign = jnp.where(host, sign, new_sign)  # the host decides from the event's state
    slack = jnp.where(mode.sliding, 0.0, jnp.maximum(0.0, _SLACK - dist))
    return host, new_sign, slack, jnp.stack([i, j]).astype(jnp.int32), crossed


@eqx.filter_jit
def crossing_run(field, solver, event, y, t, t1, dt0, mode, ts, done, rtol, atol, dtmin,
                 steps, budget, n_events):  # fmt: skip
    """Pieces from (t, y) on `mode` until one of the returns in the module docstring.

    `ts`: all the save times padded with `_WINDOW` times `t1`; `done`: how many are saved;
    `steps`: a piece's step budget; `budget`: the solver steps plus events left to the solve;
    `n_events`: the events this call may decide (static: the length of the event record).
    """
    n_ts = ts.shape[0] - _WINDOW
    i0 = jnp.zeros((), jnp.int32)
    size = y.shape[0]
    init = Run(
        t, y, dt0, mode.sign, mode.slack, done, jnp.zeros((_WINDOW, size), y.dtype), i0,
        jnp.asarray(-1, jnp.int32), i0, i0, i0, i0, i0, i0,
        jnp.full((n_events,), jnp.nan, y.dtype), jnp.zeros((n_events, 2), jnp.int32),
        jnp.zeros((n_events,), bool),
    )  # fmt: skip

    def body(c: Run) -> Run:
        md = eqx.tree_at(lambda m_: (m_.sign, m_.slack), mode, (c.sign, c.slack))
        window = jax.lax.dynamic_slice(ts, (c.done,), (_WINDOW,))
        state = _initial_state(field, c.y, c.t, t1, solver, rtol, atol, dtmin, c.dt0, md)
        span = solve_from_state(
            field, save_state, c.y, c.t, t1, window, state, solver, rtol, atol, dtmin, steps,
            md, event,
        )  # fmt: skip
        ev = span.event
        t_end, y_end, st = span.t_end[0], span.y_end[0], span.stats
        n_new = jnp.minimum(jnp.sum(jnp.isfinite(span.save_ts)), n_ts - c.done).astype(jnp.int32)
        nxt = jnp.minimum(c.done + _WINDOW, n_ts + _WINDOW - 1)
        beyond = (c.done + _WINDOW < n_ts) & (~ev | (t_end >= ts[nxt]))
        keep = span.ok & ~beyond
        dt_next = jnp.maximum(span.state[1][1], 1e-14 * jnp.maximum(1.0, t_end))
        count = {k_: st[k_].astype(jnp.int32) for k_ in ("num_steps", "num_accepted_steps",
                                                      "num_rejected_steps")}  # fmt: skip
        nsteps = c.num_steps + count["num_steps"]

        def decide():
            return _decide(field, y_end, md, c.sign)

        def no_event():
            ij = jnp.zeros((2,), jnp.int32)
            return jnp.asarray(False), c.sign, c.slack, ij, jnp.asarray(False)

        host, sign, slack, ij, crossed = jax.lax.cond(keep & ev, decide, no_event)
        decided = keep & ev & ~host
        k = jnp.minimum(c.events, n_events - 1)
        events = c.events + decided.astype(jnp.int32)
        used = nsteps + events  # of this call; `budget` holds the earlier ones
        why = jnp.where(~keep, ABORTED, jnp.where(ev & host, SETTLE, DONE))
        stop = ~keep | (ev & host) | (n_new > 0) | ~ev | (events >= n_events) | (used > budget)

        def pick(new, old):
            return jnp.where(keep, new, old)

        return Run(
            t=pick(t_end, c.t),
            y=pick(y_end, c.y),
            dt0=pick(dt_next, c.dt0),
            sign=pick(sign, c.sign),
            slack=pick(slack, c.slack),
            done=pick(c.done + n_new, c.done),
            saved=pick(span.saved, c.saved),
            n_saved=pick(n_new, 0),
            why=jnp.where(stop, why, -1).astype(jnp.int32),
            num_steps=pick(nsteps, c.num_steps),
            num_accepted_steps=pick(
                c.num_accepted_steps + count["num_accepted_steps"], c.num_accepted_steps
            ),
            num_rejected_steps=pick(
                c.num_rejected_steps + count["num_rejected_steps"], c.num_rejected_steps
            ),
            pieces=pick(c.pieces + 1, c.pieces),
            events=events,
            crossings=c.crossings + (decided & crossed).astype(jnp.int32),
            event_t=jnp.where(decided, c.event_t.at[k].set(t_end), c.event_t),
            event_ij=jnp.where(decided, c.event_ij.at[k].set(ij), c.event_ij),
            crossed=jnp.where(decided, c.crossed.at[k].set(crossed), c.crossed),
        )

    return jax.lax.while_loop(lambda c: c.why < 0, body, init)


def take(run: Run, pieces, max_steps: int) -> None:
    """Put a run's counts, sides and events into `pieces`, checking for chatter after each of
    its events as the host loop does (`check_chatter`)."""
    c = pieces.counts
    c.num_steps += int(run.num_steps)
    c.num_accepted_steps += int(run.num_accepted_steps)
    c.num_rejected_steps += int(run.num_rejected_steps)
    c.pieces += int(run.pieces)
    c.events += int(run.events)
    c.crossings += int(run.crossings)
    pieces.sign, pieces.slack = np.array(run.sign), np.array(run.slack)
    times, ij, crossed = np.asarray(run.event_t), np.asarray(run.event_ij), np.asarray(run.crossed)
    for k in range(int(run.events)):
        if crossed[k]:
            pieces.recent.append((int(ij[k, 0]), int(ij[k, 1])))
        pieces.event_times.append(float(times[k]))
        check_chatter(pieces, float(times[k]), max_steps)
