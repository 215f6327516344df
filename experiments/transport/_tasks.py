"""One task of the transport sweep (`experiments._sweep`), as a worker runs it."""

import time

import numpy as np

from ._data import cost


def measure(task: dict, shared: dict, ctx) -> tuple[dict, dict]:
    """A Sinkhorn solve at one (f, ε) cell, warm-started by the larger ε of the grid
    (ε-scaling), or one particle flow. Returns (record, arrays): the record holds no NaN (a
    cell that does not converge says so, with the error reached)."""
    import jax

    from flows.transport import SinkhornNotConverged, particle_flow, sinkhorn

    s, x, y = shared["settings"], shared["x"], shared["y"]
    if task["measure"] == "flow":
        m = s["flow_n"]
        x0, target = x[:m], y[:m]
        ts = np.linspace(0.0, s["t1"], 7)
        traj = particle_flow(x0, target, s["t1"], eps=s["flow_eps"], divergence=task["divergence"],
                             ts=ts, rtol=1e-9, atol=1e-12)  # fmt: skip
        ybar = target.mean(0)
        expected = ybar + np.exp(-ts)[:, None] * (x0.mean(0) - ybar)
        record = {
            "mean_error": float(np.abs(traj.observables["mean"] - expected).max()),
            "loss": traj.loss.tolist(),
            "sinkhorn_solves": traj.stats["sinkhorn_solves"],
            "sinkhorn_iterations": traj.stats["sinkhorn_iterations"],
            "sinkhorn_max_iterations": traj.stats["sinkhorn_max_iterations"],
            "support_changes": len(traj.stats["support_changes"]),
            "num_steps": traj.stats["num_steps"],
        }
        return record, {
            "ts": ts,
            "positions": traj.params,
            "mean": traj.observables["mean"],
            "y": target,
        }
    a = np.full(len(x), 1.0 / len(x))
    b = np.full(len(y), 1.0 / len(y))
    c = cost(x, y)
    eps = task["eps"]
    schedule = [e for e in s["eps"] if e > eps]
    name = task["divergence"]
    try:  # compile outside the timing (one program per f: ε is an argument)
        sinkhorn(a, b, c, eps, name, tol=s["tol"], max_iters=1)
    except SinkhornNotConverged:
        pass
    start = time.perf_counter()
    try:
        result = sinkhorn(
            a, b, c, eps, name, tol=s["tol"], max_iters=s["max_iters"], eps_schedule=schedule
        )
        jax.block_until_ready(result.plan)
        converged, reached = True, None
    except SinkhornNotConverged as error:
        converged, reached, result = False, error.marginal_error, None
    seconds = time.perf_counter() - start
    record = {"converged": converged, "seconds": seconds, "stages": len(schedule) + 1}
    arrays = {}
    if converged:
        plan = np.asarray(result.plan)
        record.update(
            iterations=int(result.iterations),
            nonzero_fraction=float((plan > 0).mean()),
            marginal_error=float(np.max(result.marginal_error)),
            gap=float(result.gap),
            primal=float(result.primal),
            dual=float(result.dual),
            transport_cost=float((plan * c).sum()),
        )
        if eps == s["plan_eps"]:
            arrays["plan"] = plan
    else:
        record.update(iterations=None, marginal_error=reached)  # stopped at max_iters
    return record, arrays
