"""filippov_flow near a zero of the loss: a sliding slope θ = φ/r is a ratio of two quantities
of the size of the residual r, so it is known only to about ε·|f|/|r| (issue 37, item 6).

The hand-built problem: one abs neuron f(x) = a·|b·x| in the plane, inputs x1 = (1, 0),
x2 = (0.3, 1), x3 = (−0.6, 1), R = ½Σ(f − y)², started at a = 1, b = (0, 1) with residuals
r = f − y of size 1e-9. On the kink z1 = b·x1 = 0 write b = (0, s); then f(x2) = f(x3) = a·s,
r1 = −y1 stays fixed, D = r2 − r3 stays fixed, and S = r2 + r3 obeys Ṡ = −2(a² + s²)S, so
S = S0·e^{−4t} to relative O(1e-9) (a and s move by O(r)). The abs slope at x1 that keeps
ż1 = 0 is θ = −(0.3·r2 − 0.6·r3)/r1 = (0.15·S − 0.45·D)/r1: the targets put θ(0) = ½ and
θ(∞) = 1.2, so θ reaches the end σ'₊ = 1 of [−1, 1] at t* = ln(3.5)/4 and z1 leaves its kink
to the side z1 > 0. Computed from f − y with f, y ≈ 1, θ carries a round-off of about 1e-7
there: the exit must be decided on that resolution, not on 1e-10 (before: 500 events with no
decision within 1e-9 of flow time, "events accumulate").
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models
from flows.nonsmooth._pieces import Pieces
from flows.nonsmooth._sliding import PieceField

X = np.array([[1.0, 0.0], [0.3, 1.0], [-0.6, 1.0]])
R1 = 1e-9  # r1 = −y1, fixed while z1 slides
T_EXIT = np.log(3.5) / 4.0  # θ(t*) = 1: S(t*) = S0/3.5


def _targets(theta, r1=R1):
    """y with f = (0, 1, 1) at a = 1, b = (0, 1) and r = (r1, (S + D)/2, (S − D)/2), where
    D = −1.2·r1/0.45 (θ(∞) = 1.2) and S puts the slope at x1 at `theta`."""
    diff = -1.2 / 0.45 * r1
    s_sum = (theta * r1 + 0.45 * diff) / 0.15
    r = np.array([r1, 0.5 * (s_sum + diff), 0.5 * (s_sum - diff)])
    return np.array([0.0, 1.0, 1.0]) - r


def _neuron():
    net = models.TwoLayerNet(2, 1, activation="abs", key=jax.random.PRNGKey(0))
    return eqx.tree_at(lambda n: (n.a, n.b), net, (jnp.array([1.0]), jnp.array([[0.0, 1.0]])))


def _sliding_at(theta):
    """The field, the state (a, b) = (1, (0, 1)) and its piece with z1 sliding, for targets
    that put the slope at x1 at `theta`."""
    y = _targets(theta)
    G = X @ X.T
    field = PieceField(
        jnp.asarray(X), jnp.asarray(G), jnp.asarray(np.linalg.norm(X, axis=1)),
        jnp.ones(1), jnp.zeros(0), jnp.zeros(3), jnp.asarray(y), jnp.asarray(1.0),
        jnp.asarray(-1.0), jnp.asarray(1.0), flows.SquaredLoss(), 1,
    )  # fmt: skip
    pieces = Pieces(field, 3, 1, (-1.0, 1.0))
    pieces.sliding[0, 0] = True
    pieces.slots = [(0, 0)]
    return field, pieces, jnp.array([1.0, 0.0, 1.0])


@eqx.filter_jit
def _event(field, y, mode):
    return field.event(0.0, y, mode)


@eqx.filter_jit
def _values(field, y, mode):
    return field.values(y, mode)


def _neighbours(y, count=64, seed=0):
    """y moved by up to two ulps per entry: what the solver's dense output, a last bit of
    BLAS or XLA, may give instead of y."""
    rng = np.random.default_rng(seed)
    y = np.asarray(y)
    return [jnp.asarray(y + rng.integers(-2, 3, y.shape) * np.spacing(y)) for _ in range(count)]


def test_a_slope_at_its_end_within_round_off_leaves_where_the_event_says_so():
    # θ = 1 − 3e-10: the margin (1 − θ)/2 = 1.5e-10 is above the former threshold 1e-10 but
    # far below θ's round-off (measured 3e-8 over two-ulp neighbours): some neighbour's event
    # value is <= 0, so the solver stops there, and the decision at the state must exit.
    field, pieces, y = _sliding_at(1.0 - 3e-10)
    events = [float(_event(field, yn, pieces.mode())) for yn in _neighbours(y)]
    assert min(events) <= 0.0
    pieces.settle(y)
    assert pieces.slots == [] and pieces.counts.sliding_exits == 1
    assert pieces.sign[0, 0] == 1.0  # to the side of slope σ'₊ = 1, the end θ reached


def test_a_slope_well_inside_its_interval_keeps_sliding_at_small_residuals():
    # θ = 0.9: margin 0.05, far above the round-off: no neighbour has an event, no exit
    field, pieces, y = _sliding_at(0.9)
    _, margin, resolution = _values(field, y, pieces.mode())
    assert 0.0 < float(resolution[0]) < 1e-5  # measured 1.6e-7
    assert abs(float(margin[0]) + float(resolution[0]) - 0.05) < 1e-6
    assert all(float(_event(field, yn, pieces.mode())) > 0 for yn in _neighbours(y))
    pieces.settle(y)
    assert pieces.slots == [(0, 0)]


# r1 = 1e-10: before, an event with no decision came first (two events, one exit)
@pytest.mark.parametrize("r1, window", [(1e-9, 1e-4), (1e-10, 2e-3)])
def test_the_flow_leaves_the_kink_once_when_the_slope_reaches_its_end(r1, window):
    # tolerances far below r: the solver's error on S, ~atol + rtol·|f|, sets the exit time's
    # (measured 8e-6 late at r1 = 1e-9, 2e-4 early at 1e-10)
    ts = np.array([0.0, 0.1, T_EXIT - window, T_EXIT + window, 0.5, 1.0])
    data = (X, _targets(0.5, r1))
    traj = flows.nonsmooth.filippov_flow(_neuron(), data, 1.0, ts=ts, rtol=1e-13, atol=1e-16)
    assert traj.stats["sliding_at_ts"] == [1, 1, 1, 0, 0, 0]  # slides until θ = 1
    assert traj.stats["sliding_entries"] == 1 and traj.stats["sliding_exits"] == 1
    assert traj.stats["events"] == 1  # the exit (the entry is decided at t = 0)
    assert np.all(traj.params.b[3:, 0, 0] > 0)  # z1 = b·x1 > 0: the side of slope +1
