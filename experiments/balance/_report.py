"""The printed summary of a balance run."""

import numpy as np
from tqdm.auto import tqdm


def _summary(results, figures) -> None:
    lines = []
    for run in results.get("logistic", {}).get("runs", []):
        lines.append(
            f"logistic rtol {run['rtol']:g}: {run['num_steps']} steps, "
            f"{run['grad_evals']} evals, max drift/max(1,|W|²) = "
            f"{run['drift_relative_max_over_rtol']:.3g}·rtol"
        )
        if "alignment_final" in run:
            lines.append(
                f"  alignment {np.round(run['alignment_final'], 4).tolist()}, angle to "
                f"max margin {run['angle_to_max_margin_final']:.4g} rad, margin "
                f"{run['normalised_margin_final']:.4g} (SVM "
                f"{results['data']['max_margin']['margin']:.4g})"
            )
    if "gd" in results:
        lines.append(f"GD drift exponent in eta: {results['gd']['drift_exponent_in_eta']:.3f}")
    if "squared" in results:
        sq = results["squared"]
        switch = sq["switched_to_implicit_at"]
        how = (
            "implicit from the start"
            if switch is None
            else f"switched to implicit at t={switch:.4g}"
        )
        lines.append(f"squared: {sq['num_steps']} steps, solvers {sq['solvers']} ({how})")
    for name, runs in results.get("homogeneous", {}).get("runs", {}).items():
        for run in runs.values():
            done = run["status"] == "finished"
            lines.append(
                f"{name} to t={run['t1']:g}: "
                + (
                    f"{run['num_steps']} steps, per-neuron drift "
                    f"{run['neuron_drift_max_over_rtol_scale']:.3g}·rtol"
                    if done
                    else run["message"].split(";")[0]
                )
            )
    lines.append("figures: " + (", ".join(figures) or "none for these parts"))
    tqdm.write("\n".join(lines))
