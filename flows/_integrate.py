"""Chunked adaptive integration: one diffrax call per chunk, solver state carried across.

This is the only place that calls `diffrax.diffeqsolve`. Chunks give a progress bar in time,
checkpoints that survive an interruption, and the stiffness switch of `solver="auto"`.
"""

import os
import tempfile
from collections.abc import Callable
from typing import Any

import diffrax as dfx
import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from ._controller import step_memory_pid
from ._failures import DTMIN_RELATIVE, MaxStepsReached, collapse_message, max_steps_advice
from ._gauss import forget_newton_failure, max_newton_residual, newton_failure
from ._settings import SolveSettings
from ._solvers import EVALS_PER_STEP, GAUSS, IMPLICIT, STIFF, make_solver
from ._stats import SolveStats

_EVALS = [0]  # vector-field evaluations
_JVPS = [0]  # Jacobian-vector products through the vector field


def _tick():
    _EVALS[0] += 1


def _tick_jvp(_):
    _JVPS[0] += 1


@jax.custom_jvp
def _count_jvps(y):
    return y


@_count_jvps.defjvp
def _count_jvps_rule(primals, tangents):
    (y,), (dy,) = primals, tangents
    # The callback takes a tangent value, so it stays in the linear part: under
    # `jax.linearize` (Newton's Jacobian operator) it runs once per matrix-vector product.
    jax.debug.callback(_tick_jvp, jnp.ravel(jax.tree.leaves(dy)[0])[0])
    return y, dy


class CountedField(eqx.Module):
    """Wraps a vector field; with `count=True` each evaluation, and each Jacobian-vector
    product through it (GMRES's matrix-vector products), ticks a host-side counter."""

    field: Callable
    count: bool = eqx.field(static=True)

    def __call__(self, t, y, args):
        if self.count:
            jax.debug.callback(_tick)
            y = _count_jvps(y)
        return self.field(t, y, args)


@eqx.filter_jit
def _solve_chunk(field, save, y0, t0, t1, ts, state, solver, rtol, atol, dtmin, max_steps):
    solver_state, controller_state, made_jump = state if state is not None else (None,) * 3
    # Resume with the step the controller last proposed (clipped to the chunk).
    dt0 = None if state is None else jnp.minimum(controller_state[1], t1 - t0)
    sol = dfx.diffeqsolve(
        dfx.ODETerm(field),
        solver,
        t0,
        t1,
        dt0,
        y0,
        saveat=dfx.SaveAt(
            subs=[dfx.SubSaveAt(ts=ts, fn=save), dfx.SubSaveAt(t1=True)],
            solver_state=True,
            controller_state=True,
            made_jump=True,
        ),
        stepsize_controller=step_memory_pid(rtol, atol, dtmin),
        adjoint=dfx.ForwardMode(),
        max_steps=max_steps,
        throw=False,
        solver_state=solver_state,
        controller_state=controller_state,
        made_jump=made_jump,
    )
    saved, save_ts, (t_end, y_end) = sol.ys[0], sol.ts[0], (sol.ts[1], sol.ys[1])
    new_state = (sol.solver_state, sol.controller_state, sol.made_jump)
    ok = sol.result == dfx.RESULTS.successful
    max_steps_hit = sol.result == dfx.RESULTS.max_steps_reached
    collapsed = sol.result == dfx.RESULTS.dt_min_reached
    return saved, save_ts, t_end, y_end, new_state, sol.stats, ok, max_steps_hit, collapsed


@eqx.filter_jit
def _field_norm(field, t, y):
    """‖field(t, y)‖ over all leaves (NaN or inf if the field is not finite there)."""
    return jnp.sqrt(sum(jnp.sum(x**2) for x in jax.tree.leaves(field(t, y, None))))


def _norm(tree) -> float:
    return float(np.sqrt(sum(np.sum(np.asarray(x) ** 2) for x in jax.tree.leaves(tree))))


def _flow_leaves(save_shape) -> list[bool]:
    """Which saved leaves describe the flow itself; leaves under an "observables" key are the
    user's measurements, which may be undefined at a point without the flow failing."""
    paths, _ = jax.tree_util.tree_flatten_with_path(save_shape)
    return [not (path and getattr(path[0], "key", None) == "observables") for path, _ in paths]


def _tree_all_finite(tree) -> bool:
    return all(bool(np.all(np.isfinite(np.asarray(x)))) for x in jax.tree.leaves(tree))


def _atomic_savez(path: str, **arrays) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".npz")
    os.close(fd)
    np.savez(tmp, **arrays)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are for sharing
    os.replace(tmp, path)


