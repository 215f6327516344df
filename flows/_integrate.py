"""Chunked adaptive integration: diffrax calls over chunks of the save times, solver state
carried across.

Each call is one `_solve.solve_span` (the only call of `diffrax.diffeqsolve`). Chunks give
a progress bar in time and the points where `solver="auto"` tests stiffness
(`_stiffness.py`); checkpoints that survive an interruption (`_checkpoint.py`) are written
after each chunk and, by wall time, within one (calls end when one is due: `_checkpoint.Pacer`).
Evaluations are counted per solve (`_counting.py`), failures are explained by `_failures.py`.
"""

import concurrent.futures
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _checkpoint
from ._checks import check_flag, user_stacklevel
from ._counting import Counter
from ._failures import DTMIN_RELATIVE, MaxStepsReached, collapse_message, max_steps_advice
from ._progress import progress_bar
from ._settings import SolveSettings
from ._solver._gauss import forget_newton_failure, max_newton_residual, newton_failure
from ._solver._indicator import IndicatedTsit5
from ._solver._solve import saved_shape, solve_span
from ._solver._solvers import EVALS_PER_STEP, EXPONENTIAL, GAUSS, STABILIZED, STIFF, make_solver
from ._solver._stiffness import AUTO_STIFF, StiffnessMonitor, probe_error
from ._stats import SolveStats

#: Save times per diffrax call: the padded save array has this fixed length, whatever
#: `len(ts)` and `chunks`, so that one compilation serves every `ts` (a chunk with more save
#: times is solved in several calls, the solver state carried).
SAVE_BLOCK = 16


@eqx.filter_jit
def _field_norm(field, t, y):
    """‖field(t, y)‖ over all leaves, scaled by the largest entry so that it overflows only
    where the field does (NaN or inf if the field is not finite there; 0 if it is zero)."""
    leaves = [jnp.ravel(x) for x in jax.tree.leaves(field(t, y, None))]
    big = jnp.max(jnp.stack([jnp.max(jnp.abs(x), initial=0.0) for x in leaves]))
    scale = jnp.where((big > 0) & jnp.isfinite(big), big, 1.0)
    return scale * jnp.sqrt(sum(jnp.sum((x / scale) ** 2) for x in leaves))


def _largest(tree) -> float:
    """max |yᵢ| over all leaves (0.0 for an empty tree)."""
    return max((float(np.max(np.abs(x), initial=0.0)) for x in jax.tree.leaves(tree)), default=0.0)


def _norm(tree) -> float:
    """‖y‖ over all leaves, computed as max|yᵢ|·‖y/max|yᵢ|‖: finite for any finite state
    (the plain sum of squares overflows above ~1.3e154)."""
    big = _largest(tree)
    if big == 0.0 or not np.isfinite(big):
        return big
    return big * float(
        np.sqrt(sum(np.sum((np.asarray(x) / big) ** 2) for x in jax.tree.leaves(tree)))
    )


@eqx.filter_jit
def _at_start(field, save, y0):
    return field(jnp.asarray(0.0), y0, None), save(jnp.asarray(0.0), y0, None)


def _start_failure(field, save, y0, is_flow, t_start: float) -> str | None:
    """Why the solve cannot start, if it cannot: the recorded flow values (the loss) or the
    gradient are already non-finite at y0; None if both are finite there, or if the failed
    segment started at `t_start` > 0 (evaluated only after a failure)."""
    if t_start != 0:
        return None
    gradient, saved = _at_start(field, save, y0)
    big = _largest(y0)  # 0 where the state is a displacement (the lazy pair): then unsaid
    where = "at the start, t=0" + (f" (largest |θᵢ| = {big:.3g})" if big > 0 else "")
    flow_leaves = [x for x, f in zip(jax.tree.leaves(saved), is_flow) if f]
    if not _tree_all_finite(flow_leaves):
        return (
            f"the loss is non-finite {where}; check the loss, the data scale and the initialisation"
        )
    if not _tree_all_finite(gradient):
        return (
            f"the gradient is non-finite {where}, though the loss is finite; check the loss, "
            "the data scale and the initialisation"
        )
    return None


