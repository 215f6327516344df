"""diffrax's end-of-interval threshold in one step instead of a chain of 100.

`diffrax.diffeqsolve` rounds a step that ends within 100 ULPs of `t1` up to `t1`, and computes
that threshold, `t1` minus 100 ULPs, as 100 chained `equinox.internal.prevbefore` calls
(`diffrax._integrate.loop`). With a traced `t1` (one compilation for every horizon) all 100
reach XLA: a third of the StableHLO operations of the Tsit5 solve program of
`benchmarks/_latency_probe.py` (lines with an operation 1,432 → 963), compiled on every first
call. No diffrax option, controller or solver changes it (diffrax 0.7.2): the threshold is
computed from `t1` before any controller is consulted, and clipping `t1` ourselves leaves it.

`one_step_clip_floor` replaces `equinox.internal.prevbefore`, only for the thread tracing
inside the block, by a function whose k-th call on a chain started at `x` returns
`prevbefore` applied k times to `x` in one step: for finite |x| ≥ 2⁻¹⁰²¹ the float64 bit
pattern moves by k (towards -inf), and anywhere else (zero, subnormals, inf, NaN) the original
function is iterated k times in a `fori_loop`. Every call returns the bits the original chain
would, so results are bit-identical (`tests/flows/test_clip_floor.py`); the first 99 links of
the chain are then unused and JAX drops them before lowering. Other threads, and this one
outside the block, see the original function. The block is re-entrant; the module attribute
is swapped while any block is open and restored when the last one closes.
"""

import contextlib
import threading

import equinox.internal as eqxi
import jax
import jax.numpy as jnp
import numpy as np

_ORIGINAL = eqxi.prevbefore
_LOCK = threading.Lock()
_OPEN = 0  # blocks open in all threads
_LOCAL = threading.local()  # .depth, .chain: {id(result): (result, root, k)}
_ORDINARY = 2.0**-1021  # below, 100 ULPs down could leave the normal floats (or cross 0)


def _iterate(x, k):
    return jax.lax.fori_loop(0, k, lambda _, v: _ORIGINAL(v), x)


@jax.jit
def _down(x, k):
    """`_ORIGINAL` applied `k` (an int64 scalar) times to the float scalar or array `x`, in
    one step where that is exact (see the module docstring). Jitted with `k` traced: the 100
    calls of a chain trace it once (each call is then one cached equation)."""
    if x.dtype != jnp.float64:  # the bit trick below is for float64
        return _iterate(x, k)
    bits = jax.lax.bitcast_convert_type(x, jnp.int64)
    moved = jnp.where(x > 0, bits - k, bits + k)  # sign-magnitude: away from +inf
    fast = jax.lax.bitcast_convert_type(moved, jnp.float64)
    ordinary = jnp.isfinite(x) & (jnp.abs(x) >= _ORDINARY)
    if x.ndim == 0:  # the case of diffrax's t1: skip the loop at run time
        return jax.lax.cond(ordinary, lambda: fast, lambda: _iterate(x, k))
    return jnp.where(ordinary, fast, _iterate(x, k))


@jax.custom_jvp
def _chained(root, k):
    return _down(root, k)


@_chained.defjvp
def _chained_jvp(primals, tangents):  # as the original's: the identity
    return _chained(*primals), tangents[0]


def _prevbefore(x):
    """`equinox.internal.prevbefore`, collapsing chains in a thread inside the block."""
    if getattr(_LOCAL, "depth", 0) == 0:
        return _ORIGINAL(x)
    link = _LOCAL.chain.get(id(x))
    root, k = (link[1], link[2] + 1) if link is not None and link[0] is x else (x, 1)
    out = _chained(root, np.int64(k))
    _LOCAL.chain[id(out)] = (out, root, k)
    return out


@contextlib.contextmanager
def one_step_clip_floor():
    """Trace the programs made inside this block with diffrax's `t1` − 100 ULPs threshold
    computed in one step (see the module docstring): same values, a third fewer operations
    in a solve program. Re-entrant and thread-safe."""
    global _OPEN
    with _LOCK:
        if _OPEN == 0:
            eqxi.prevbefore = _prevbefore
        _OPEN += 1
    depth = getattr(_LOCAL, "depth", 0)
    if depth == 0:
        _LOCAL.chain = {}
    _LOCAL.depth = depth + 1
    try:
        yield
    finally:
        _LOCAL.depth = depth
        if depth == 0:
            _LOCAL.chain = {}  # no tracer outlives its trace here
        with _LOCK:
            _OPEN -= 1
            if _OPEN == 0:
                eqxi.prevbefore = _ORIGINAL
