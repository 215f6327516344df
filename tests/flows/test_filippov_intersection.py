"""filippov_flow where a neuron reaches two of its kinks at once (codimension 2, issue 37).

A ReLU neuron b_j is put on the intersection of the kinks of x1 and x2 (b ⟂ x1, x2) with
both kinks attracting (a·r_k > 0). The Filippov set of ḃ is −a·(u + r1 θ1 x1 + r2 θ2 x2) with
θ ∈ [0, 1]²; the forward solution moves with its minimum-norm element (module docstring of
`flows/nonsmooth/_intersection.py`). The test computes that element on its own, by
enumerating the nine faces of the box (a slope at 0, at 1, or free and fitted by least
squares), and checks the flow's field against it. Deciding the two kinks one at a time
(before) gave another piece at 3 of the 16 cases below.
"""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import flows
import models
from flows.nonsmooth._pieces import Pieces, rhs
from flows.nonsmooth._sliding import PieceField


def _cases(count=220, seed=1):
    """(X (6, 3), y (6,), b (3,)) with b on the kinks of x1, x2, both attracting at a = 1."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        X, y = rng.normal(size=(6, 3)), rng.normal(size=6)
        b = np.cross(X[0], X[1])
        if np.all(-y[:2] > 0):  # r_k = f − y_k = −y_k on the kinks
            yield X, y, b / np.linalg.norm(b)


def _min_norm(X, y, b):
    """(ḃ (3,), θ (2,)): −(u + A θ) at the θ in [0, 1]² of least ‖u + Aθ‖, face by face."""
    z = X @ b
    r = np.where(np.arange(6) < 2, 0.0, np.maximum(z, 0.0)) - y
    u = (r[2:] * (z[2:] > 0)) @ X[2:]
    A = (r[:2, None] * X[:2]).T
    best = None
    for face in itertools.product((0.0, 1.0, None), repeat=2):
        free = [k for k in range(2) if face[k] is None]
        theta = np.array([0.0 if f is None else f for f in face])
        if free:
            rest = u + A @ theta
            theta[free] = np.linalg.lstsq(A[:, free], -rest, rcond=None)[0]
        if np.all((theta >= 0) & (theta <= 1)):
            v = u + A @ theta
            if best is None or v @ v < best[0] @ best[0]:
                best = (v, theta)
    return -best[0], best[1]


def _settled_field(X, y, b):
    field = PieceField(
        jnp.asarray(X), jnp.asarray(X @ X.T), jnp.asarray(np.linalg.norm(X, axis=1)),
        jnp.ones(1), jnp.zeros(0), jnp.zeros(6), jnp.asarray(y), jnp.asarray(1.0),
        jnp.asarray(0.0), jnp.asarray(1.0), flows.SquaredLoss(), 1,
    )  # fmt: skip
    pieces = Pieces(field, 6, 1, (0.0, 1.0))
    pieces.sign = np.where(X @ b > 0, 1.0, -1.0)[:, None]
    state = pieces.settle(jnp.asarray(np.r_[1.0, b]))
    return np.asarray(rhs(field, state, pieces.mode()))[1:], pieces


def test_arrival_on_two_attracting_kinks_moves_with_the_min_norm_filippov_element():
    sliding = []
    for X, y, b in _cases():
        v, theta = _min_norm(X, y, b)
        if not np.any((theta > 1e-9) & (theta < 1 - 1e-9)):
            continue  # neither slides: the kinks are crossed, checked by test_filippov
        got, pieces = _settled_field(X, y, b)
        assert np.abs(got - v).max() <= 1e-10 * np.abs(v).max()  # measured 3e-16
        inside = [(k, 0) in pieces.slots for k in range(2)]
        assert inside == list((theta > 1e-9) & (theta < 1 - 1e-9))
        sliding.append(sum(inside))
    assert sorted(sliding) == [1] * 14 + [2] * 2  # the cases: one slides, or both do


def test_sliding_on_both_kinks_stays_on_them_and_keeps_the_invariant():
    X, y, b = next(c for c in _cases() if np.all(_min_norm(*c)[1] % 1 > 1e-9))
    net = models.TwoLayerNet(3, 1, activation="relu", key=jax.random.PRNGKey(0))
    net = eqx.tree_at(lambda n: (n.a, n.b), net, (jnp.array([1.0]), jnp.asarray(b[None])))
    h = 1e-3
    traj = flows.nonsmooth.filippov_flow(
        net, (X, y), h, ts=np.array([0.0, h]), rtol=1e-12, atol=1e-14
    )
    b1 = np.asarray(traj.params.b[-1, 0])
    assert traj.stats["sliding_at_ts"] == [2, 2]
    assert np.abs(X[:2] @ b1).max() <= 1e-14  # z1 = z2 = 0 while sliding
    a1 = float(traj.params.a[-1, 0])
    assert abs((b1 @ b1 - a1**2) - (b @ b - 1.0)) <= 1e-12  # ‖b‖² − a²; measured 2e-16
    v, _ = _min_norm(X, y, b)
    assert np.abs((b1 - b) / h - v).max() <= 1e-2 * np.abs(v).max()  # O(h); measured 2e-4
