"""The initial state made inside the solve program (`flows._solver._solve.solve_span` with
`state=None`) is the one `_initial_state` makes apart, bit for bit, with diffrax's first-step
selection (dt0 None) and with a given dt0; and resuming from the span's state reuses the
same program (JAX's trace events, not timed)."""

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import monitoring

import flows  # noqa: F401  (float64)
from flows._solver._solve import (
    _initial_state,
    _placeholder,
    save_state,
    solve_from_state,
    solve_span,
)

_A = jnp.array([[-2.0, 0.7, 0.1], [0.3, -0.9, 0.2], [-0.4, 0.1, -3.1]])


def _field(t, y, args):
    return _A @ y + 0.3 * jnp.tanh(y) ** 2


Y0 = jnp.array([1.0, -0.4, 0.25])
TS = jnp.linspace(0.1, 0.9, 5)
SETTINGS = (dfx.Tsit5(), 1e-9, 1e-12, 1e-14, 10_000)


@eqx.filter_jit
def _apart(dt0, t0, t1):
    solver, rtol, atol, dtmin, steps = SETTINGS
    state = _initial_state(_field, Y0, t0, t1, solver, rtol, atol, dtmin, dt0, None)
    return solve_from_state(
        _field, save_state, Y0, t0, t1, TS, state, solver, rtol, atol, dtmin,
        jnp.asarray(steps, jnp.int32), None, None,
    )  # fmt: skip


def _same(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_the_state_made_in_the_program_is_the_one_made_apart():
    t0, t1 = jnp.asarray(0.0), jnp.asarray(1.0)
    for dt0 in (None, jnp.asarray(0.0123)):
        inside = solve_span(_field, save_state, Y0, t0, t1, TS, None, *SETTINGS, dt0=dt0)
        apart = _apart(dt0, t0, t1)
        assert int(inside.stats["num_steps"]) == int(apart.stats["num_steps"]) > 5
        _same(inside, apart)


_TRACED = []
monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kw: (
        _TRACED.append(kw.get("fun_name"))
        if event == "/jax/core/compile/jaxpr_trace_duration"
        else None
    )
)


def test_resuming_from_the_span_reuses_the_program():
    t0, t1, t2 = jnp.asarray(0.0), jnp.asarray(0.5), jnp.asarray(1.0)
    first = solve_span(_field, save_state, Y0, t0, t1, TS * 0.5, None, *SETTINGS)
    before = len(_TRACED)
    second = solve_span(
        _field, save_state, first.y_end[0], t1, t2, TS + 0.1, first.state, *SETTINGS
    )
    assert "_solve_span" not in _TRACED[before:], _TRACED[before:]
    assert bool(second.ok) and float(second.t_end[0]) == 1.0


def test_a_new_first_span_of_the_same_shapes_traces_nothing():
    # the placeholder state is kept per shapes: a Filippov piece solved on the host paid
    # ~1 ms of tracing `_initial_state` for it each time
    t0, t1 = jnp.asarray(0.0), jnp.asarray(0.5)
    solve_span(_field, save_state, Y0, t0, t1, TS * 0.5, None, *SETTINGS)
    y0, t2, ts = 2.0 * Y0, 2.0 * t1, TS + 0.1  # made first: their own eager ops trace too
    before = len(_TRACED)
    again = solve_span(_field, save_state, y0, t1, t2, ts, None, *SETTINGS)
    assert _TRACED[before:] == [] and bool(again.ok)
    # other shapes: a placeholder of their own
    shapes = [
        [x.shape for x in jax.tree.leaves(_placeholder(field, y0, t0, t1, *SETTINGS[:4], None))]
        for field, y0 in ((_field, Y0), (lambda t, y, args: -y, jnp.ones((2, 4))))
    ]
    assert (3,) in shapes[0] and (2, 4) in shapes[1] and (2, 4) not in shapes[0]
