"""Fits of the saved measurements, results.json's content and the summary line."""

import numpy as np

import flows

from ._design import key

REFERENCE = "Terjék & González-Sánchez 2025"
SETTLE_TOLERANCE = 0.10  # cond(K∞) within 10% of its value at the largest depth


def slope_fit(widths, errors) -> dict:
    """Log-log slope of the seed-mean error against m, and the spread of per-seed slopes
    (seed s across all widths); errors has shape (W, S)."""
    per_seed = [flows.lazy.loglog_slope(widths, errors[:, s]) for s in range(errors.shape[1])]
    per_seed = np.array([s for s in per_seed if s is not None])
    return {
        "slope_of_mean": flows.lazy.loglog_slope(widths, errors.mean(axis=1)),
        "per_seed_mean": float(per_seed.mean()),
        "per_seed_std": float(per_seed.std(ddof=1)) if per_seed.size > 1 else 0.0,
        "per_seed_min": float(per_seed.min()),
        "per_seed_max": float(per_seed.max()),
        "mean_error": errors.mean(axis=1),
        "std_error": errors.std(axis=1, ddof=1),
    }


def settle_depth(depths, cond) -> int | None:
    """The smallest depth on the grid from which cond stays within 10% of its last value."""
    cond = np.asarray(cond, dtype=np.float64)
    ok = np.abs(cond / cond[-1] - 1) <= SETTLE_TOLERANCE
    if not ok[-1]:
        return None
    first = len(ok) - 1
    while first > 0 and ok[first - 1]:
        first -= 1
    return int(depths[first])


def results(arrays: dict, datasets, activations: dict, schemes) -> dict:
    """The numbers of the run, JSON-ready (no NaN: a singular K∞ gets cond None)."""
    widths, depths = arrays["widths"], arrays["depths"]
    out = {"slopes": {}, "condition_number": {"depths": depths.tolist()}}
    for data in datasets:
        out["slopes"][data], out["condition_number"][data] = {}, {}
        for act, (a, b) in activations.items():
            out["slopes"][data][act] = {
                "a": a,
                "b": b,
                "delta_phi": b * b / (a * a + b * b),
                **{s: slope_fit(widths, arrays[key("errors", data, act, s)]) for s in schemes},
            }
            lo, hi = arrays[key("lambda", data, act)]
            cond = [float(h / l) if l > 0 else None for l, h in zip(lo, hi)]
            settled = settle_depth(depths, cond) if None not in cond else None
            out["condition_number"][data][act] = {
                "cond": cond,
                "lambda_min": lo,
                "lambda_max": hi,
                "settles_at_depth": settled,
            }
    out["reference_slope"] = {"value": -0.5, "source": REFERENCE}
    out["settle_rule"] = (
        f"smallest depth from which cond stays within {SETTLE_TOLERANCE:.0%} of its value at "
        "the largest depth"
    )
    return out


def summary_line(res: dict, folder: str) -> str:
    parts = []
    for data, by_act in res["slopes"].items():
        fits = ", ".join(
            f"{act} {f['constant']['slope_of_mean']:+.2f}/{f['quadratic']['slope_of_mean']:+.2f}"
            for act, f in by_act.items()
        )
        parts.append(f"{data}: {fits}")
    return (
        "ntk: slope of ‖K_m − K∞‖/‖K∞‖ in m (constant/quadratic widths; claim −0.5) — "
        + "; ".join(parts)
        + f" — {folder}"
    )
