"""Part `gd`: gradient descent breaks balancedness by a drift first order in η.

One sweep task per step η; the exponent is fitted over the finished ones."""

import warnings

import numpy as np
from tqdm.auto import tqdm

import flows

from .._options import UsageError
from ._problem import _flat


def gd_tasks(s) -> list[dict]:
    return [{"part": "gd", "eta": eta} for eta in sorted(s["etas"], reverse=True)]


def gd_task(problem, s, task, ctx) -> tuple[dict, dict]:
    T, eta = s["gd_t1"], task["eta"]
    tqdm.write(f"gradient descent to t={T:.3g}, eta={eta:g} ({round(T / eta)} steps)")
    try:
        with warnings.catch_warnings():  # a diverging η has no drift to fit: one line, exit 2
            warnings.simplefilter("error", flows.DivergenceWarning)
            # ηS(0) > 2 is what --etas explores; a divergence is the one line that says so
            warnings.simplefilter("ignore", flows.large_steps.EdgeOfStabilityWarning)
            traj = flows.gradient_descent(
                problem.logistic,
                problem.net0,
                T,
                eta=eta,
                ts=flows.log_times(T, max(2, s["n_save"] // 2), t_min=eta),
                max_steps=max(1, round(T / eta)),
                observables=problem.drift_observables,
                save_params=False,
                progress=ctx.progress,
            )
    except (FloatingPointError, flows.DivergenceWarning) as e:
        raise UsageError(f"--etas: {e}") from None
    drift_T = float(traj.observables["drift"][-1].sum())
    record = {
        "eta": eta,
        "num_steps": traj.stats["num_steps"],
        "drift_at_t1": drift_T,
        "drift_at_t1_over_eta": drift_T / eta,
        "loss_initial": traj.loss[0],
        "loss_final": traj.loss[-1],
    }
    return record, {"ts": traj.ts, "loss": traj.loss, **_flat(traj.observables)}


def gd_summary(s, records) -> dict:
    runs = sorted(records, key=lambda r: -r["eta"])
    summary = {
        "t1": s["gd_t1"],
        "loss_initial": runs[0]["loss_initial"] if runs else None,
        "runs": runs,
        "note": "drift = sum_k ||C_k(t1) - C_k(0)||_F; per step DC_k = eta^2 (G_k G_k^T - "
        "G_(k+1)^T G_(k+1)), first order in eta over a fixed horizon",
    }
    if len(runs) < 2:
        return summary
    etas = np.array([r["eta"] for r in runs])
    drifts = np.array([r["drift_at_t1"] for r in runs])
    small = etas <= np.median(etas)
    summary["drift_exponent_in_eta"] = float(np.polyfit(np.log(etas), np.log(drifts), 1)[0])
    summary["drift_exponent_in_eta_smaller_half"] = (
        float(np.polyfit(np.log(etas[small]), np.log(drifts[small]), 1)[0])
        if small.sum() >= 2
        else None
    )
    return summary
