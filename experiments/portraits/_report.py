"""The numbers each portrait shows, for results.json."""

import numpy as np


def _summary(name: str, data: dict) -> dict:
    """The numbers each figure shows, for results.json."""
    if name == "seed":
        centre = data["output"].shape[-1] // 2
        gap = np.abs(data["output"] - data["output_linearized"])
        return {
            "scales": data["scales"],
            "window_radius": data["radii"],
            "max_output_gap": gap.max(axis=(1, 2)),
            "output_gap_at_w0": gap[:, centre, centre],
        }
    if name == "flows":
        return {
            "alphas": data["alphas"],
            "path_length_from_w0": data["path_length"][:, 0, 0],
            "path_length_from_w0_linearized": data["path_length"][:, 1, 0],
            "chord_over_length_from_w0": data["straightness"][:, 0, 0],
            "max_weight_gap_from_w0": data["weight_gap"][:, 0],
            "max_weight_gap_all_starts": data["weight_gap"].max(axis=1),
            "solver_steps": data["num_steps"],
        }
    q = data["invariant_paths"]
    return {
        "max_flow_drift_of_balancedness": np.abs(q - q[:, :1]).max(),
        "gradient_descent_drift_of_balancedness": float(
            abs(data["invariant_gd"][-1] - data["invariant_gd"][0])
        ),
        "eta": data["eta"],
        "solver_steps": data["num_steps"],
    }
