"""The printed summary of a balance run."""

import numpy as np
from tqdm.auto import tqdm


def plain_list(values) -> str:
    """'a → b' for a list of solver names (never a Python list repr in a title or a
    printed line)."""
    if isinstance(values, str):
        return values
    return " → ".join(str(v) for v in values)


def _logistic_lines(results) -> list[str]:
    lines = []
    for run in results.get("logistic", {}).get("runs", []):
        lines.append(
            f"logistic {run['solver']} rtol {run['rtol']:g}: {run['num_steps']} steps, "
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
    return lines


def _conservation_lines(results) -> list[str]:
    lines = []
    for run in results.get("conservation", {}).get("runs", []):
        newton = run.get("newton_residual")
        lines.append(
            f"conservation {run['solver']:>17s} rtol {run['rtol']:g}: max relative drift "
            f"{run['drift_relative_max']:.2g}, {run['num_steps']} steps, "
            f"{run['solve_wall_s']:.1f} s" + (f", Newton residual {newton:.1e}" if newton else "")
        )
    return lines


def stop_text(run) -> str:
    """'stopped at t=… after N steps and E events: <status>' for a run that did not finish,
    with only the counts it recorded."""
    counts = [
        f"{run[key]} {name}" for key, name in (("num_steps", "steps"), ("events", "events"))
        if run.get(key) is not None
    ]  # fmt: skip
    after = f" after {' and '.join(counts)}" if counts else ""
    return f"stopped at t={run['t_reached']:.4g}{after}: {run['status']}"


def _homogeneous_lines(results) -> list[str]:
    lines = []
    for name, runs in results.get("homogeneous", {}).get("runs", {}).items():
        for method, run in runs.items():
            head = f"{name} {method} to t={run['t1']:g}: "
            if run["status"] != "finished":
                lines.append(head + stop_text(run))
                continue
            events = f", {run['events']} events" if "events" in run else ""
            lines.append(
                head + f"{run['num_steps']} steps{events}, per-neuron drift "
                f"{run['neuron_drift_relative_max_over_rtol']:.3g}·rtol"
            )
    return lines


def _summary(results, figures) -> None:
    lines = _logistic_lines(results) + _conservation_lines(results)
    if "gd" in results and "drift_exponent_in_eta" in results["gd"]:
        lines.append(f"GD drift exponent in eta: {results['gd']['drift_exponent_in_eta']:.3f}")
    if "squared" in results:
        sq = results["squared"]
        switch = sq["switched_to_stiff_at"]
        how = (
            "no switch" if switch is None else f"switched to {sq['solvers'][-1]} at t={switch:.4g}"
        )
        solvers = plain_list(sq["solvers"])
        lines.append(f"squared: {sq['num_steps']} steps, solvers {solvers} ({how})")
    lines += _homogeneous_lines(results)
    sweep = results.get("sweep", {})
    if sweep:
        lines.append(
            f"{sweep['tasks']} tasks ({sweep['backend']}): {sweep['task_wall_s_total']:.1f} s "
            f"of task wall time, critical path {sweep['critical_path_s']:.1f} s"
        )
    lines.append("figures: " + (", ".join(figures) or "none for these parts"))
    tqdm.write("\n".join(lines))
