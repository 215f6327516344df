"""Part `gd`: gradient descent breaks balancedness by a drift first order in η."""

import os

import numpy as np
from tqdm.auto import tqdm

import flows

from .._files import write_npz
from .._options import UsageError
from ._problem import _flat


def _gd_part(problem, s, out, record) -> None:
    runs, T = [], s["gd_t1"]
    loss0 = float(problem.logistic(problem.net0))
    for eta in sorted(s["etas"], reverse=True):
        tqdm.write(f"gradient descent to t={T:.3g}, eta={eta:g} ({round(T / eta)} steps)")
        try:
            traj = flows.gradient_descent(
                problem.logistic,
                problem.net0,
                T,
                eta=eta,
                ts=flows.log_times(T, max(2, s["n_save"] // 2), t_min=eta),
                max_steps=max(1, round(T / eta)),
                observables=problem.drift_observables,
                save_params=False,
                progress=True,
            )
        except FloatingPointError as e:
            raise UsageError(f"--etas: {e}") from None
        tag = f"gd_eta{eta:g}"
        write_npz(
            os.path.join(out, f"{tag}.npz"), ts=traj.ts, loss=traj.loss, **_flat(traj.observables)
        )
        drift_T = float(traj.observables["drift"][-1].sum())
        runs.append(
            {
                "file": f"{tag}.npz",
                "eta": eta,
                "num_steps": traj.stats["num_steps"],
                "drift_at_t1": drift_T,
                "drift_at_t1_over_eta": drift_T / eta,
                "loss_final": traj.loss[-1],
            }
        )
        record({"t1": T, "loss_initial": loss0, "runs": runs})
    etas = np.array([r["eta"] for r in runs])
    drifts = np.array([r["drift_at_t1"] for r in runs])
    exponent = float(np.polyfit(np.log(etas), np.log(drifts), 1)[0])
    small = etas <= np.median(etas)
    exponent_small = (
        float(np.polyfit(np.log(etas[small]), np.log(drifts[small]), 1)[0])
        if small.sum() >= 2
        else None
    )
    record(
        {
            "t1": T,
            "loss_initial": loss0,
            "runs": runs,
            "drift_exponent_in_eta": exponent,
            "drift_exponent_in_eta_smaller_half": exponent_small,
            "note": "drift = sum_k ||C_k(t1) - C_k(0)||_F; per step DC_k = eta^2 (G_k G_k^T - "
            "G_(k+1)^T G_(k+1)), first order in eta over a fixed horizon",
        }
    )
