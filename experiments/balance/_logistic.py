"""Part `logistic`: balancedness to t1 at two tolerances, alignment, max-margin direction.

One sweep task per tolerance; the first also records alignment, singular values and the
margin."""

import numpy as np
from tqdm.auto import tqdm

from ._problem import _flow, _stats


def logistic_tasks(s) -> list[dict]:
    return [{"part": "logistic", "rtol": r, "full": i == 0} for i, r in enumerate(s["rtols"])]


def logistic_task(problem, s, task, ctx) -> tuple[dict, dict]:
    rtol, solver = task["rtol"], s["solver"]["logistic"]
    tqdm.write(f"logistic flow to t={s['t1']:.3g}, rtol={rtol:g} ({solver})")
    observables = problem.observables if task["full"] else problem.drift_observables
    traj, arrays, wall = _flow(
        problem,
        problem.logistic,
        s["t1"],
        s,
        ctx,
        f"logistic rtol {rtol:g}",
        rtol=rtol,
        solver=solver,
        observables=observables,
    )
    obs = traj.observables
    run = {
        "rtol": rtol,
        "atol": s["atol_over_rtol"] * rtol,
        "solver": solver,
        **_stats(traj),
        "solve_wall_s": wall,
        "drift_max": obs["drift"].max(axis=0),
        "drift_relative_max": obs["drift_relative"].max(axis=0),
        "drift_relative_max_over_rtol": float(obs["drift_relative"].max() / rtol),
        "loss_final": traj.loss[-1],
        "loss_times_t_final": traj.loss[-1] * traj.ts[-1],
    }
    if task["full"]:
        i1 = min(int(np.searchsorted(traj.ts, 1.0)), len(traj.ts) - 1)
        run.update(
            {
                "alignment_initial": obs["alignment"][0],
                "alignment_final": obs["alignment"][-1],
                "sigma_ratio_initial": obs["sigma_ratio"][0],
                "sigma_ratio_final": obs["sigma_ratio"][-1],
                "stable_rank_final": obs["stable_rank"][-1],
                "top_singular_values_final": [float(sv[-1, 0]) for sv in obs["singular_values"]],
                "normalised_margin_final": obs["margin"][-1],
                "angle_to_max_margin_at_unit_time": obs["angle"][i1],
                "angle_to_max_margin_final": obs["angle"][-1],
                "train_accuracy_final": float(
                    np.mean(np.sign(problem.X_np @ obs["end_to_end"][-1, 0]) == problem.y_np)
                ),
            }
        )
    return run, arrays


def logistic_summary(s, records) -> dict:
    """The runs in the order of --rtols: the first (with alignment and margin) leads."""
    runs = sorted(records, key=lambda r: s["rtols"].index(r["rtol"]))
    return {"t1": s["t1"], "runs": runs}
