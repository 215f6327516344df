"""The event loop of filippov_flow against the loop it replaced: regula falsi (Anderson–Björck)
instead of bisection to locate events, and pieces saved at the next 8 save times (solved
again with all of them when they reach past) instead of at every pending one.

The reference is the former loop, restored by putting back its root finder (bisection that
stops on the bracket width) and saving at every pending time: the same events, and the same
weights at every save time to 1e-10.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import pytest

import flows
import flows.nonsmooth._filippov as F
import models
from flows.nonsmooth._event_root import AndersonBjorck

EVENT_STATS = ("events", "crossings", "sliding_entries", "sliding_exits", "pieces")


class _BracketBisection(optx.Bisection):
    """The former root finder: bisection that stops on the width of the bracket alone."""

    def terminate(self, fn, y, args, options, state, tags):
        small = jnp.abs(state.lower - state.upper) < self.atol + self.rtol * jnp.abs(y)
        return small, optx.RESULTS.successful


def _flat(traj):
    leaves = jax.tree.leaves(models.partition(traj.params)[0])
    return np.concatenate([np.asarray(x).reshape(len(traj.ts), -1) for x in leaves], axis=1)


def _both(monkeypatch, solve):
    new = solve()
    with monkeypatch.context() as m:
        m.setattr(F, "_ROOT", _BracketBisection(rtol=1e-15, atol=1e-15, flip=True))
        m.setattr(F, "_SAVE_WINDOW", None)
        old = solve()
    return new, old


@pytest.mark.slow  # compiles the piece solve for two save lengths under both root finders
def test_event_loop_matches_the_bisection_loop_on_a_doubled_relu_net(monkeypatch):
    """The lazy ReLU problem of tests/flows/test_lazy_kinked.py at α = 1: crossings, sliding
    entries and an exit of a width-6 doubled net, and a piece solved again past its window.
    (It replaced a second case, one ReLU neuron that crosses into sliding, which ran the same
    loop with one event and compiled the piece solve anew for its shapes.)"""
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((4, 3)), rng.standard_normal(4)
    net = models.TwoLayerNet(3, 6, activation="relu", key=jax.random.PRNGKey(2))
    model = models.symmetrize(net, "doubled")
    t1 = 19.9
    ts = np.concatenate([[0.0], np.logspace(-2, np.log10(t1), 12)[:-1], [t1]])

    def solve():
        return flows.nonsmooth.filippov_flow(
            model, (X, Y), t1, loss=flows.SquaredLoss("sum"), ts=ts, rtol=1e-10, atol=1e-12
        )

    new, old = _both(monkeypatch, solve)
    assert {k: new.stats[k] for k in EVENT_STATS} == {k: old.stats[k] for k in EVENT_STATS}
    assert new.stats["sliding_at_ts"] == old.stats["sliding_at_ts"]
    assert new.stats["crossings"] >= 1 and new.stats["sliding_exits"] >= 1
    assert new.stats["sliding_entries"] >= 1
    assert new.stats["pieces_solved_again"] >= 1  # a piece reached past its 8 save times
    assert new.stats["num_steps"] == old.stats["num_steps"]
    # measured 3.6e-15 (7 events: 4 crossings, 2 sliding entries, 1 exit; 1 piece solved again)
    assert np.abs(_flat(new) - _flat(old)).max() <= 1e-10


def _root(fn, lower, upper):
    return optx.root_find(
        lambda t, _: fn(t),
        AndersonBjorck(rtol=1e-15, atol=1e-15),
        jnp.asarray(upper),
        options=dict(lower=lower, upper=upper),
        throw=False,
    )


def test_anderson_bjorck_finds_the_root_of_cos_t_minus_t_in_few_steps():
    sol = _root(lambda t: jnp.cos(t) - t, 0.0, 1.0)
    # the Dottie number; measured error 0 (all 16 digits) after 6 steps (bisection: 50)
    assert abs(float(sol.value) - 0.7390851332151607) <= 1e-14
    assert int(sol.stats["num_steps"]) <= 10


def test_anderson_bjorck_keeps_the_end_without_a_sign_change_or_at_a_root():
    assert float(_root(lambda t: t - 3.0, 0.0, 1.0).value) == 1.0  # no sign change: upper
    assert float(_root(lambda t: 0.5 - t, 0.5, 1.0).value) == 0.5  # fn(lower) = 0: lower


def test_anderson_bjorck_locates_a_jump_by_falling_back_to_bisection():
    """A sign change without a root (the smallest entry changes, a sliding slope jumps): the
    secant steps stall against the jump, and the safeguard bisects."""
    sol = _root(lambda t: jnp.where(t < 0.3, 1e-9 * (0.3 - t), -(t - 0.3) - 1.0), 0.0, 1.0)
    assert sol.result == optx.RESULTS.successful
    assert abs(float(sol.value) - 0.3) <= 1e-14  # measured 5.6e-16 after 51 steps
