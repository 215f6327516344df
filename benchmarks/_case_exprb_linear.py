"""Case 15 (issue 21, item 4): exprb32's steps on a stiff linear field.

F(w) = ½wᵀHw, p = 400, H = Q diag(λ) Qᵀ with λ log-spaced over 10⁻²…10⁴ and Q a random
orthogonal matrix, w(0) Gaussian; exprb32 to t = 100 at rtol 1e-8, atol 1e-12 (diffrax's PID
controller), with the default Krylov basis (`flows.ExpRosenbrock32`, up to 400 vectors here)
against the former fixed 32. The flow is linear, so exprb32 is exact at any step up to its
Krylov projection. Goal: at most 20 steps (about 2,000 with 32 vectors).
"""

import diffrax as dfx
import jax
import jax.numpy as jnp

import flows

from ._case_common import _row
from ._timing import best_of, load

GOAL_STEPS = 20
P, T1, RTOL, ATOL = 400, 100.0, 1e-8, 1e-12


def _solve(max_krylov):
    lam = jnp.logspace(-2, 4, P)
    Q, _ = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(0), (P, P)))
    H = (Q * lam) @ Q.T
    w0 = jax.random.normal(jax.random.PRNGKey(1), (P,))
    solver = flows.ExpRosenbrock32(jnp.asarray(RTOL), jnp.asarray(ATOL), max_krylov=max_krylov)

    @jax.jit
    def run():
        sol = dfx.diffeqsolve(
            dfx.ODETerm(lambda t, w, args: -H @ w), solver, 0.0, T1, None, w0,
            saveat=dfx.SaveAt(t1=True), max_steps=100_000,
            stepsize_controller=dfx.PIDController(rtol=RTOL, atol=ATOL),
        )  # fmt: skip
        exact = Q @ (jnp.exp(-lam * T1) * (Q.T @ w0))
        error = jnp.max(jnp.abs(sol.ys[0] - exact)) / jnp.max(jnp.abs(exact))
        return sol.stats["num_steps"], sol.stats["num_rejected_steps"], error

    return run


def case_exprb_linear(cfg, params):
    runs = {"default": _solve(None), "32 vectors": _solve(32)}
    records = {}
    for name, run in runs.items():
        steps, rejected, error = jax.block_until_ready(run())
        records[name] = {"num_steps": int(steps), "num_rejected_steps": int(rejected),
                         "max_relative_error": float(error)}  # fmt: skip
    calls = {name: lambda r=run: jax.block_until_ready(r()) for name, run in runs.items()}
    seconds, _ = best_of(calls, repeats=cfg.repeats)
    for name in runs:
        records[name]["warm_seconds"] = seconds[name]
    d, old = records["default"], records["32 vectors"]
    details = {"runs": records, "load": load()}
    return [
        _row(cfg, "exprb_linear", params, "exprb32 steps, linear p=400 to t=100 (rtol 1e-8)",
             float(d["num_steps"]), "steps", goal=("<=", GOAL_STEPS),
             ours=f"{d['num_steps']} steps, err {d['max_relative_error']:.1e}",
             theirs=f"32 vectors: {old['num_steps']} steps, err {old['max_relative_error']:.1e}",
             details=details),
        _row(cfg, "exprb_linear", params, "exprb32 warm time ÷ 32-vector basis, same problem",
             d["warm_seconds"] / old["warm_seconds"], "×", goal=("<=", 1.0),
             ours=f"{d['warm_seconds']:.3g} s", theirs=f"{old['warm_seconds']:.3g} s",
             details=details),
    ]  # fmt: skip
