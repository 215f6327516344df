"""results.json and trajectories.npz of a lazy run, from the parts of every α."""

import os

import numpy as np

import flows

from .._files import versions, write_json, write_npz
from ._alpha import LOSS, residual_floor, smooth

EXPECTED_SLOPES = {
    "doubled": {"weight_gap": -2, "output_gap": -2, "heldout_output_gap": -2, "distance": -1},
    "centred": {"weight_gap": -2, "output_gap": -1, "heldout_output_gap": -1, "distance": -1},
}


#: A sup gap below this is not a measurement: float64 has lost its relative precision there
#: (subnormal or 0; at α = 1e300 the gaps, O(1/α) and O(1/α²), underflow to exactly 0)
RESOLUTION = float(np.finfo(np.float64).tiny / np.finfo(np.float64).eps)  # 1.0e-292
GAPS = {
    "sup_weight_gap": "weight gap",
    "sup_output_gap": "output gap",
    "sup_heldout_output_gap": "held-out gap",
}
MIN_FIT_ALPHAS = 3  # a slope through two points says nothing about a power law
LATE_ALPHA = 10.0  # the lazy regime of the late rate (docs/lazy.md: "α ≥ 10")


def _theory(constants, s, t1) -> dict:
    out = constants.summary()
    is_smooth = smooth(s)
    if not is_smooth:  # the constants exist as numbers but belong to a theorem that does not apply
        why = (
            f"Theorem 2.4 does not apply: {s['activation']} is not smooth, so Dh has no "
            "Lipschitz constant (Chizat, Oyallon & Bach 2019 assume Dh locally Lipschitz)"
        )
        out["theorem_2_4_rate"] = None
        out["unavailable"] = {k: why for k in ("C0", "alpha_min", "theorem_2_4_rate")}
    out.update(
        loss="R(y) = ½‖y − y*‖² (sum over the training outputs)",
        t1=t1,
        theory_applies=is_smooth,
        theory_note=None
        if is_smooth
        else f"{s['activation']} is not smooth: Dh is not Lipschitz, outside the assumptions of "
        "Chizat, Oyallon & Bach 2019 (Thms 2.2/2.4); no expected slopes or theorem rates",
        expected_slopes=EXPECTED_SLOPES.get(s["symmetrize"]) if is_smooth else None,
        theorem_2_2_bound="sqrt(t1 · R(α h(w0))) / α",
        theorem_2_4_bound="sqrt(κ) ‖α h(w0) − y*‖ exp(−m σ_min² t / 4), bounds ‖α h(w_α(t)) − y*‖",
        theorem_2_4_conditions="σ_min > 0, ‖h(w0)‖ ≤ C0 and α > ‖y*‖/C0 = alpha_min",
        rate_definition=(
            "minus the least-squares slope of log ‖αh(w_α(t)) − y*‖ (= log sqrt(2R)) over "
            f"t in [{1 - s['rate_window']:g}·t1, t1]; the loss R decays at twice this rate"
        ),
    )
    return out


def _fits(runs, heldout: bool) -> dict:
    """Log-log slopes over the finished α, only from `MIN_FIT_ALPHAS` of them on."""
    ok = [r for r in runs if not r["failed"]]
    enough = len(ok) >= MIN_FIT_ALPHAS

    def slope(key):  # an unresolved gap (None) is left out, and counts not
        pairs = [(r["alpha"], r[key]) for r in ok if r.get(key) is not None]
        return flows.lazy.loglog_slope(*zip(*pairs)) if len(pairs) >= MIN_FIT_ALPHAS else None

    late = [r["rate"] for r in ok if r["alpha"] >= LATE_ALPHA and r.get("rate") is not None]
    return {
        "weight_gap_slope": slope("sup_weight_gap"),
        "output_gap_slope": slope("sup_output_gap"),
        "heldout_output_gap_slope": slope("sup_heldout_output_gap") if heldout else None,
        "distance_slope": slope("sup_distance_from_init"),
        "n_alphas_fitted": len(ok) if enough else 0,
        "fit_note": None
        if enough
        else f"{len(ok)} finished α: a slope needs at least {MIN_FIT_ALPHAS}, none is fitted",
        "late_rate_median": float(np.median(late)) if late else None,
        "late_rate_alphas": [
            r["alpha"] for r in ok if r["alpha"] >= LATE_ALPHA and r.get("rate") is not None
        ],
        "late_rate_note": f"median of the per-α rates over the finished α >= {LATE_ALPHA:g} "
        "whose rate was fitted (the lazy regime); per-α rates are in runs",
    }


RUN_KEYS = (  # the stable per-α schema of results.json, in this order
    "alpha",
    "sup_weight_gap",
    "sup_output_gap",
    "sup_heldout_output_gap",
    "sup_distance_from_init",
    "final_loss",
    "final_loss_linearized",
    "rate",
    "theorem_2_4_rate",
    "symmetrize",
)


