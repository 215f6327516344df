"""The event finder of filippov_flow (secant steps from beyond the root, `BeyondSecant`)
against the one it replaced (Anderson–Björck regula falsi, `AndersonBjorck`): the same
events and the same weights on a small ReLU problem, in fewer root-finder steps per event."""

import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import pytest

import flows
import flows.nonsmooth._filippov as F
import models
from flows.nonsmooth._event_root import AndersonBjorck, BeyondSecant

EVENT_STATS = ("events", "crossings", "sliding_entries", "sliding_exits", "pieces")
_TOL = dict(rtol=1e-15, atol=1e-15)


def _flat(traj):
    leaves = jax.tree.leaves(models.partition(traj.params)[0])
    return np.concatenate([np.asarray(x).reshape(len(traj.ts), -1) for x in leaves], axis=1)


@pytest.mark.slow  # compiles the piece solve for both finders: 12 s (cache warm), 87 s cold
def test_the_same_events_and_weights_as_anderson_bjorck_on_a_doubled_relu_net(monkeypatch):
    """The lazy ReLU problem of tests/flows/test_lazy_kinked.py at α = 1 (width-6 doubled
    net: crossings, sliding entries and an exit), solved with each event finder."""
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((4, 3)), rng.standard_normal(4)
    model = models.symmetrize(
        models.TwoLayerNet(3, 6, activation="relu", key=jax.random.PRNGKey(2)), "doubled"
    )
    t1 = 19.9
    ts = np.concatenate([[0.0], np.logspace(-2, np.log10(t1), 12)[:-1], [t1]])

    def solve():
        return flows.nonsmooth.filippov_flow(
            model, (X, Y), t1, loss=flows.SquaredLoss("sum"), ts=ts, rtol=1e-10, atol=1e-12
        )

    assert isinstance(F._ROOT, BeyondSecant)
    monkeypatch.setattr(F, "_SAVE_WINDOW", None)  # one save length: one compilation each
    new = solve()
    with monkeypatch.context() as m:
        m.setattr(F, "_ROOT", AndersonBjorck(**_TOL))
        old = solve()
    assert {k: new.stats[k] for k in EVENT_STATS} == {k: old.stats[k] for k in EVENT_STATS}
    assert new.stats["sliding_at_ts"] == old.stats["sliding_at_ts"]
    assert new.stats["crossings"] >= 1 and new.stats["sliding_entries"] >= 1
    assert new.stats["sliding_exits"] >= 1
    assert new.stats["num_steps"] == old.stats["num_steps"]
    # measured 2.9e-15 (7 events: 4 crossings, 2 sliding entries, 1 exit; 299 steps)
    assert np.abs(_flat(new) - _flat(old)).max() <= 1e-10


@jax.jit
def _steps(fns_c, fns_v, fns_q):
    """Root-finder steps and roots of both finders on each function (vmapped)."""

    def one(c, v, q):
        fn = lambda t, _: jnp.min(c + v * t + q * t**2)  # noqa: E731
        out = []
        for finder in (AndersonBjorck(**_TOL), BeyondSecant(**_TOL)):
            sol = optx.root_find(
                fn, finder, jnp.asarray(1.0), options=dict(lower=0.0, upper=1.0), throw=False
            )
            out.append((sol.value, sol.stats["num_steps"], fn(sol.value, None)))
        return out

    return jax.vmap(one)(fns_c, fns_v, fns_q)


def test_fewer_root_finder_steps_per_event_on_a_min_of_smooth_entries():
    rng = np.random.default_rng(0)
    c, v, q = (
        rng.uniform(0.05, 3, (400, 30)),
        rng.uniform(-1, 1, (400, 30)),
        0.3 * rng.normal(size=(400, 30)),
    )
    t = np.linspace(0.0, 1.0, 2001)[None, :, None]
    g = np.min(c[:, None] + v[:, None] * t + q[:, None] * t**2, axis=2)
    keep = (g[:, 0] > 0) & (g[:, -1] < 0)
    (r_old, n_old, g_old), (r_new, n_new, g_new) = _steps(c[keep], v[keep], q[keep])
    assert keep.sum() >= 100
    # the same roots: measured 1.1e-15 apart, |g| <= 8.9e-16 at them (366 functions)
    assert np.abs(np.asarray(r_new) - np.asarray(r_old)).max() <= 1e-13
    assert np.abs(np.asarray(g_new)).max() <= 1e-13
    # measured 11.38 steps on average against 18.26 (max 33 against 62)
    assert np.mean(n_new) <= 0.75 * np.mean(n_old)


@pytest.mark.parametrize(
    "fn, root",
    [
        (lambda t: jnp.cos(t) - t, 0.7390851332151607),  # the Dottie number
        (lambda t: jnp.where(t < 0.3, 1e-9 * (0.3 - t), -(t - 0.3) - 1.0), 0.3),  # a jump
    ],
)
def test_beyond_secant_finds_a_root_or_a_jump(fn, root):
    sol = optx.root_find(
        lambda t, _: fn(t), BeyondSecant(**_TOL), jnp.asarray(1.0),
        options=dict(lower=0.0, upper=1.0), throw=False,
    )  # fmt: skip
    assert sol.result == optx.RESULTS.successful
    assert abs(float(sol.value) - root) <= 1e-14


def test_beyond_secant_keeps_the_end_without_a_sign_change_or_at_a_root():
    def value(fn, lower, upper):
        sol = optx.root_find(
            lambda t, _: fn(t), BeyondSecant(**_TOL), jnp.asarray(upper),
            options=dict(lower=lower, upper=upper), throw=False,
        )  # fmt: skip
        return float(sol.value)

    assert value(lambda t: t - 3.0, 0.0, 1.0) == 1.0  # no sign change: upper
    assert value(lambda t: 0.5 - t, 0.5, 1.0) == 0.5  # fn(lower) = 0: lower
