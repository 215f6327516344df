"""One adaptive diffrax solve over a span of flow time: the only call of
`diffrax.diffeqsolve` in flows. `integrate` chains these spans (chunks, with the solver state
carried) and `filippov_flow` runs one per smooth piece (ending at an event)."""

from typing import Any, NamedTuple

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._cacheable import errors_as_nan
from ._clip_floor import one_step_clip_floor
from ._controller import step_memory_pid
from ._structure import ByStructure


def save_state(t, y, args):
    """The default save function: the state itself."""
    return y


def save_at(save, t, y, args):
    """`save(t, y, args)` through one module-level jit, with t as a float64 array: every call
    with the same structure (the save times and the end inside a solve program, the shapes,
    a checkpoint's fingerprint, the next α of a sweep) reuses the one trace."""
    return _save_at(save, jnp.asarray(t, jnp.float64), y, args)


@eqx.filter_jit
def _save_at(save, t, y, args):
    return save(t, y, args)


def saved_shape(save, y0, args=None):
    """The shapes and dtypes of `save(t, y0, args)` (a pytree of `jax.ShapeDtypeStruct`).

    Traced through one module-level jit: a new `save` object of the same structure (the next α
    of a sweep, whose arrays differ) reuses the trace instead of tracing again (~0.3 s each
    for a lazy pair's measurements)."""
    return eqx.filter_eval_shape(save_at, save, 0.0, y0, args)


class Span(NamedTuple):
    """What one `solve_span` returns (arrays; `ts`-padded entries past a failure are inf).

    - `saved`: `save(t, y, args)` at the save times, leading axis `len(ts)`.
    - `save_ts`: the times saved, `(len(ts),)`.
    - `t_end`, `y_end`: the time and state reached, with a leading axis of length 1.
    - `state`: `(solver_state, controller_state, made_jump)` to resume from; the controller
      state's second entry is the step it last proposed.
    - `stats`: diffrax's step counts.
    - `ok`: the solve reached `t1` or stopped at the event; `event`: it stopped at the event;
      `max_steps_hit`: it ran out of steps; `collapsed`: the step size fell below `dtmin`.
    """

    saved: Any
    save_ts: Any
    t_end: Any
    y_end: Any
    state: tuple
    stats: dict
    ok: Any
    event: Any
    max_steps_hit: Any
    collapsed: Any


def solve_span(
    field, save, y0, t0, t1, ts, state, solver, rtol, atol, dtmin, max_steps,
    *, dt0=None, args=None, event=None, select_first_step=True, compile_only=False,
) -> Span | None:  # fmt: skip
    """Solve y' = field(t, y, args) from `t0` to `t1` with `solver` under the step-memory PID
    controller, saving `save(t, y, args)` at `ts` and the state at `t1` (or where it
    stopped), in forward mode, without throwing.

    `state` (from a previous `Span`) resumes the solver, the controller and the jump flag,
    with the step the controller last proposed, clipped to the span; with `state=None` the
    first step is `dt0` (None: diffrax's initial step selection). `event`: a `diffrax.Event`
    that ends the solve early. `max_steps` (at most this many steps) is traced, as are the
    times and `ts` (of any fixed length): one compilation serves every horizon and budget.
    `select_first_step=False` (with `dt0` given) leaves diffrax's initial step selection out
    of the program: two fewer traced evaluations of the field, for a field whose evaluation
    is a large program (the central flow's Lanczos). `compile_only`: compile the program
    for these inputs' shapes (their values unused) and return None, solving nothing (a
    caller overlaps that with other work on a second thread).
    """
    if not select_first_step and dt0 is None:
        raise ValueError("solve_span: select_first_step=False needs dt0")
    # numpy, not jnp.asarray: a conversion on the device would compile a program of its own
    budget = np.asarray(max_steps, np.int32)
    start = state is None
    if start:  # a placeholder of the state's shapes: the program makes the state itself
        state = _placeholder(field, y0, t0, t1, solver, rtol, atol, dtmin, args, select_first_step)
    first_step = np.asarray(np.nan if dt0 is None else dt0, np.float64)
    inputs = (field, save, y0, t0, t1, ts, state, np.asarray(start), first_step, solver,
              rtol, atol, dtmin, budget, args, event, bool(select_first_step))  # fmt: skip
    # programs the persistent compilation cache can keep, without diffrax's 100-link chain
    with errors_as_nan(), one_step_clip_floor():
        if compile_only:  # ahead of time: a later call of the same shapes finds it compiled
            _solve_span.lower(*inputs).compile()
            return None
        return _solve_span(*inputs)


def _make_state(field, y0, t0, t1, solver, rtol, atol, dtmin, dt0, args, nan_selects):
    """The initial state (see `_initial_state`); with `nan_selects`, a NaN `dt0` (traced)
    asks for diffrax's initial step selection."""
    terms = dfx.ODETerm(field)
    controller = step_memory_pid(rtol, atol, dtmin, t1, 0)
    error_order = solver.error_order(terms)

    def init(step):
        return controller.init(terms, t0, t1, y0, step, args, solver.func, error_order)

    if nan_selects:  # only the first step's choice branches: the solver's start is traced once
        chosen = jax.lax.cond(jnp.isnan(dt0), lambda: init(None), lambda: init(dt0))
    else:
        chosen = init(dt0)
    tnext, controller_state = chosen
    solver_state = solver.init(terms, t0, tnext, y0, args)
    # Python scalars in the state (a first-step flag) as arrays, as a finished solve returns
    # them: a static value would give the first call a program of its own.
    return jax.tree.map(jnp.asarray, (solver_state, controller_state, False))


