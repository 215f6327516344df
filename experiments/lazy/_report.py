"""The printed summary of a lazy run, read from its results.json."""

import json
import os

import numpy as np


def _fmt(x, spec=".3e"):
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    return format(x, spec)


# (header, key in a run record, format) of the summary table.
COLUMNS = (
    ("alpha", "alpha", ".3g"),
    ("sup|w-wbar|", "sup_weight_gap", ".3e"),
    ("sup out gap", "sup_output_gap", ".3e"),
    ("sup heldout", "sup_heldout_output_gap", ".3e"),
    ("sup|w-w0|", "sup_distance_from_init", ".3e"),
    ("Thm2.2 bnd", "theorem_2_2_bound", ".3e"),
    ("R(t1)", "final_loss", ".2e"),
    ("Rbar(t1)", "final_loss_linearized", ".2e"),
    ("rate", "rate", ".3f"),
    ("Thm2.4 ok", "theorem_2_4_conditions_hold", ""),
    ("bound held", "theorem_2_4_bound_held", ""),
    ("steps", "steps", "d"),
    ("time s", "wall_s", ".1f"),
)


def print_summary(folder: str, figures) -> None:
    """The table of results.json: one row per α, then the fits beside the theory."""
    with open(os.path.join(folder, "results.json")) as f:
        res = json.load(f)
    th, fits = res["theory"], res["fits"]
    print(" ".join(f"{h:>11}" for h, _, _ in COLUMNS))
    for r in res["runs"]:
        if r["failed"]:
            print(f"{r['alpha']:>11.3g} failed: {r['reason']}")
        else:
            print(" ".join(f"{_fmt(r.get(k), spec):>11}" for _, k, spec in COLUMNS))
    exp = th["expected_slopes"]
    print("log-log slopes over alpha (measured / expected):")
    for key, name in (
        ("weight_gap", "weight gap"),
        ("output_gap", "output gap"),
        ("heldout_output_gap", "held-out gap"),
        ("distance", "distance"),
    ):
        print(f"  {name:13s} {_fmt(fits[key + '_slope'], '+.3f')} / {exp[key]:+d}")
    rates = [r["rate"] for r in res["runs"] if not r["failed"] and r["rate"] is not None]
    print(
        f"lambda_min(Sigma) = {th['lambda_min']:.4g}, lambda_max = {th['lambda_max']:.4g}, "
        f"Thm 2.4 rate m*sigma_min^2/4 = {th['theorem_2_4_rate']:.4g}"
    )
    if rates and th["lambda_min"] > 0 and th["theorem_2_4_rate"] > 0:
        med = float(np.median(rates))
        print(
            f"late rate (median over alpha) = {med:.4g} = {med / th['lambda_min']:.3f} lambda_min"
            f" = {med / th['theorem_2_4_rate']:.3f} x the theorem's rate"
        )
    if th["C0"] is not None:
        print(
            f"Thm 2.4: Lip(Dh) ~ {th['lip_jacobian']:.4g} (lower estimate), C0 = {th['C0']:.3g},"
            f" conditions hold for alpha > {th['alpha_min']:.3g}"
        )
    else:
        print(f"Thm 2.4: C0 not computed ({th['lip_method']})")
    drawn = ", ".join(os.path.basename(p) for p in figures) or "no figures (no α finished)"
    print(f"wrote {folder}/: results.json, trajectories.npz, {drawn}")
