"""Counting vector-field evaluations and Jacobian-vector products, per solve.

Each solve opens a `Counter`; its id travels into the compiled solve as a traced integer, so
that every solve reuses one compilation and still counts only its own evaluations (no module-
wide totals to difference)."""

import itertools
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

_COUNTS: dict[int, list[int]] = {}  # id -> [evaluations, Jacobian-vector products]
_IDS = itertools.count()


def _tick(cid):
    _COUNTS[int(cid)][0] += 1


def _add_jvps(cid, n):
    _COUNTS[int(cid)][1] += int(n)


@jax.custom_batching.custom_vmap
def _tick_jvps(cid, n, x):
    """Add `n` products to counter `cid` (one host callback); `x`, a tangent entry, keeps the
    call in the linear part of a linearised field. Under `vmap` (a Jacobian materialised
    from p products at once, as the dense LU of "kvaerno5" does) it is still one callback,
    adding `n` times the batch size: the callback of a vmapped `jax.debug.callback` would run
    once per batch element, p host round trips per Jacobian."""
    jax.debug.callback(_add_jvps, cid, n)
    return x


@_tick_jvps.def_vmap
def _tick_jvps_vmap(axis_size, in_batched, cid, n, x):
    # x[0]: still batched along any outer vmap, whose rule multiplies again.
    _tick_jvps(cid, n * axis_size, x[0] if in_batched[2] else x)
    return x, in_batched[2]


@jax.custom_jvp
def _count_jvps(y, cid):
    return y


@_count_jvps.defjvp
def _count_jvps_rule(primals, tangents):
    (y, cid), (dy, _) = primals, tangents
    # The callback takes a tangent value, so it stays in the linear part: under
    # `jax.linearize` (Newton's or Krylov's Jacobian operator) it runs once per product.
    _tick_jvps(cid, jnp.ones((), jnp.int32), jnp.ravel(jax.tree.leaves(dy)[0])[0])
    return y, dy


class Counter:
    """The counts of one solve: `evals` (vector-field evaluations) and `jvps`
    (Jacobian-vector products through the field). Use as a context manager."""

    def __init__(self):
        self.id = next(_IDS)
        _COUNTS[self.id] = [0, 0]
        # made once: a new device scalar per wrap costs (docs/performance.md), per segment
        self._cid = jax.device_put(np.int32(self.id))  # jnp.asarray would compile a cast

    def wrap(self, field: Callable, count: bool, solver_counts_jvps: bool = False):
        """`field` as a `CountedField` ticking this counter (see there)."""
        return CountedField(field, self._cid, count, solver_counts_jvps)

    @property
    def evals(self) -> int:
        jax.effects_barrier()
        return _COUNTS[self.id][0]

    @property
    def jvps(self) -> int:
        jax.effects_barrier()
        return _COUNTS[self.id][1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _COUNTS.pop(self.id, None)


@eqx.filter_jit
def _evaluate(field, t, y, args):
    """`field(t, y, args)` as a nested program: a solve program traces the field once for all
    the places diffrax evaluates it (its first-step choice, the stages, the step it traces
    three times), and XLA inlines it."""
    return field(t, y, args)


class CountedField(eqx.Module):
    """Wraps a vector field; with `count=True` each evaluation, and each Jacobian-vector
    product through it, ticks the counter `cid`.

    A host callback costs as much as a Hessian-vector product at p ≈ 10⁴ and far more below
    (docs/performance.md): a solver that knows how many products it made
    (`ExpRosenbrock32`, its Krylov sizes) reports them once per step through `add_jvps`
    instead, with `solver_counts_jvps=True`, and the products themselves are not ticked."""

    field: Callable
    cid: jax.Array
    count: bool = eqx.field(static=True)
    solver_counts_jvps: bool = eqx.field(static=True, default=False)

    def __call__(self, t, y, args):
        if self.count:
            jax.debug.callback(_tick, self.cid)
            if not self.solver_counts_jvps:
                y = jax.tree.map(lambda leaf: _count_jvps(leaf, self.cid), y)
        return _evaluate(self.field, t, y, args)

    def add_jvps(self, n) -> None:
        """Add `n` (a traced integer) Jacobian-vector products, when the solver counts them."""
        if self.count and self.solver_counts_jvps:
            jax.debug.callback(_add_jvps, self.cid, n)