def _flow_leaves(save_shape) -> list[bool]:
    """Which saved leaves describe the flow itself; leaves under an "observables" key are the
    user's measurements, which may be undefined at a point without the flow failing."""
    paths, _ = jax.tree_util.tree_flatten_with_path(save_shape)
    return [not (path and getattr(path[0], "key", None) == "observables") for path, _ in paths]


class ZeroGradientWarning(RuntimeWarning):
    """The vector field (the gradient) is exactly zero at the start: the flow stays at its
    start point (a stationary point, or a piecewise-constant loss such as `jnp.round`)."""


def _warn_if_stationary(field, y0, y) -> None:
    """Warn (`ZeroGradientWarning`) if the state never moved because the field is exactly 0
    at the start; the field is evaluated only when the final state equals the start."""
    same = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(
        jax.tree.leaves(y0), jax.tree.leaves(y)))  # fmt: skip
    if same and float(_field_norm(field, jnp.asarray(0.0), y0)) == 0.0:
        warnings.warn(
            "the gradient is exactly zero at the start, so the flow stays at its start point: "
            "the start is a stationary point, or the loss is flat there (piecewise constant, "
            "e.g. jnp.round or a step function, has no useful gradient)",
            ZeroGradientWarning,
            stacklevel=user_stacklevel(),
        )


def _tree_all_finite(tree) -> bool:
    return all(bool(np.all(np.isfinite(np.asarray(x)))) for x in jax.tree.leaves(tree))


def symmetric_jacobian(field) -> bool:
    """Whether `field`'s Jacobian is symmetric: a gradient flow's is (−∇²F), and a field that
    is not a gradient says otherwise with a class attribute `symmetric_jacobian = False`
    (the lazy pair, `flows.lazy._comparison`); exprb32 and the stiffness tests then use Arnoldi."""
    return bool(getattr(field, "symmetric_jacobian", True))


def _prober(field, counter, settings, rtol, atol, symmetric):
    """(t, y) ↦ (h ↦ (the error ratio, gradients, Hessian-vector products) of one trial step
    of the stiff solver of "auto" from (t, y)); built once per solve, called only when a test
    asks for a trial. `field` ticks `counter`; `rtol`, `atol`: the solve's tolerances as device
    scalars."""
    solver = make_solver(AUTO_STIFF, settings.rtol, settings.atol, symmetric=symmetric)

    def at(t, y):
        def trial(h):
            before = counter.evals, counter.jvps
            error = float(probe_error(solver, field, jnp.asarray(t), y, jnp.asarray(h), rtol, atol))
            return error, counter.evals - before[0], counter.jvps - before[1]

        return trial

    return at


_SECOND_THREAD = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gradflows")
_INDICATED = IndicatedTsit5()  # stateless: one serves every segment


def _join(compiling):
    """Wait for the tests' program to be compiled (`StiffnessMonitor.compile`, on the second
    thread), raising what it raised; returns None."""
    if compiling is not None:
        compiling.result()
    return None


