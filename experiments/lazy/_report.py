"""The printed summary of a lazy run, read from its results.json."""

import json
import os

from ._results import MIN_FIT_ALPHAS


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
    ("inf mu", "pl_inf", ".4g"),
    ("Thm2.4 ok", "theorem_2_4_conditions_hold", ""),
    ("bound held", "theorem_2_4_bound_held", ""),
    ("steps", "steps", "d"),
    ("kink evts", "events", "d"),
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
    for r in res["runs"]:
        if r.get("unresolved"):
            print(f"not measured: {r['unresolved']['reason']}")
    print(f"data: {res['config'].get('data_description', res['config']['data'])}")
    print(_slopes(fits, th))
    print(
        f"lambda_min(Sigma) = {th['lambda_min']:.4g}, lambda_max = {th['lambda_max']:.4g}"
        + (
            f", Thm 2.4 rate m*sigma_min^2/4 = {th['theorem_2_4_rate']:.4g}"
            if th.get("theory_applies", True)
            else ""
        )
    )
    print(_late_rate(res, fits, th))
    print(_pl(res, fits, th))
    print(_constants(th))
    drawn = ", ".join(os.path.basename(p) for p in figures) or "no figures (no α finished)"
    print(f"wrote {folder}/: results.json, trajectories.npz, {drawn}")


def _slopes(fits, th) -> str:
    if not fits.get("n_alphas_fitted"):
        return f"log-log slopes over alpha: not fitted ({fits['fit_note']})"
    exp = th["expected_slopes"]
    head = f"log-log slopes over alpha ({fits['n_alphas_fitted']} finished α; measured"
    lines = [head + (" / expected):" if exp else "; no theory for this activation):")]
    for key, name in (
        ("weight_gap", "weight gap"),
        ("output_gap", "output gap"),
        ("heldout_output_gap", "held-out gap"),
        ("distance", "distance"),
    ):
        expected = f" / {exp[key]:+d}" if exp else ""
        lines.append(f"  {name:13s} {_fmt(fits[key + '_slope'], '+.3f')}{expected}")
    return "\n".join(lines)


def _late_rate(res, fits, th) -> str:
    med = fits.get("late_rate_median")
    if med is None:
        notes = {r["rate_note"] for r in res["runs"] if not r["failed"] and r.get("rate_note")}
        why = next(iter(notes), "no finished α >= 10")
        return f"late rate: none over α >= 10 ({why})"
    line = f"late rate (median over {len(fits['late_rate_alphas'])} finished α >= 10) = {med:.4g}"
    if th["lambda_min"] > 0:
        line += f" = {med / th['lambda_min']:.3f} lambda_min"
    if th.get("theory_applies", True) and th["theorem_2_4_rate"] > 0:
        line += f" = {med / th['theorem_2_4_rate']:.3f} x the theorem's rate"
    return line


def _pl(res, fits, th) -> str:
    """inf_t μ(t) beside λ_min(Σ), and the slopes of their relative gap over α."""
    runs = [r for r in res["runs"] if not r["failed"]]
    if not runs:  # "undefined ... (F_α at round-off)" said a reason that was not the one
        return "PL: inf_t mu(t): none (no finished α)"
    if not any(r.get("pl_inf") is not None for r in runs):
        return "PL: inf_t mu(t) undefined for every α (F_α at round-off)"
    lines = [
        f"PL: inf_t mu(t) = inf ‖∇F_α‖²/(2F_α) vs lambda_min(Sigma) = {th['lambda_min']:.4g}, "
        "relative gap |lambda_min − inf mu|/lambda_min (mu = r'Σ(w)r/‖r‖², no power of α):",
        "  "
        + ", ".join(f"α={r['alpha']:.3g}: {_fmt(r.get('pl_relative_gap'), '.3g')}" for r in runs),
    ]
    if fits.get("pl_relative_gap_slope") is None:
        lines.append(f"  slopes over α: not fitted (fewer than {MIN_FIT_ALPHAS} α)")
    else:
        lines.append(
            f"  log-log slope over α: {fits['pl_relative_gap_slope']:+.3f}; of the nonlinear "
            f"part |inf mu − inf mu_lin|/lambda_min: {_fmt(fits['pl_nonlinear_gap_slope'], '+.3f')}"
        )
    lines.append(
        "  the linearised flow's own gap at this horizon (the α → ∞ limit): "
        f"{_fmt(fits.get('pl_relative_gap_linearized'), '.3g')}"
    )
    return "\n".join(lines)


def _constants(th) -> str:
    if not th.get("theory_applies", True):
        return f"Thm 2.4: not applicable ({th['theory_note']})"
    why = th.get("unavailable") or {}
    if th.get("C0") is None:
        return f"Thm 2.4: C0 unavailable ({why.get('C0') or th.get('lip_method')})"
    if th.get("alpha_min") is None:
        return f"Thm 2.4: C0 = {th['C0']:.3g}; alpha_min unavailable ({why.get('alpha_min')})"
    return (
        f"Thm 2.4: Lip(Dh) ~ {th['lip_jacobian']:.4g} (lower estimate), C0 = {th['C0']:.3g},"
        f" conditions hold for alpha > {th['alpha_min']:.3g}"
    )
