"""The compiled piece loop of filippov_flow (`flows.nonsmooth._loop`: runs of crossings in one
`lax.while_loop`) against the loop in which every piece returns to the host (the former loop,
`_COMPILED_LOOP = False`): the same events at the same times, the same steps and pieces, and
the same weights at every save time."""

import jax
import numpy as np
import pytest

import flows
import flows.nonsmooth._filippov as F
import flows.nonsmooth._loop as L
import models

COUNTS = ("num_steps", "num_accepted_steps", "num_rejected_steps", "events", "crossings",
          "sliding_entries", "sliding_exits", "pieces")  # fmt: skip


def _flat(traj):
    leaves = jax.tree.leaves(models.partition(traj.params)[0])
    return np.concatenate([np.asarray(x).reshape(len(traj.ts), -1) for x in leaves], axis=1)


def _solve(monkeypatch, compiled, model, data, t1, ts):
    """The trajectory and the time of every event (each is checked for chatter once)."""
    times = []

    def record(pieces, t, max_steps):
        times.append(t)

    with monkeypatch.context() as m:
        m.setattr(F, "_COMPILED_LOOP", compiled)
        m.setattr(F, "check_chatter", record)
        m.setattr(L, "check_chatter", record)
        # 4 events a call: the loop also returns for its event budget many times
        m.setattr(F, "_LOOP_EVENTS", 4)
        m.setattr(F, "_LOOP_AFTER", 0)  # the loop from the first event on
        traj = flows.nonsmooth.filippov_flow(
            model, data, t1, loss=flows.SquaredLoss("sum"), ts=ts, rtol=1e-10, atol=1e-12
        )
    return traj, np.asarray(times)


@pytest.mark.slow  # compiles the loop and the piece solve: about 25 s of CPU
def test_the_compiled_loop_takes_the_same_events_and_saves_as_the_host_loop(monkeypatch):
    """A generic (not symmetrised) ReLU net of width 12 on 20 random points in R⁴ to t = 20:
    66 crossings decided in the loop, 33 sliding entries and 22 exits decided by the host,
    and pieces solved again by the host past the loop's 8 save times."""
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((20, 4)), rng.standard_normal(20)
    model = models.TwoLayerNet(4, 12, activation="relu", key=jax.random.PRNGKey(0))
    t1 = 20.0
    ts = np.concatenate([[0.0], np.logspace(-2, np.log10(t1), 15)[:-1], [t1]])
    new, t_new = _solve(monkeypatch, True, model, (X, Y), t1, ts)
    old, t_old = _solve(monkeypatch, False, model, (X, Y), t1, ts)
    assert {k: new.stats[k] for k in COUNTS} == {k: old.stats[k] for k in COUNTS}
    assert new.stats["sliding_at_ts"] == old.stats["sliding_at_ts"]
    assert new.stats["crossings"] >= 50 and new.stats["sliding_entries"] >= 20
    assert new.stats["sliding_exits"] >= 10 and new.stats["pieces_solved_again"] >= 1
    assert len(t_new) == len(t_old) == new.stats["events"]
    # measured 0 (bit for bit) for both on 116 events, 1,446 steps (load 10, CPU)
    assert np.abs(t_new - t_old).max() <= 1e-10
    assert np.abs(_flat(new) - _flat(old)).max() <= 1e-10