def _raise_failure(field, phase, settings, stats, y, t_hit, t_end, norm0, dt, collapsed, hit):
    """Raise the error that says why a diffrax call stopped at `t_hit` before `t_end`."""
    failure = newton_failure(t_hit)
    if failure is not None:
        raise FloatingPointError(
            f"{failure} (solver={phase!r}; the solve reached t={t_hit:.6g} of t={t_end:.6g})"
        )
    if not _tree_all_finite(y):
        raise FloatingPointError(
            f"the state became non-finite near t={t_hit:.6g}; "
            "check the loss, the data scale, or lower the step tolerances"
        )
    speed = float(_field_norm(field, jnp.asarray(t_hit), y))
    if not np.isfinite(speed):
        raise FloatingPointError(
            f"the vector field (the gradient) became non-finite near t={t_hit:.6g} "
            f"at a finite state (‖y‖ = {_norm(y):.3g}); check the loss and the data"
        )
    if collapsed:
        raise FloatingPointError(
            collapse_message(phase, settings, t_hit, dt, norm0, _norm(y), speed)
        )
    if hit:
        raise MaxStepsReached(
            f"max_steps={settings.max_steps} reached at t={t_hit:.6g} before t={t_end:.6g} "
            f"(solver {phase!r}); {max_steps_advice(phase, settings, stats)}",
            t_hit,
        )
    raise RuntimeError(f"the solver failed at t={t_hit:.6g} before t={t_end:.6g}")


