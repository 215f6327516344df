"""`one_step_clip_floor` (flows/_solver/_clip_floor.py): diffrax's t1 − 100 ULPs threshold in
one step gives the same bits as the chain of 100 `equinox.internal.prevbefore` calls, on
ordinary and edge-case times, the same diffrax solve bit for bit, a solve program without the
chain, and leaves other threads and the code after the block with the original function."""

import threading

import diffrax as dfx
import equinox.internal as eqxi
import jax
import jax.numpy as jnp
import numpy as np

import flows  # noqa: F401  (float64)
from flows._solver._clip_floor import one_step_clip_floor

_PREVBEFORE = eqxi.prevbefore


def _chain(t):
    for _ in range(100):  # as diffrax._integrate.loop
        t = eqxi.prevbefore(t)
    return t


def _times():
    tiny, big = np.finfo(np.float64).tiny, np.finfo(np.float64).max
    edges = [1.0, 2.0, 100.0, 3e-3, 2.0**53, 1e308, big, tiny, 2 * tiny, 2.0**-1021, 5e-324,
             1e-310, 0.0, -0.0, -1.0, -(2.0**-1021), -tiny, np.inf, -np.inf, np.nan]  # fmt: skip
    rng = np.random.default_rng(7)
    spread = rng.standard_normal(300) * 10.0 ** rng.uniform(-307, 307, 300)
    return np.concatenate([edges, spread])


def _bits(a):
    return np.asarray(a).view(np.int64)


def test_the_one_step_threshold_has_the_bits_of_the_chain_of_100():
    times = _times()
    before = _bits(jax.jit(jax.vmap(_chain))(times))
    with one_step_clip_floor():
        arrays = _bits(jax.jit(jax.vmap(lambda t: _chain(t)))(times))
        scalar = jax.jit(lambda t: _chain(t))  # one program, the scalar (`lax.cond`) form
        scalars = _bits([scalar(t) for t in times[:40]])
    np.testing.assert_array_equal(arrays, before)
    np.testing.assert_array_equal(scalars, before[:40])
    assert eqxi.prevbefore is _PREVBEFORE  # restored


def _solve(t1):
    # y' = -y + sin(3t) to a t1 that the last step is clipped onto
    term = dfx.ODETerm(lambda t, y, args: -y + jnp.sin(3.0 * t))
    sol = dfx.diffeqsolve(
        term, dfx.Tsit5(), 0.0, t1, 0.1, jnp.array([1.0, -0.3]),
        saveat=dfx.SaveAt(ts=jnp.linspace(0.0, 1.0, 7) * t1),
        stepsize_controller=dfx.PIDController(rtol=1e-9, atol=1e-12),
    )  # fmt: skip
    return sol.ys, sol.stats["num_steps"]


def _next_afters(text):
    return text.count("next_after")


def test_a_diffrax_solve_is_bit_identical_and_its_program_loses_the_chain():
    t1 = jnp.asarray(2.718281828459045)
    ys, steps = jax.jit(_solve)(t1)
    plain = jax.jit(lambda t: _solve(t)).lower(t1).as_text()
    with one_step_clip_floor():
        fn = jax.jit(lambda t: _solve(t))
        ys2, steps2 = fn(t1)
        text = fn.lower(t1).as_text()
    assert int(steps2) == int(steps) > 10
    np.testing.assert_array_equal(_bits(ys2), _bits(ys))
    # measured: 100 next_after before (the chain), 1 after (the fallback loop's body)
    assert _next_afters(plain) >= 100 and _next_afters(text) <= 2, _next_afters(text)


def test_other_threads_and_code_after_the_block_see_the_original():
    seen = {}

    def other():
        seen["text"] = jax.jit(lambda t: _chain(t) * 1.0).lower(1.0).as_text()

    with one_step_clip_floor():
        with one_step_clip_floor():  # re-entrant
            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
        assert eqxi.prevbefore is not _PREVBEFORE  # still open
    assert _next_afters(seen["text"]) == 100  # the chain, untouched
    assert eqxi.prevbefore is _PREVBEFORE
    assert _next_afters(jax.jit(lambda t: _chain(t) + 0.0).lower(1.0).as_text()) == 100