def _pl_fits(runs, lambda_min) -> dict:
    """inf_t μ(t) against λ_min(Σ): the relative gap per α and its log-log slopes.

    |λ_min − inf μ|/λ_min has two parts: the linear flow's own excess at the horizon
    (μ̄(t) = r̄ᵀΣr̄/‖r̄‖² decreases to λ_min only as t → ∞; it does not depend on α, since
    h(w0) = 0) and the nonlinear part |inf μ − inf μ̄|/λ_min, which vanishes as α → ∞."""
    ok = [r for r in runs if not r["failed"] and r.get("pl_inf") is not None]
    enough = len(ok) >= MIN_FIT_ALPHAS and lambda_min > 0
    for r in ok:
        if lambda_min > 0:
            r["pl_relative_gap"] = abs(lambda_min - r["pl_inf"]) / lambda_min
        if lambda_min > 0 and r.get("pl_inf_linearized") is not None:
            r["pl_nonlinear_gap"] = abs(r["pl_inf"] - r["pl_inf_linearized"]) / lambda_min
    alphas = [r["alpha"] for r in ok]
    linear = [r["pl_inf_linearized"] for r in ok if r.get("pl_inf_linearized") is not None]

    def slope(key):
        pairs = [(r["alpha"], r[key]) for r in ok if r.get(key) is not None]
        return flows.lazy.loglog_slope(*zip(*pairs)) if enough and len(pairs) >= 2 else None

    return {
        "pl_relative_gap_slope": slope("pl_relative_gap"),
        "pl_nonlinear_gap_slope": slope("pl_nonlinear_gap"),
        "pl_relative_gap_linearized": (
            abs(float(np.median(linear)) - lambda_min) / lambda_min
            if linear and lambda_min > 0
            else None
        ),
        "pl_note": "μ(t) = ‖∇F_α‖²/(2F_α) = rᵀΣ(w)r/‖r‖² (F* = 0, r = αh(w) − y*): no power "
        "of α, comparable with λ_min(Σ(w0)) as is. Slopes over the "
        f"{len(alphas) if enough else 0} α with μ defined somewhere (at least "
        f"{MIN_FIT_ALPHAS}); pl_relative_gap_linearized: the linear flow's "
        "(inf_t μ̄ − λ_min)/λ_min at this horizon (the α → ∞ limit of the relative gap; it "
        "falls to 0 only as t1 → ∞)",
    }


def mark_unresolved(run: dict) -> dict:
    """Flag a finished α whose sup gaps are below `RESOLUTION` (round-off, not measured):
    those gaps become None (their values kept in `run["unresolved"]`), and so do
    `theorem_2_4_conditions_hold` and `theorem_2_4_bound_held`, so that no theorem is said to
    hold on them ("Thm2.4 ok: yes" was printed for α = 1e300 with every gap exactly 0).
    Returns `run`, changed in place."""
    low = {k: run[k] for k in GAPS if run.get(k) is not None and run[k] < RESOLUTION}
    if not low:
        return run
    shown = ", ".join(f"{GAPS[k]} {v:.3g}" for k, v in low.items())
    run["unresolved"] = {
        "values": low,
        "reason": f"α = {run['alpha']:.3g}: {shown}, below float64's resolution "
        f"{RESOLUTION:.2g} (the gaps scale like 1/α and 1/α²: round-off, not a measurement); "
        "not fitted, no theorem checked",
    }
    run.update({k: None for k in low})
    run.update(theorem_2_4_conditions_hold=None, theorem_2_4_bound_held=None)
    return run


def bound_held(residual, bound, floor: float) -> bool:
    """Whether the measured residual ‖αh(w_α(t)) − y*‖ `(T,)` stays below Theorem 2.4's
    `bound` `(T,)` at every save time (1e-9: round-off at t = 0), judged where the bound is
    above `floor`, what the solve resolves (`_alpha.residual_floor`): a bound that decays
    below it is neither met nor broken there (it said "no" once the loss reached round-off)."""
    above = np.maximum(np.asarray(bound), floor)
    return bool(np.all(np.asarray(residual) <= above * (1 + 1e-9)))


def write_results(folder, config, records, parts, constants, s, t1, sweep) -> None:
    """results.json and trajectories.npz from the records and the arrays (`parts`) of every α;
    `sweep` describes where the tasks ran."""
    runs, series = [], {}
    is_smooth = smooth(s)
    for rec, part in zip(records, parts):
        alpha = rec["alpha"]
        extra = {
            "theorem_2_4_rate": constants.theorem_2_4_rate if is_smooth else None,
            "symmetrize": s["symmetrize"],
            "theorem_2_2_bound": flows.lazy.theorem_2_2_bound(
                alpha,
                t1,
                float(LOSS(alpha * constants.h0, constants.y_star)),  # R(αh(w0))
            ),
            "theorem_2_4_conditions_hold": constants.theorem_2_4_conditions(alpha)
            if is_smooth
            else None,
        }
        if not rec["failed"]:
            arrays = dict(part)
            if is_smooth:
                arrays["theorem_2_4_bound"] = flows.lazy.theorem_2_4_bound(
                    arrays["ts"], alpha, constants
                )
            extra["theorem_2_4_bound_held"] = (
                bound_held(
                    arrays["residual"],
                    arrays["theorem_2_4_bound"],
                    residual_floor(s, arrays["residual"]),
                )
                if is_smooth
                else None
            )
            for key, value in arrays.items():
                series.setdefault(key, []).append(value)
        run = {key: rec.get(key, extra.get(key)) for key in RUN_KEYS}
        run.update(extra)
        run.update({k: v for k, v in rec.items() if k not in run})
        runs.append(mark_unresolved(run) if not rec["failed"] else run)
    results = {
        "experiment": "lazy",
        "config": config,
        "versions": versions(),
        "runs": runs,
        "fits": {
            **_fits(runs, heldout=config["n_test"] > 0),
            **_pl_fits(runs, constants.lambda_min),
        },
        "theory": _theory(constants, s, t1),
        "sweep": sweep,
        "complete": True,
    }
    write_json(os.path.join(folder, "results.json"), results)
    out = {"alphas": np.array([r["alpha"] for r in runs if not r["failed"]])}
    for key, stack in series.items():
        out[key] = stack[0] if key == "ts" else np.stack(stack)
    write_npz(os.path.join(folder, "trajectories.npz"), **out)
