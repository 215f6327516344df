"""Case 13 (issue 21, item 5): Kvaerno5's steps on a small net, Newton–GMRES against dense LU.

A bias-free two-layer tanh net 3 → 10 → 1 (`models.TwoLayerNet`, p = 40) on 12 Gaussian
points, mean squared loss against sin(x·v), `solver="kvaerno5"` to t = 10⁴ at the default
tolerances; once matrix-free (GMRES) and once with the dense Hessian and LU
(`flows.Kvaerno5(dense_max=40)`, the default at p = 40). Goal: at most 250 steps (the
issue's 226 at commit ac8e1b4; ac8e1b4 itself takes 323 on this net at its own defaults,
rtol 1e-8 and atol 1e-10).

The reference is diffrax's own `diffrax.Kvaerno5()` as a user calls it (its default chord
root finder) on the same field with the same PID tolerances, at ours and at ac8e1b4's:
measured 2,959 and 1,073 steps against ours' 1,001 and 323. The goal of 250 is missed
because of the tolerances, not the root finder (rtol 1e-10 is our default since ac8e1b4).
"""

import time

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

import flows
import models

from ._case_common import _row
from ._timing import load

GOAL_STEPS = 250
T1 = 1e4


def small_net_problem():
    """(loss, net0) of the case: p = 40."""
    X = jax.random.normal(jax.random.PRNGKey(0), (12, 3))
    Y = jnp.sin(X @ jnp.array([1.0, -0.5, 2.0]))
    net = models.TwoLayerNet(3, 10, activation="tanh", key=jax.random.PRNGKey(1))
    squared = flows.SquaredLoss("mean")
    return (lambda m: squared(jax.vmap(m)(X), Y)), net


def diffrax_kvaerno5_steps(loss, net, rtol: float, atol: float) -> int:
    """Accepted steps of bare `diffrax.Kvaerno5()` on dw/dt = −∇loss to `T1` (PID controller
    at `rtol`, `atol`, dt0 chosen by diffrax)."""
    flat, unravel = ravel_pytree(eqx.filter(net, eqx.is_inexact_array))
    static = eqx.filter(net, eqx.is_inexact_array, inverse=True)

    def field(t, w, args):
        return -jax.grad(lambda v: loss(eqx.combine(unravel(v), static)))(w)

    sol = jax.jit(
        lambda w0: dfx.diffeqsolve(
            dfx.ODETerm(field), dfx.Kvaerno5(), 0.0, T1, None, w0,
            stepsize_controller=dfx.PIDController(rtol=rtol, atol=atol),
            saveat=dfx.SaveAt(t1=True), max_steps=100_000,
        )
    )(flat)  # fmt: skip
    return int(sol.stats["num_accepted_steps"])


def case_kvaerno(cfg, params):
    loss, net = small_net_problem()
    records = {}
    for name, dense_max in (("gmres", 0), ("dense", 40)):
        start = time.perf_counter()
        try:
            traj = flows.gradient_flow(
                loss, net, T1, solver=flows.Kvaerno5(dense_max=dense_max), save_params=False
            )
            stats, finished = traj.stats, True
        except flows.MaxStepsReached as e:
            stats, finished = e.stats, False
        records[name] = {
            "finished": finished,
            "cold_seconds": time.perf_counter() - start,
            "num_steps": stats["num_steps"],
            "num_rejected_steps": stats["num_rejected_steps"],
            "jvp_evals": stats["jvp_evals"],
            "grad_evals": stats["grad_evals"],
        }
    defaults = flows.SolveSettings()
    reference = {
        f"rtol {rtol:g}": diffrax_kvaerno5_steps(loss, net, rtol, atol)
        for rtol, atol in ((defaults.rtol, defaults.atol), (1e-8, 1e-10))
    }
    details = {"runs": records, "diffrax_kvaerno5_steps": reference, "load": load()}
    ratio = records["dense"]["num_steps"] / reference[f"rtol {defaults.rtol:g}"]
    return [
        _row(
            cfg, "kvaerno", params, f"two-layer tanh p=40, t=1e4: kvaerno5 steps ({name})",
            float(r["num_steps"]) if r["finished"] else None, "steps",
            goal=("<=", GOAL_STEPS), ours=f"{r['cold_seconds']:.1f} s cold", details=details,
        )
        for name, r in records.items()
    ] + [
        _row(
            cfg, "kvaerno", params, "kvaerno5 steps (dense) / diffrax.Kvaerno5's, same tolerances",
            ratio, "x", goal=("<=", 1.0), details=details,
        )
    ]  # fmt: skip