def integrate(
    field: Callable,
    y0: Any,
    ts: np.ndarray,
    save: Callable,
    settings: SolveSettings,
    *,
    progress: bool,
    desc: str = "flow",
    checkpoint: str | None = None,
    report: Callable[[float], None] | None = None,
):
    """Integrate y' = field(t, y, None) from t = 0 to ts[-1], saving `save(t, y, None)` at `ts`.

    `report(t)`, if given, is called with the flow time reached at each checkpoint (after it
    is written, or when it would be: after each chunk, and within one when due, about every
    `_checkpoint.CHECKPOINT_S` seconds), and once with the start time when the solve starts or
    resumes.

    `field` and `save` should be equinox Modules (pytrees): arrays inside them are traced, so
    calls that differ only in array values (such as alpha) reuse one compilation.

    `settings.solver="auto"` starts with Tsit5 and switches to exprb32 and back by
    stiffness tests along the solve (`flows._solver._stiffness.StiffnessMonitor`, with the
    options `settings.auto`); the rule is described once, in "How to choose a solver"
    (docs/solvers.md). `stats.switches` records each switch (t, to, h·λ̂, the measured cost
    ratio of the two solvers' steps); `stats.stiffness` is λ̂·t1 from the first test made, for
    the record (None where the flow stayed calm and no test was made).

    Returns `(saved, y_final, stats)` with `saved` a pytree of numpy arrays of leading length
    `len(ts)`. Raises `MaxStepsReached` or `FloatingPointError` with the time reached and
    what happened (`flows._failures`). Leaves of `save(...)` under an "observables" key may be
    non-finite (an observable undefined at a point); all others must be finite.
    """
    progress = check_flag("progress", progress)
    solver, rtol, atol = settings.name, settings.rtol, settings.atol
    max_steps, auto, kvaerno5 = settings.max_steps, settings.auto, settings.kvaerno5
    # A Gauss–Legendre solver steps onto every save time (one chunk per save time): it
    # conserves quadratic invariants at its steps, not at interpolated times.
    n_chunks = len(ts) if solver in GAUSS else max(1, min(settings.chunks, len(ts)))
    groups = np.array_split(np.arange(len(ts)), n_chunks)
    stats = SolveStats()
    save_shape = saved_shape(save, y0)
    save_def = jax.tree.structure(save_shape)
    is_flow = _flow_leaves(save_shape)
    norm0 = _norm(y0)
    size = sum(int(np.size(leaf)) for leaf in jax.tree.leaves(y0))
    saved_leaves: list[list[np.ndarray]] = [[] for _ in range(save_def.num_leaves)]

    phase, monitor, compiling = solver, None, None
    horizon = float(ts[-1])
    symmetric = symmetric_jacobian(field)
    if solver == "auto":
        monitor = StiffnessMonitor(
            symmetric=symmetric,
            to_stiff=auto.stiff_tests,
            to_explicit=auto.explicit_tests,
            longest=auto.stiff_steps,
            horizon=float(ts[-1]),
        )
        phase, stats.switches, stats.probes = monitor.explicit, monitor.switches, monitor.probes
        # The tests' program is compiled on a second thread (one product, not a test), so that
        # it overlaps compiling the first segment's solve; not again once compiled.
        if not monitor.compiled(field, y0):
            compiling = _SECOND_THREAD.submit(monitor.compile, field, 0.0, y0)
    t_start, y, state, done, h_last, since_test = 0.0, y0, None, 0, None, 0
    # The explicit phase's own stiffness estimate at its last step (1/time), trusted only
    # after steps without a rejection since the last test (`rejected`; `grace`: one is allowed
    # in the segment that starts Tsit5 afresh): Tsit5 held by stability rejects 10–25 % of
    # its steps, and there its h·ρ can be far below h·λ_max (a stiff mode kept at atol's
    # level, under the smooth part's y₇ − y₆).
    rho, rejected, grace = None, 0, 0
    dt0 = None  # the first step of a segment that starts the solver afresh (None: diffrax's)
    have = 0  # save times already saved (a checkpoint written within a chunk holds some)
    if checkpoint is not None:
        checkpoint = _checkpoint.check_path(checkpoint)
    stamp = None if checkpoint is None else _checkpoint.fingerprint(field, y0, ts, save, settings)
    if checkpoint is not None and os.path.exists(checkpoint):
        done, t_start, phase, y, saved_leaves = _checkpoint.read(
            checkpoint, stamp, jax.tree.structure(y0), save_def.num_leaves, stats
        )
        stats.chunks = done
        have = sum(len(leaf) for leaf in saved_leaves[0]) if saved_leaves else 0

    bar = progress_bar(
        total=n_chunks, initial=done, desc=desc, unit="chunk", disable=not progress, leave=False
    )
    # Traced once per solve, not per segment (each device scalar costs: docs/performance.md).
    tolerances = tuple(jnp.asarray(x) for x in (rtol, atol, DTMIN_RELATIVE))
    if report is not None:
        report(t_start)
    pacer = _checkpoint.Pacer()  # calls end when a checkpoint is due
    try:
        with Counter() as counter:
            prober = None
            if monitor is not None:  # trial steps of exprb32, which counts its own products
                counted_field = counter.wrap(field, True, solver_counts_jvps=True)
                prober = _prober(counted_field, counter, settings, *tolerances[:2], symmetric)
            for c in range(done, n_chunks):
                pending = groups[c]
                t_end = float(ts[pending[-1]])
                pending = pending[pending >= have]  # saved before a checkpoint within it
                cut = None  # (end, blocked, steps) of a call cut for a checkpoint
                while len(pending):
                    if stats.num_steps >= max_steps:  # the budget is of the whole solve
                        raise MaxStepsReached(
                            f"max_steps={max_steps} reached at t={t_start:.6g} "
                            f"of t={horizon:.6g} (solver {phase!r}); "
                            f"{max_steps_advice(phase, settings, stats)}",
                            t_start,
                        )
                    # "auto" solves in segments of about `monitor.steps` steps of the size last
                    # proposed, and tests stiffness at the end of each.
                    t_stop, blocked, before = t_end, False, 0
                    if cut is not None:  # the rest of a cut call: its end, so the same steps
                        t_stop, blocked, before = cut
                    elif monitor is not None and h_last is not None:
                        span = (monitor.steps - since_test) * h_last
                        t_stop = min(t_end, t_start + span)
                        if t_stop - t_start <= 1e-12 * max(1.0, t_start):  # below float64
                            t_stop = t_end
                        # The explicit phase goes on to the chunk's end while its step is calm
                        # (h·ρ far below the boundary, no rejected step), where the test would
                        # be skipped: one diffrax call instead of several; a call is capped at
                        # `stiff_steps` steps all the same.
                        if (
                            phase == monitor.explicit
                            and rho is not None
                            and monitor.calm(h_last, rho)
                        ):
                            t_stop = t_end
                    within = pending[ts[pending] <= t_stop]
                    here = within[:SAVE_BLOCK]
                    if cut is None and len(within) > SAVE_BLOCK:  # a full block ends it early
                        t_stop, blocked = float(ts[here[-1]]), True
                    chunk_ts = np.concatenate([ts[here], np.full(SAVE_BLOCK - len(here), t_stop)])
                    counted = phase in STIFF or phase in STABILIZED  # evaluations vary by step
                    evals_before, jvps_before = counter.evals, counter.jvps
                    forget_newton_failure()
                    indicated = monitor is not None and phase == monitor.explicit
                    # Tsit5 with its free stiffness estimate in its state where indicated
                    solver_object = _INDICATED if indicated else make_solver(
                        phase, rtol, atol, kvaerno5.gmres_max_iters,
                        size <= kvaerno5.dense_max, symmetric, size,
                    )  # fmt: skip
                    budget = max_steps - stats.num_steps  # traced: no recompilation
                    if monitor is not None:
                        budget = min(auto.stiff_steps - before, budget)
                    call_steps = pacer.steps()
                    by_wall = call_steps < budget  # a hit budget is then the wall-time cap
                    started = time.perf_counter()
                    out = solve_span(
                        counter.wrap(field, counted, solver_counts_jvps=phase in EXPONENTIAL),
                        save,
                        y,
                        jnp.asarray(t_start),
                        jnp.asarray(t_stop),
                        jax.device_put(chunk_ts),  # jnp.asarray would compile a copy
                        state,
                        solver_object,
                        *tolerances,
                        min(call_steps, budget),
                        dt0=None if state is not None or dt0 is None else jnp.asarray(dt0),
                    )
                    saved, save_ts, t_reached, y_reached, new_state, st, ok, _, hit, collapsed = out
                    steps = int(st["num_steps"])  # waits for the segment to finish
                    elapsed = time.perf_counter() - started
                    pacer.ran(steps, elapsed)
                    by_wall = by_wall and bool(hit)
                    cut = (t_stop, blocked, before + steps) if by_wall else None
                    if monitor is not None:
                        monitor.record(
                            phase, elapsed, steps,
                            counter.evals - evals_before, counter.jvps - jvps_before,
                        )  # fmt: skip
                    stats.num_steps += steps
                    stats.num_accepted_steps += int(st["num_accepted_steps"])
                    stats.num_rejected_steps += int(st["num_rejected_steps"])
                    if counted:
                        stats.grad_evals += counter.evals - evals_before
                        stats.jvp_evals += counter.jvps - jvps_before
                    else:
                        first = 2 if state is None else 0  # initial step selection
                        stats.grad_evals += EVALS_PER_STEP[phase] * steps + first
                    if phase not in stats.solvers:
                        stats.solvers.append(phase)
                    residual = max_newton_residual(solver_object, new_state[0])
                    if residual is not None:
                        stats.newton_residual = max(stats.newton_residual or 0.0, residual)
                    n_saved = len(here) if bool(ok) else int(np.sum(np.isfinite(save_ts)))
                    leaves = [np.asarray(x)[:n_saved] for x in jax.tree.leaves(saved)]
                    if not _tree_all_finite([x for x, f in zip(leaves, is_flow) if f]):
                        raise FloatingPointError(
                            _start_failure(field, save, y0, is_flow, t_start)
                            or f"the trajectory became non-finite between t={t_start:.6g} "
                            f"and t={t_end:.6g}"
                        )
                    for store, leaf in zip(saved_leaves, leaves):
                        store.append(leaf)
                    pending = pending[n_saved:]
                    # on the host: `a[0]` on the device would compile a program of its own
                    y = jax.tree.map(lambda a: jax.device_put(np.asarray(a)[0]), y_reached)
                    t_now, h_last = t_stop, float(new_state[1][1])
                    if not bool(ok):
                        finite = np.where(np.isfinite(t_reached), t_reached, np.nan)
                        t_now = float(np.nanmax(finite))
                        # A capped first call that accepted no step may be a field that is
                        # non-finite at y0 ("auto"'s test would then meet NaN products).
                        if int(st["num_accepted_steps"]) == 0:
                            if at_start := _start_failure(field, save, y0, is_flow, t_start):
                                raise FloatingPointError(at_start)
                    # "auto" caps each call at `stiff_steps` steps, so a step size that shrinks
                    # inside a segment still meets a test; any call is capped by wall time.
                    if not bool(ok) and not (
                        (by_wall or monitor is not None)
                        and bool(hit)
                        and stats.num_steps < max_steps
                    ):
                        if at_start := _start_failure(field, save, y0, is_flow, t_start):
                            raise FloatingPointError(at_start)
                        _raise_failure(
                            field, phase, settings, stats, y, t_now, horizon, norm0, h_last,
                            bool(collapsed), bool(hit),
                        )  # fmt: skip
                    # The segment that starts Tsit5 afresh may reject one step while the step
                    # grows from diffrax's initial guess: that one leaves ρ trusted.
                    grace = 1 if indicated and state is None else grace
                    state, t_start = new_state, t_now
                    rejected += int(st["num_rejected_steps"])
                    rho = float(new_state[0][1]) if indicated and rejected <= grace else None
                    since_test += steps
                    # A test ends each segment (not each chunk), and any capped call.
                    tested = monitor is not None and t_now < horizon
                    if tested and by_wall:  # cut for a checkpoint: the segment goes on
                        tested = since_test >= monitor.steps
                    elif tested:
                        ended = (t_now < t_end and not blocked) or since_test >= monitor.steps
                        tested = ended or bool(hit)
                    if tested:
                        compiling = _join(compiling)
                        since_test = rejected = grace = 0
                        before = counter.evals, counter.jvps, monitor.hvps
                        probe = prober(t_now, y)
                        new_phase = monitor.decide(
                            phase, field, t_now, y, h_last, probe=probe, rho=rho
                        )
                        stats.grad_evals += counter.evals - before[0]  # trial stiff steps
                        stats.jvp_evals += counter.jvps - before[1]
                        stats.jvp_evals += monitor.hvps - before[2]  # the test's own
                        if stats.stiffness is None and monitor.last is not None:
                            stats.stiffness = monitor.last * horizon  # the first test's λ̂
                        if new_phase != phase:
                            # exprb32 starts with the step its trial step said it takes
                            phase, state, dt0 = new_phase, None, monitor.dt0
                            if new_phase == AUTO_STIFF and stats.switched_to_stiff_at is None:
                                stats.switched_to_stiff_at = t_now
                    if len(pending) and pacer.due(by_wall):  # its end writes one below
                        pacer.written()
                        if checkpoint is not None:
                            _checkpoint.write(
                                checkpoint, stamp, ts, c, t_now, phase, y, saved_leaves, stats
                            )
                        if report is not None:
                            report(t_now)
                stats.chunks = c + 1
                bar.update(1)
                bar.set_postfix(t=f"{t_end:.3g}", steps=stats.num_steps)
                pacer.written()
                if checkpoint is not None:
                    _checkpoint.write(
                        checkpoint, stamp, ts, c + 1, t_end, phase, y, saved_leaves, stats
                    )
                if report is not None:
                    report(t_end)
    except (MaxStepsReached, FloatingPointError) as e:
        stats.stiffness_tests = monitor.tests if monitor is not None else 0
        e.stats = stats.to_dict()  # the work done, for the caller to report
        raise
    finally:
        bar.close()
        if compiling is not None:
            concurrent.futures.wait([compiling])  # no thread left running after an error
    compiling = _join(compiling)
    stats.stiffness_tests = monitor.tests if monitor is not None else 0
    _warn_if_stationary(field, y0, y)
    saved = jax.tree.unflatten(save_def, [np.concatenate(s) for s in saved_leaves])
    return saved, y, stats
