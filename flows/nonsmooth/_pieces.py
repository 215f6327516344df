"""The host side of the Filippov flow: the current piece (sides, sliding slots) and the
decisions taken at an event (Filippov 1988, §2.4: cross, start sliding, or leave a surface)."""

import collections
import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._failures import MaxStepsReached
from ._sliding import Mode, PieceField

_AT_KINK = 1e-10  # distance (‖Δb‖ units) or slope margin below which an entry is at an event
_SLACK = 1e-12  # the event function starts at least this far above 0 on a new piece
_ZENO_EVENTS = 500  # this many events in a time span < 1e-9·max(1, t): unresolved chatter
# Sliding slots are padded to a power of two, at least this many: each size is one more
# compilation of every piece solve, and a 32×32 sliding system costs little beside a field
# evaluation of the default lazy net (measured: docs/performance.md)
_MIN_SLOTS = 32


@eqx.filter_jit
def _inspect(field, y, mode, handled):
    """Everything `Pieces.settle` decides on at state y, in one compiled call: the distances
    (n, m) and slot margins (K,) of `PieceField.values`, the slots' slopes θ (K,), the
    nearest entry (i, j) to its kink among those not sliding nor `handled` (n, m), and ż_ij
    there under each one-sided field (side +1, side −1), computed only where that entry is at
    its kink and no slot is at an end of its interval."""
    _, B, _ = field.unpack(y)
    return inspect_at(field, y, field.Xt @ B.T, mode, handled)


def inspect_at(field, y, z, mode, handled):
    """`_inspect` given z = X̃Bᵀ of y (a later pass at the same state reuses it)."""
    a, _, beta = field.unpack(y)
    _, theta, _ = field.slopes(z, a, beta, mode)
    dist, margin = field.distances(z, theta, mode)
    masked = jnp.where(handled, jnp.inf, dist)
    k = jnp.argmin(masked)
    i, j = k // field.m, k % field.m
    due = (masked.ravel()[k] <= _AT_KINK) & ~jnp.any(margin <= _AT_KINK)

    def zdots():
        def zdot(side):
            trial = eqx.tree_at(lambda md: md.sign, mode, mode.sign.at[i, j].set(side))
            return field.zdot_at(z, y, trial, i, j)

        return zdot(1.0), zdot(-1.0)

    zero = jnp.zeros((), dist.dtype)
    z_plus, z_minus = jax.lax.cond(due, zdots, lambda: (zero, zero))
    return dist, margin, theta, i, j, z_plus, z_minus


@eqx.filter_jit
def rhs(field, y, mode):
    return field(0.0, y, mode)


@dataclasses.dataclass
class Counts:
    num_steps: int = 0
    num_accepted_steps: int = 0
    num_rejected_steps: int = 0
    events: int = 0
    crossings: int = 0
    sliding_entries: int = 0
    sliding_exits: int = 0
    pieces: int = 0


