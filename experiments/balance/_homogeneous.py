"""Part `homogeneous`: per-neuron conservation of two-layer ReLU-type nets along their exact
(Filippov) flows, against the chattering Tsit5 baseline.

For f(x) = Σ_j a_j φ(b_j·x) with φ(s) = a·s + b·|s| (ReLU, leaky ReLU, abs), ‖b_j‖² − a_j² is
conserved by the gradient flow (Du, Hu & Lee 2018, Thm 2.1), also along a kink, where both
φ(z) and φ'(z)·z vanish. Two sweep tasks per activation:
`flows.nonsmooth.filippov_flow` (kink crossings
located as events, sliding resolved) to the long horizon, and plain Tsit5 with a step budget,
which chatters where a pre-activation slides along its kink and stops early.
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

import flows
import models

from .._options import solve_settings
from ._problem import _stats

WIDTH = 8
N_SAVE = 61  # log-spaced save times from 1e-3·min(1, t1)
_EVENT_STATS = ("events", "crossings", "sliding_entries", "sliding_exits", "pieces")


def _homogeneous_data(problem, n=10, d=3):
    """A tiny problem from the same digits: n points, their top-d principal components."""
    X = problem.X_np[:n] - problem.X_np[:n].mean(axis=0)
    _, _, vt = np.linalg.svd(X, full_matrices=False)
    Z = X @ vt[:d].T
    return jnp.asarray(Z / Z.std(axis=0)), jnp.asarray(problem.y_np[:n])


def homogeneous_tasks(s) -> list[dict]:
    return [
        {"part": "homogeneous", "activation": name, "method": method}
        for method in ("filippov", "tsit5")
        for name in s["activations"]
    ]


def _observables(net0) -> dict:
    """‖b_j‖² − a_j² per neuron, and its drift, absolute and relative to max(1, ‖b_j‖² + a_j²)
    at t = 0."""
    return {
        "neuron": flows.observables.neuron_balancedness,
        "drift": flows.observables.neuron_balancedness_drift(net0),
        "drift_relative": flows.observables.neuron_balancedness_drift(net0, relative=True),
    }


def _drift(observed, rtol) -> dict:
    """The largest drifts (over neurons and times), and the relative one at each time."""
    relative = observed["drift_relative"].max(axis=1)
    return {
        "neuron_drift_max": float(observed["drift"].max()),
        "neuron_drift_relative_max": float(relative.max()),
        "neuron_drift_relative_max_over_rtol": float(relative.max() / rtol),
    }, relative


def homogeneous_task(problem, s, task, ctx) -> tuple[dict, dict | None]:
    X, y = _homogeneous_data(problem)
    name, method = task["activation"], task["method"]
    rtol = s["rtols"][0]
    atol = s["atol_over_rtol"] * rtol
    net0 = models.TwoLayerNet(X.shape[1], WIDTH, activation=name, key=jax.random.PRNGKey(s["seed"]))
    squared = flows.SquaredLoss("mean")
    filippov = method == "filippov"
    T = s["homogeneous_t1"] if filippov else s["chatter_t1"]
    budget = s["homogeneous_max_steps"] if filippov else s["chatter_max_steps"]
    settings = solve_settings(solver="tsit5", rtol=rtol, atol=atol, max_steps=budget)
    common = dict(
        ts=flows.log_times(T, N_SAVE, t_min=1e-3 * min(1.0, T)),
        settings=settings,
        observables=_observables(net0),
        save_params=False,
        progress=ctx.progress,
    )
    record = {"activation": name, "method": method, "t1": T, "max_steps": budget}
    record.update(rtol=rtol, atol=atol, solver="tsit5")
    tqdm.write(f"two-layer {name} net (width {WIDTH}), {method}, to t={T:g}, budget {budget}")
    start = time.perf_counter()
    try:
        if filippov:
            traj = flows.nonsmooth.filippov_flow(
                net0, (X, y), T, loss=squared, checkpoint=ctx.checkpoint, **common
            )
        else:
            loss = lambda net: squared(jax.vmap(net)(X), y)  # noqa: E731
            traj = flows.gradient_flow(loss, net0, T, **common)
    except flows.MaxStepsReached as e:  # the baseline's expected end: chatter
        stats = getattr(e, "stats", None) or {}
        record.update(
            # filippov_flow says why ("events accumulate" or "max_steps reached")
            status=getattr(e, "reason", "max_steps reached"),
            t_reached=e.t,
            **{k: stats[k] for k in ("num_steps", *_EVENT_STATS) if stats.get(k) is not None},
            message=str(e),
            solve_wall_s=time.perf_counter() - start,
        )
        return record, None
    wall = time.perf_counter() - start
    neuron = traj.observables["neuron"]
    drift, relative = _drift(traj.observables, rtol)
    record.update(
        status="finished",
        t_reached=T,
        **_stats(traj),
        **{k: traj.stats[k] for k in _EVENT_STATS if k in traj.stats},
        **drift,
        solve_wall_s=wall,
        loss_initial=traj.loss[0],
        loss_final=traj.loss[-1],
    )
    arrays = {"ts": traj.ts, "loss": traj.loss, "neuron": neuron, "drift_relative": relative}
    if filippov:
        arrays["sliding"] = np.asarray(traj.stats["sliding_at_ts"])
        record["sliding_at_t1"] = int(traj.stats["sliding_at_ts"][-1])
        record["steps_plus_events"] = traj.stats["num_steps"] + traj.stats["events"]
    return record, arrays


def homogeneous_summary(s, records) -> dict:
    runs = {}
    for r in records:
        runs.setdefault(r["activation"], {})[r["method"]] = r
    return {
        "width": WIDTH,
        "data": "first 10 training digits, top 3 principal components, targets ±1",
        "loss": "squared, mean",
        "runs": {name: runs[name] for name in s["activations"] if name in runs},
        "note": "filippov: flows.nonsmooth.filippov_flow "
        "(kink crossings as events, sliding resolved), "
        "to --homogeneous-t1; tsit5: the plain gradient flow with a step budget, which "
        "chatters where a neuron slides along a kink b_j·x_i = 0 (the vector field jumps) and "
        "stops at t_reached. Drift relative = |I_j(t) - I_j(0)| / max(1, ||b_j||^2 + a_j^2), "
        "I_j = ||b_j||^2 - a_j^2, max over neurons",
    }