@eqx.filter_jit
def _spectral_radius(field, y0, iters: int = 20):
    """Power-iteration estimate of the spectral radius of ∂field/∂y at (t=0, y0), by jvps.
    For a gradient flow this is λ_max of the Hessian of the objective."""
    flat, unravel = jax.flatten_util.ravel_pytree(y0)
    key = jax.random.PRNGKey(0)
    v = jax.random.normal(key, flat.shape, flat.dtype)

    def matvec(v):
        out = jax.jvp(lambda y: field(0.0, y, None), (y0,), (unravel(v),))[1]
        return jax.flatten_util.ravel_pytree(out)[0]

    def body(_, carry):
        v, _ = carry
        w = matvec(v / jnp.linalg.norm(v))
        return w, jnp.linalg.norm(w)

    _, rho = jax.lax.fori_loop(0, iters, body, (v, jnp.asarray(0.0, flat.dtype)))
    return rho


def _checkpoint(path, ts, done, t, phase, y, saved_leaves, stats):
    counters = ("num_steps", "num_accepted_steps", "num_rejected_steps", "grad_evals", "jvp_evals")
    _atomic_savez(
        path,
        ts=ts,
        done=done,
        t=t,
        phase=phase,
        **{f"y{i}": np.asarray(a) for i, a in enumerate(jax.tree.leaves(y))},
        **{f"s{i}": np.concatenate(s) for i, s in enumerate(saved_leaves)},
        **{key: getattr(stats, key) for key in counters},
    )


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
):
    """Integrate y' = field(t, y, None) from t = 0 to ts[-1], saving `save(t, y, None)` at `ts`.

    `field` and `save` should be equinox Modules (pytrees): arrays inside them are traced, so
    calls that differ only in array values (such as alpha) reuse one compilation.

    `settings.solver="auto"` starts with Kvaerno5 (implicit) when ρ·t1 > `stiff_horizon`, ρ the
    spectral radius of ∂field/∂y at y0 (an explicit solver would need more than ~ρ·t1/3.3
    steps); otherwise with Tsit5, which gives way to Kvaerno5, keeping the progress made, in
    the first chunk that needs more than `stiff_steps` steps.

    Returns `(saved, y_final, stats)` with `saved` a pytree of numpy arrays of leading length
    `len(ts)`. Raises `MaxStepsReached` or `FloatingPointError` with the time reached and
    what happened (`flows._failures`). Leaves of `save(...)` under an "observables" key may be
    non-finite (an observable undefined at a point); all others must be finite.
    """
    solver, rtol, atol = settings.solver, settings.rtol, settings.atol
    max_steps, stiff_steps = settings.max_steps, settings.stiff_steps
    # A Gauss–Legendre solver steps onto every save time (one chunk per save time): it
    # conserves quadratic invariants at its steps, not at interpolated times.
    n_chunks = len(ts) if solver in GAUSS else max(1, min(settings.chunks, len(ts)))
    groups = np.array_split(np.arange(len(ts)), n_chunks)
    k = max(len(g) for g in groups)
    stats = SolveStats()
    save_shape = jax.eval_shape(save, 0.0, y0, None)
    save_def = jax.tree.structure(save_shape)
    is_flow = _flow_leaves(save_shape)
    norm0 = _norm(y0)
    saved_leaves: list[list[np.ndarray]] = [[] for _ in range(save_def.num_leaves)]
    y_def = jax.tree.structure(y0)

    phase = solver
    if solver == "auto":
        stats.stiffness = float(_spectral_radius(field, y0)) * float(ts[-1])
        phase = "kvaerno5" if stats.stiffness > settings.stiff_horizon else "tsit5"
    t_start, y, state, done = 0.0, y0, None, 0
    if checkpoint is not None and os.path.exists(checkpoint):
        with np.load(checkpoint, allow_pickle=False) as ck:
            if ck["ts"].shape != ts.shape or not np.array_equal(ck["ts"], ts):
                raise ValueError(f"checkpoint {checkpoint!r} was written for other save times `ts`")
            done, t_start, phase = int(ck["done"]), float(ck["t"]), str(ck["phase"])
            y = jax.tree.unflatten(
                y_def, [jnp.asarray(ck[f"y{i}"]) for i in range(y_def.num_leaves)]
            )
            saved_leaves = [[ck[f"s{i}"]] for i in range(save_def.num_leaves)]
            for key in (
                "num_steps",
                "num_accepted_steps",
                "num_rejected_steps",
                "grad_evals",
                "jvp_evals",
            ):
                setattr(stats, key, int(ck[key]))
            stats.chunks = done

    bar = tqdm(
        total=n_chunks, initial=done, desc=desc, unit="chunk", disable=not progress, leave=False
    )
    try:
        for c in range(done, n_chunks):
            pending = groups[c]
            t_end = float(ts[pending[-1]])
            while len(pending):
                chunk_ts = np.concatenate([ts[pending], np.full(k - len(pending), t_end)])
                explicit_trial = solver == "auto" and phase not in IMPLICIT
                budget = min(stiff_steps, max_steps) if explicit_trial else max_steps
                counted = phase in STIFF
                evals_before, jvps_before = _EVALS[0], _JVPS[0]
                forget_newton_failure()
                out = _solve_chunk(
                    CountedField(field, counted),
                    save,
                    y,
                    jnp.asarray(t_start),
                    jnp.asarray(t_end),
                    jnp.asarray(chunk_ts),
                    state,
                    make_solver(phase, rtol, atol, settings.gmres_max_iters),
                    jnp.asarray(rtol),
                    jnp.asarray(atol),
                    jnp.asarray(DTMIN_RELATIVE),
                    budget,
                )
                saved, save_ts, t_reached, y_reached, new_state, st, ok, hit, collapsed = out
                steps = int(st["num_steps"])
                stats.num_steps += steps
                stats.num_accepted_steps += int(st["num_accepted_steps"])
                stats.num_rejected_steps += int(st["num_rejected_steps"])
                if counted:
                    jax.effects_barrier()
                    stats.grad_evals += _EVALS[0] - evals_before
                    stats.jvp_evals += _JVPS[0] - jvps_before
                else:
                    first = 2 if state is None else 0  # initial step selection
                    stats.grad_evals += EVALS_PER_STEP[phase] * steps + first
                if phase not in stats.solvers:
                    stats.solvers.append(phase)
                residual = max_newton_residual(
                    make_solver(phase, rtol, atol, settings.gmres_max_iters), new_state[0]
                )
                if residual is not None:
                    stats.newton_residual = max(stats.newton_residual or 0.0, residual)
                n_saved = len(pending) if bool(ok) else int(np.sum(np.isfinite(save_ts)))
                leaves = [np.asarray(x)[:n_saved] for x in jax.tree.leaves(saved)]
                if not _tree_all_finite([x for x, f in zip(leaves, is_flow) if f]):
                    raise FloatingPointError(
                        f"the trajectory became non-finite between t={t_start:.6g} "
                        f"and t={t_end:.6g}"
                    )
                for store, leaf in zip(saved_leaves, leaves):
                    store.append(leaf)
                pending = pending[n_saved:]
                y = jax.tree.map(lambda a: a[0], y_reached)
                if bool(ok):
                    state, t_start = new_state, t_end
                    continue
                t_hit = float(np.nanmax(np.where(np.isfinite(t_reached), t_reached, np.nan)))
                failure = newton_failure(t_hit)
                if failure is not None:
                    raise FloatingPointError(
                        f"{failure} (solver={phase!r}; the solve reached "
                        f"t={t_hit:.6g} of t={t_end:.6g})"
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
                if bool(collapsed):
                    dt = float(new_state[1][1])
                    raise FloatingPointError(
                        collapse_message(phase, settings, t_hit, dt, norm0, _norm(y), speed)
                    )
                if explicit_trial and bool(hit):
                    # Stiffness switch: keep what Tsit5 reached, go on implicitly from there.
                    stats.switched_to_implicit_at = t_hit
                    phase, state, t_start = "kvaerno5", None, t_hit
                    continue
                if bool(hit):
                    raise MaxStepsReached(
                        f"max_steps={max_steps} reached at t={t_hit:.6g} before t={t_end:.6g} "
                        f"(solver {phase!r}); {max_steps_advice(phase, settings, stats)}"
                    )
                raise RuntimeError(f"the solver failed at t={t_hit:.6g} before t={t_end:.6g}")
            if stats.num_steps > max_steps:
                raise MaxStepsReached(
                    f"max_steps={max_steps} reached by t={t_end:.6g} (solver {phase!r}); "
                    f"{max_steps_advice(phase, settings, stats)}"
                )
            stats.chunks = c + 1
            bar.update(1)
            bar.set_postfix(t=f"{t_end:.3g}", steps=stats.num_steps)
            if checkpoint is not None:
                _checkpoint(checkpoint, ts, c + 1, t_end, phase, y, saved_leaves, stats)
    except (MaxStepsReached, FloatingPointError) as e:
        e.stats = stats.to_dict()  # the work done, for the caller to report
        raise
    finally:
        bar.close()
    saved = jax.tree.unflatten(save_def, [np.concatenate(s) for s in saved_leaves])
    return saved, y, stats