@eqx.filter_jit
def _initial_state(field, y0, t0, t1, solver, rtol, atol, dtmin, dt0, args):
    """`(solver_state, controller_state, made_jump)` at t0, as `diffeqsolve` would make it
    (the first step `dt0`, or diffrax's initial step selection when None)."""
    return _make_state(field, y0, t0, t1, solver, rtol, atol, dtmin, dt0, args, False)


@eqx.filter_jit
def _start(field, y0, t0, t1, solver, rtol, atol, dtmin, dt0, args, select=True):
    """`_initial_state` inside a solve program, with `dt0` a traced scalar: NaN for
    diffrax's initial step selection (two field evaluations, made only then). Traced once
    (`_placeholder` traces it for its shapes; the solve program reuses that trace)."""
    return _make_state(field, y0, t0, t1, solver, rtol, atol, dtmin, dt0, args, select)


def _placeholder(field, y0, t0, t1, solver, rtol, atol, dtmin, args, select=True):
    """Zeros of the shapes and dtypes of `_start` (traced, never compiled), as read-only
    numpy arrays: no program is compiled to make them. Kept per structure, array
    shapes and dtypes and other leaves of the arguments (as `filter_jit` keys its traces):
    tracing costs ~1 ms, once per Filippov piece solved on the host otherwise."""
    inputs = (field, y0, t0, t1, solver, rtol, atol, dtmin, args, bool(select))
    zeros = _PLACEHOLDERS.get(inputs)
    if zeros is None:
        nan = np.asarray(np.nan, np.float64)  # as `solve_span` passes `dt0`
        shapes = eqx.filter_eval_shape(_start, *inputs[:8], nan, args, bool(select))
        zeros = jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), shapes)
        for leaf in jax.tree.leaves(zeros):
            leaf.flags.writeable = False  # one placeholder serves every call
        _PLACEHOLDERS.put(inputs, zeros)
    return zeros


_PLACEHOLDERS = ByStructure()  # _placeholder's zeros by the structure of its inputs


def _before(save, t1, shapes):
    """`save` at the save times before `t1`, zeros (of `shapes`) at `t1`: a call's save array
    is padded with `t1` (`flows._integrate.SAVE_BLOCK` entries), and the measurements of a
    lazy pair cost a few field evaluations each, so the padding is not measured (`_with_end`
    fills `t1`)."""

    def fn(t, y, args):
        zeros = lambda: jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)  # noqa: E731
        return jax.lax.cond(t < t1, lambda: save_at(save, t, y, args), zeros)

    return fn


def _with_end(save, ts, t1, sol, args):
    """The saved values, with `save` at the end state once at every save time equal to `t1`
    when the solve reached it (unreached entries keep diffrax's inf)."""
    t_end = sol.ts[1][0]
    at_end = save_at(save, t_end, jax.tree.map(lambda a: a[0], sol.ys[1]), args)
    fill = (ts >= t1) & (t_end >= t1)

    def put(saved, end):
        return jnp.where(fill.reshape((-1,) + (1,) * (saved.ndim - 1)), end[None], saved)

    return jax.tree.map(put, sol.ys[0], at_end)


@eqx.filter_jit
def _solve_span(
    field, save, y0, t0, t1, ts, state, start, dt0, solver, rtol, atol, dtmin, budget, args,
    event, select=True,
) -> Span:  # fmt: skip
    """One program for the first span and every resumed one: with `start` (a traced bool)
    the state is made here (`_start`, with `dt0`) instead of taken from `state`; `select`
    (static): a NaN `dt0` asks for diffrax's initial step selection."""

    def made():
        return _start(field, y0, t0, t1, solver, rtol, atol, dtmin, dt0, args, select)

    state = jax.lax.cond(start, made, lambda: state)
    return solve_from_state(
        field, save, y0, t0, t1, ts, state, solver, rtol, atol, dtmin, budget, args, event
    )


def solve_from_state(
    field, save, y0, t0, t1, ts, state, solver, rtol, atol, dtmin, budget, args, event
) -> Span:
    """The solve from `state` (traced inside a caller's program: `_solve_span`, and the
    Filippov pieces of `flows.nonsmooth._loop`, which make their state with `_initial_state`)."""
    solver_state, controller_state, made_jump = state
    dt0 = jnp.minimum(controller_state[1], t1 - t0)
    controller_state = (*controller_state[:2], jnp.zeros((), jnp.int32))  # a new budget
    fn = _before(save, t1, saved_shape(save, y0, args))
    sol = dfx.diffeqsolve(
        dfx.ODETerm(field),
        solver,
        t0,
        t1,
        dt0,
        y0,
        args=args,
        saveat=dfx.SaveAt(
            subs=[dfx.SubSaveAt(ts=ts, fn=fn), dfx.SubSaveAt(t1=True)],
            solver_state=True,
            controller_state=True,
            made_jump=True,
        ),
        stepsize_controller=step_memory_pid(rtol, atol, dtmin, t1, budget),
        event=event,
        adjoint=dfx.ForwardMode(),
        max_steps=None,  # the controller holds the (traced) budget
        throw=False,
        solver_state=solver_state,
        controller_state=controller_state,
        made_jump=made_jump,
    )
    event_hit = sol.result == dfx.RESULTS.event_occurred
    return Span(
        saved=_with_end(save, ts, t1, sol, args),
        save_ts=sol.ts[0],
        t_end=sol.ts[1],
        y_end=sol.ys[1],
        state=(sol.solver_state, sol.controller_state, sol.made_jump),
        stats=sol.stats,
        ok=(sol.result == dfx.RESULTS.successful) | event_hit,
        event=event_hit,
        max_steps_hit=sol.result == dfx.RESULTS.max_steps_reached,
        collapsed=sol.result == dfx.RESULTS.dt_min_reached,
    )
