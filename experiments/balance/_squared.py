"""Part `squared`: the stiff squared-loss flow to its least-squares end (one sweep task)."""

import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

import flows
import models

from ._problem import _flow, _stats


def squared_tasks(s) -> list[dict]:
    return [{"part": "squared"}]


def squared_task(problem, s, task, ctx) -> tuple[dict, dict]:
    T = s["squared_t1"]
    tqdm.write(f"squared-loss flow to t={T:.3g} (solver auto: Tsit5, then exprb32 when stiff)")
    rtol = s["rtols"][0]
    traj, arrays, wall = _flow(
        problem,
        problem.squared,
        T,
        s,
        ctx,
        "squared",
        rtol=rtol,
        solver=s["solver"]["squared"],
        observables={**problem.drift_observables, "end_to_end": flows.observables.end_to_end},
    )
    beta_ls = np.linalg.lstsq(problem.X_np, problem.y_np, rcond=None)[0]
    loss_ls = float(problem.squared(models.DeepLinearNet([jnp.asarray(beta_ls)[None, :]])))
    end_to_end = traj.observables["end_to_end"][-1, 0]
    record = {
        "t1": T,
        "rtol": rtol,
        "atol": s["atol_over_rtol"] * rtol,
        "solver": s["solver"]["squared"],
        "max_steps": s["max_steps"],
        **_stats(traj),
        "solve_wall_s": wall,
        "loss_final": traj.loss[-1],
        "loss_least_squares": loss_ls,
        # The digits have constant (zeroed) pixels, so β is unique only up to X's null
        # space: compare predictions, not vectors.
        "prediction_rms_error_vs_least_squares": float(
            np.sqrt(np.mean((problem.X_np @ (end_to_end - beta_ls)) ** 2))
        ),
        "drift_max": traj.observables["drift"].max(axis=0),
        "drift_relative_max_over_rtol": float(traj.observables["drift_relative"].max() / rtol),
    }
    return record, arrays


def squared_summary(s, records) -> dict:
    return records[0]
