"""Locating a missed goal in the engine: host-side profile, ablations, uncounted work."""

import contextlib
import cProfile
import io
import pstats
import time

import jax
import jax.flatten_util
import lineax as lx
import numpy as np

from . import _problem
from ._timing import best_of

_HVPS = [0]


def _tick_hvp():
    _HVPS[0] += 1


@contextlib.contextmanager
def counting_operator_applications():
    """Count at run time every `lineax.FunctionLinearOperator.mv` traced while active: under
    Kvaerno5 + Newton–GMRES, each is one Jacobian-vector product of the vector field (a
    Hessian-vector product of the loss). Only code traced inside the block is counted."""
    original = lx.FunctionLinearOperator.mv

    def mv(self, vector):
        jax.debug.callback(_tick_hvp)
        return original(self, vector)

    lx.FunctionLinearOperator.mv = mv
    _HVPS[0] = 0
    try:
        yield _HVPS
    finally:
        lx.FunctionLinearOperator.mv = original


def implicit_work(params: int, t1: float, restart: int = 20) -> dict:
    """Kvaerno5 + Newton–GMRES to t1 on a fresh copy of the two-layer problem (a fresh loss
    object, so the solve is traced again with the counter in place), through diffrax directly
    with one chunk: steps, wall time, and the Hessian-vector products GMRES applies, which the
    engine's `grad_evals` does not include. `restart=20` is the engine's GMRES setting."""
    import diffrax as dfx
    import equinox as eqx
    import jax.numpy as jnp
    import optimistix as optx

    prob = _problem.two_layer(params, t1=t1)
    gmres = lx.GMRES(rtol=prob.rtol, atol=prob.atol, restart=restart, stagnation_iters=restart)
    newton = dfx.with_stepsize_controller_tols(optx.Newton)(linear_solver=gmres)
    solver = dfx.Kvaerno5(root_finder=newton)
    with counting_operator_applications() as hvps:

        @eqx.filter_jit
        def solve(y0):
            return _problem._raw_solve(
                prob.field, solver, y0, jnp.asarray(t1), prob.rtol, prob.atol, 100_000
            )

        jax.block_until_ready(solve(prob.trainable))
        jax.effects_barrier()
        hvps[0] = 0
        start = time.perf_counter()
        y1, steps = jax.block_until_ready(solve(prob.trainable))
        seconds = time.perf_counter() - start
        jax.effects_barrier()
        count = hvps[0]
    theta = jax.flatten_util.ravel_pytree(y1)[0]
    return {
        "t1": t1,
        "gmres_restart": restart,
        "num_steps": int(steps),
        "seconds": seconds,
        "hessian_vector_products": count,
        "hvps_per_step": count / max(1, int(steps)),
        "final_loss": float(prob.loss_flat(theta)),
    }


def host_profile(fn, top: int = 12) -> list[dict]:
    """cProfile of one call of `fn`: the functions with the most own (host) time."""
    profiler = cProfile.Profile()
    profiler.enable()
    fn()
    profiler.disable()
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    rows = []
    for (file, line, name), (_calls, nc, tt, ct, _) in stats.stats.items():
        rows.append(
            {
                "function": f"{file.split('site-packages/')[-1]}:{line}({name})",
                "calls": nc,
                "own_s": tt,
                "cumulative_s": ct,
            }
        )
    rows.sort(key=lambda r: -r["own_s"])
    return rows[:top]


def flow_ablations(prob, repeats: int) -> dict:
    """Time per gradient evaluation of `gradient_flow` (Tsit5) with one layer removed at a
    time: chunking (chunks=1), saving full weights (save_params=False), and both."""
    settings = {
        "default": dict(solver="tsit5"),
        "chunks_1": dict(solver="tsit5", chunks=1),
        "no_save_params": dict(solver="tsit5", save_params=False),
        "chunks_1_no_save_params": dict(solver="tsit5", chunks=1, save_params=False),
    }
    fns = {name: (lambda kw=kw: prob.flow(**kw)) for name, kw in settings.items()}
    for fn in fns.values():
        fn()
    secs, out = best_of(fns, repeats)
    return {
        name: {
            "seconds": secs[name],
            "grad_evals": out[name].stats["grad_evals"],
            "num_steps": out[name].stats["num_steps"],
            "us_per_grad_eval": 1e6 * secs[name] / out[name].stats["grad_evals"],
            "cold_seconds": prob.cold_seconds(**settings[name]),
        }
        for name in settings
    } | {"settings": {k: {kk: str(vv) for kk, vv in v.items()} for k, v in settings.items()}}


def carried_step_prototype(prob, solver_name: str, t1: float, chunks: int = 20) -> dict:
    """Prototype of a proposed engine change, measured on the engine's own solver choice:
    the chunked solve of `flows._integrate` re-estimates the initial step at every chunk
    (diffrax does so whenever `dt0=None`, even with `controller_state` passed), so each chunk
    starts from a small step. Here the same chunks run through `diffrax.diffeqsolve`
    directly, once re-estimating (as the engine does) and once passing `dt0` = the last step
    of the previous chunk that was not clipped by the chunk end. Returns the steps of both."""
    import diffrax as dfx
    import equinox as eqx
    import jax.numpy as jnp

    import flows
    from flows import make_solver

    solver = make_solver(solver_name, prob.rtol, prob.atol)
    ts = flows.log_times(t1, 100)
    ends = [float(ts[g[-1]]) for g in np.array_split(np.arange(len(ts)), chunks)]

    @eqx.filter_jit
    def chunk(y0, t0, t_end, state, dt0):
        solver_state, controller_state, made_jump = state if state else (None,) * 3
        sol = dfx.diffeqsolve(
            dfx.ODETerm(prob.field),
            solver,
            t0,
            t_end,
            dt0,
            y0,
            saveat=dfx.SaveAt(
                subs=[dfx.SubSaveAt(t1=True), dfx.SubSaveAt(steps=True, fn=lambda t, y, a: t)],
                solver_state=True,
                controller_state=True,
                made_jump=True,
            ),
            stepsize_controller=dfx.PIDController(rtol=prob.rtol, atol=prob.atol),
            max_steps=100_000,
        )
        state = (sol.solver_state, sol.controller_state, sol.made_jump)
        return jax.tree.map(lambda a: a[-1], sol.ys[0]), sol.ys[1], state, sol.stats["num_steps"]

    out = {}
    for carry in (False, True):
        y, state, t0, dt0, steps = prob.trainable, None, 0.0, None, 0
        for t_end in ends:
            if t_end <= t0:
                continue
            dt = None if (dt0 is None or not carry) else jnp.asarray(min(dt0, t_end - t0))
            y, step_ts, state, n = chunk(y, jnp.asarray(t0), jnp.asarray(t_end), state, dt)
            steps += int(n)
            step_ts = np.asarray(step_ts)
            sizes = np.diff(np.concatenate([[t0], step_ts[np.isfinite(step_ts)]]))
            dt0 = float(sizes[-2] if len(sizes) > 1 else sizes[-1])
            t0 = t_end
        out["carried_dt0" if carry else "re_estimated_dt0"] = steps
    return {"solver": solver_name, "t1": t1, "chunks": chunks, "num_steps": out}
