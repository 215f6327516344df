"""Part `logistic`: balancedness to t1 at two tolerances, alignment, max-margin direction."""

import numpy as np
from tqdm.auto import tqdm

from ._problem import _flow, _stats


def _logistic_part(problem, s, out, record) -> None:
    runs = []
    for i, rtol in enumerate(s["rtols"]):
        tag = f"logistic_rtol{rtol:.0e}"
        tqdm.write(f"logistic flow to t={s['t1']:.3g}, rtol={rtol:g} ({s['solver']['logistic']})")
        observables = problem.observables if i == 0 else problem.drift_observables
        traj = _flow(
            problem,
            problem.logistic,
            s["t1"],
            s,
            out,
            tag,
            rtol=rtol,
            solver=s["solver"]["logistic"],
            observables=observables,
        )
        obs = traj.observables
        run = {
            "file": f"{tag}.npz",
            "rtol": rtol,
            "atol": s["atol_over_rtol"] * rtol,
            "solver": s["solver"]["logistic"],
            **_stats(traj),
            "drift_max": obs["drift"].max(axis=0),
            "drift_relative_max": obs["drift_relative"].max(axis=0),
            "drift_relative_max_over_rtol": float(obs["drift_relative"].max() / rtol),
            "loss_final": traj.loss[-1],
            "loss_times_t_final": traj.loss[-1] * traj.ts[-1],
        }
        if i == 0:
            i1 = min(int(np.searchsorted(traj.ts, 1.0)), len(traj.ts) - 1)
            run.update(
                {
                    "alignment_initial": obs["alignment"][0],
                    "alignment_final": obs["alignment"][-1],
                    "sigma_ratio_initial": obs["sigma_ratio"][0],
                    "sigma_ratio_final": obs["sigma_ratio"][-1],
                    "stable_rank_final": obs["stable_rank"][-1],
                    "top_singular_values_final": [
                        float(sv[-1, 0]) for sv in obs["singular_values"]
                    ],
                    "normalised_margin_final": obs["margin"][-1],
                    "angle_to_max_margin_at_unit_time": obs["angle"][i1],
                    "angle_to_max_margin_final": obs["angle"][-1],
                    "train_accuracy_final": float(
                        np.mean(np.sign(problem.X_np @ obs["end_to_end"][-1, 0]) == problem.y_np)
                    ),
                }
            )
        runs.append(run)
        record({"t1": s["t1"], "runs": runs})
