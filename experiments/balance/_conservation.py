"""Part `conservation`: the balancedness drift of the logistic flow, solver by solver.

The C_k are quadratic invariants of the flow. Runge–Kutta methods whose coefficients satisfy
b_i a_ij + b_j a_ji = b_i b_j (the Gauss–Legendre collocation methods: "implicit_midpoint",
"gauss4", "gauss6") conserve every quadratic invariant at any step size, up to their Newton
solve's residual (Cooper 1987; Hairer, Lubich & Wanner, Geometric Numerical Integration,
Thm IV.2.2); other methods keep them only to their tolerance. One sweep task per (solver,
rtol).
"""

from tqdm.auto import tqdm

from ._problem import _flow, _stats

# Rough cost order on the default problem (measured wall to t = 1e6): the slowest start first,
# so that the sweep's critical path is not one slow task started last.
_COST = {"gauss6": 0, "gauss4": 1, "implicit_midpoint": 2, "kvaerno5": 3}


def conservation_tasks(s) -> list[dict]:
    tasks = [
        {"part": "conservation", "solver": solver, "rtol": rtol}
        for rtol in s["drift_rtols"]
        for solver in s["drift_solvers"]
    ]
    return sorted(tasks, key=lambda t: (_COST.get(t["solver"], 9), t["rtol"]))


def conservation_task(problem, s, task, ctx) -> tuple[dict, dict]:
    solver, rtol = task["solver"], task["rtol"]
    tqdm.write(f"conservation: logistic flow to t={s['t1']:.3g}, {solver}, rtol={rtol:g}")
    traj, arrays, wall = _flow(
        problem,
        problem.logistic,
        s["t1"],
        s,
        ctx,
        f"conservation {solver} rtol {rtol:g}",
        rtol=rtol,
        solver=solver,
        observables=problem.drift_observables,
    )
    drift = traj.observables["drift_relative"].max(axis=1)  # max over k, per save time
    record = {
        "solver": solver,
        "rtol": rtol,
        "atol": s["atol_over_rtol"] * rtol,
        **_stats(traj),
        "solve_wall_s": wall,
        "drift_relative_max": float(drift.max()),
        "drift_relative_final": float(drift[-1]),
        "drift_relative_max_over_rtol": float(drift.max() / rtol),
        "loss_final": traj.loss[-1],
    }
    return record, {"ts": arrays["ts"], "loss": arrays["loss"], "drift_relative": drift}


def conservation_summary(s, records) -> dict:
    """The runs in the order of --drift-rtols, then --drift-solvers."""
    order = [(rtol, solver) for rtol in s["drift_rtols"] for solver in s["drift_solvers"]]
    records = sorted(records, key=lambda r: order.index((r["rtol"], r["solver"])))
    return {
        "t1": s["t1"],
        "runs": records,
        "quantity": "max over k and save times of ||C_k(t) - C_k(0)||_F / max(1, ||W_k||_F^2 + "
        "||W_(k+1)||_F^2); solve_wall_s includes compilation",
        "note": "Gauss-Legendre methods conserve quadratic invariants exactly up to the Newton "
        "residual (newton_residual, relative), whatever rtol; the others to about rtol",
    }