class Pieces:
    """The host side of the loop: the current piece and the decisions taken at events."""

    def __init__(self, field: PieceField, n: int, m: int, slopes):
        self.field, self.n, self.m = field, n, m
        self.slope_minus, self.slope_plus = slopes
        self.sign = np.ones((n, m))
        self.sliding = np.zeros((n, m), bool)
        self.slack = np.zeros((n, m))
        self.slots: list[tuple[int, int]] = []
        self.counts = Counts()
        self.recent = collections.deque(maxlen=_ZENO_EVENTS)  # surfaces (i, j)
        self.event_times = collections.deque(maxlen=_ZENO_EVENTS)

    def mode(self, sign=None, sliding=None, slack=None, slots=None) -> Mode:
        slots = self.slots if slots is None else slots
        cap = max(_MIN_SLOTS, 1 << (len(slots) - 1).bit_length()) if slots else _MIN_SLOTS
        idx = np.zeros((cap, 2), np.int32)
        idx[: len(slots)] = np.asarray(slots, np.int32).reshape(-1, 2)
        on = np.arange(cap) < len(slots)
        return Mode(
            jnp.asarray(self.sign if sign is None else sign),
            jnp.asarray(self.sliding if sliding is None else sliding),
            jnp.asarray(np.zeros((self.n, self.m)) if slack is None else slack),
            jnp.asarray(idx[:, 0]),
            jnp.asarray(idx[:, 1]),
            jnp.asarray(on),
        )

    def _snap(self, y, j):
        """Put neuron j exactly on its sliding surfaces: b_j −= X̃_Sᵀ G_SS⁺ z_S. This moves b_j
        by the root finder's error and ‖b_j‖² by its square."""
        rows = [i for i, jj in self.slots if jj == j]
        f = self.field
        m, dt = self.m, f.Xt.shape[1]
        y = np.array(y)
        b = y[m + j * dt : m + (j + 1) * dt]
        Xs = np.asarray(f.Xt)[rows]
        b -= Xs.T @ np.linalg.pinv(Xs @ Xs.T) @ (Xs @ b)
        y[m + j * dt : m + (j + 1) * dt] = b
        return jnp.asarray(y)

    def _decide(self, y, i, j, z_plus, z_minus, start=False):
        """Side or sliding for entry (i, j), which sits on its kink, from ż_ij under the
        one-sided fields of side +1 (`z_plus`) and side −1 (`z_minus`). At the start
        (`start`) a kink that both push away from is refused: the flow is not unique there."""
        old = self.sign[i, j]
        if start and z_plus > 0 > z_minus:
            raise ValueError(
                f"model: the pre-activation z_ij = b_j·x̃_i of input i={i}, neuron j={j} is "
                f"on its kink at t=0 (|z_ij| <= {_AT_KINK:g}) and both one-sided fields push "
                f"away from it (ż_ij = {z_plus:.6g} on the side z > 0, {z_minus:.6g} on the "
                "side z < 0): a Filippov flow leaves to either side or stays, not unique; "
                "start off the kink"
            )
        if z_plus < 0 < z_minus:  # both one-sided fields push into the surface
            self.sliding[i, j] = True
            self.slots.append((i, j))
            self.counts.sliding_entries += 1
            self.recent.append((i, j))
            return self._snap(y, j)
        if z_plus > 0 and z_minus >= 0 or z_plus >= 0 and z_minus > 0:
            side = 1.0
        elif z_plus < 0 and z_minus <= 0 or z_plus <= 0 and z_minus < 0:
            side = -1.0
        else:  # both push away (only at a tangency): carry on across
            side = -old
        if side != old:
            self.counts.crossings += 1
            self.recent.append((i, j))
        self.sign[i, j] = side
        return y

    def leave(self, k, theta):
        """Slot k leaves its surface, to the side whose slope its slope θ is nearer to."""
        i, j = self.slots.pop(k)
        up = abs(theta - self.slope_plus) < abs(theta - self.slope_minus)
        self.sign[i, j] = 1.0 if up else -1.0
        self.sliding[i, j] = False
        self.counts.sliding_exits += 1
        self.recent.append((i, j))
        return i, j

    def settle(self, y, start=False):
        """Take every decision due at this state: slopes at an end of their interval leave
        their surface, then pre-activations on a kink cross or start sliding. Each entry is
        decided once per event; each pass is one compiled call (`_inspect`). Returns the
        (possibly snapped) state. `start`: this is t = 0, where an entry may already sit on
        its kink (settled here like an event; a repelling kink is refused)."""
        handled = np.zeros((self.n, self.m), bool)
        for _ in range(4 * self.n * self.m + 8):
            out = _inspect(self.field, y, self.mode(), jnp.asarray(handled | self.sliding))
            dist, margin, theta, i, j, z_plus, z_minus = out
            margin = np.asarray(margin)
            exits = [k for k in range(len(self.slots)) if margin[k] <= _AT_KINK]
            if exits:
                theta = np.asarray(theta)
                for k in sorted(exits, reverse=True):
                    handled[self.leave(k, float(theta[k]))] = True
                continue
            i, j = int(i), int(j)
            if handled[i, j] or self.sliding[i, j] or float(dist[i, j]) > _AT_KINK:
                break  # `dist` holds the distances of this y and piece
            handled[i, j] = True
            y = self._decide(y, i, j, float(z_plus), float(z_minus), start)
        self.slack = np.where(self.sliding, 0.0, np.maximum(0.0, _SLACK - np.asarray(dist)))
        return y

    def surfaces(self, limit=8) -> str:
        common = collections.Counter(self.recent).most_common(limit)
        busy = ", ".join(f"(i={i}, j={j}) ×{c}" for (i, j), c in common) or "none"
        now = ", ".join(f"(i={i}, j={j})" for i, j in self.slots[:limit]) or "none"
        return (
            f"surfaces z_ij = b_j·x_i = 0 with the most recent events: {busy}; sliding now: {now}"
        )


def check_chatter(pieces: Pieces, t: float, max_steps: int) -> None:
    times = pieces.event_times
    if len(times) == _ZENO_EVENTS and times[-1] - times[0] < 1e-9 * max(1.0, t):
        raise MaxStepsReached(
            f"events accumulate at t={t:.12g}: {len(times)} events within "
            f"{times[-1] - times[0]:.3g} of flow time, chatter that the sliding rule does not "
            f"resolve; {pieces.surfaces()}",
            t,
        )
