"""The printed summary of a lazy run, read from its results.json.

By default it prints the verdicts a reader needs: each log-log slope over α beside the theorem
that predicts it, whether each bound held at the α where it applies ("not applicable below
α = …" where the theorem's conditions fail), and the late rate against λ_min and Theorem 2.4's
rate. The full per-α table and the detailed lines go to `summary.txt` in the run folder, and
are printed with `--verbose`.
"""

import json
import os

from .._atomic import atomic_write
from ._results import MIN_FIT_ALPHAS

#: The file of the run folder that holds the full table (`--verbose` prints it too).
SUMMARY_FILE = "summary.txt"

#: |measured − predicted| slope below which the printed verdict is "agrees": the default run's
#: four slopes are within 0.0034 of theirs, and a broken lazy regime moves them by 0.3 or more.
SLOPE_AGREES = 0.05


def _fmt(x, spec=".3e"):
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    return format(x, spec)


# (header, key in a run record, format) of the full table.
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
    ("Thm2.4 cond", "theorem_2_4_conditions_hold", ""),
    ("bound held", "theorem_2_4_bound_held", ""),
    ("steps", "steps", "d"),
    ("kink evts", "events", "d"),
    ("time s", "wall_s", ".1f"),
)

# (key of fits / expected_slopes, what is measured)
SLOPES = (
    ("weight_gap", "weight gap sup_t‖w_α − w̄_α‖"),
    ("output_gap", "output gap sup_t‖αh(w_α) − αh̄(w̄_α)‖"),
    ("heldout_output_gap", "output gap on held-out inputs"),
    ("distance", "distance sup_t‖w_α − w0‖"),
)


def print_summary(folder: str, figures, verbose: bool = False) -> None:
    """Print the verdicts of results.json (the full table too with `verbose`), write the full
    table to `SUMMARY_FILE` in `folder`, and name what the folder holds."""

    with open(os.path.join(folder, "results.json")) as f:
        res = json.load(f)
    full = full_table(res)
    atomic_write(os.path.join(folder, SUMMARY_FILE), "w", lambda f: f.write(full + "\n"))
    if verbose:
        print(full)
    else:
        print(verdicts(res))
    drawn = ", ".join(os.path.basename(p) for p in figures) or "no figures (no α finished)"
    more = "" if verbose else " (the full per-α table; --verbose prints it)"
    print(f"wrote {folder}/: results.json, trajectories.npz, {SUMMARY_FILE}{more}, {drawn}")


def full_table(res) -> str:
    """The per-α table of every recorded number, then the fits beside the theory."""
    th, fits = res["theory"], res["fits"]
    lines = [" ".join(f"{h:>11}" for h, _, _ in COLUMNS)]
    for r in res["runs"]:
        if r["failed"]:
            lines.append(f"{r['alpha']:>11.3g} failed: {r['reason']}")
        else:
            lines.append(" ".join(f"{_fmt(r.get(k), spec):>11}" for _, k, spec in COLUMNS))
    lines += _unresolved(res)
    lines.append(f"data: {_data(res)}")
    lines.append(_slopes(fits, th))
    lines.append(
        f"lambda_min(Sigma) = {th['lambda_min']:.4g}, lambda_max = {th['lambda_max']:.4g}"
        + (
            f", Thm 2.4 rate m*sigma_min^2/4 = {th['theorem_2_4_rate']:.4g}"
            if th.get("theory_applies", True)
            else ""
        )
    )
    lines.append(_late_rate(res, fits, th))
    lines.append(_pl(res, fits, th))
    lines.append(_constants(th))
    return "\n".join(lines)


def _unresolved(res) -> list[str]:
    """One line per finished α whose gaps are below float64's resolution (not measured)."""
    return [
        f"not measured: {r['unresolved']['reason']}" for r in res["runs"] if r.get("unresolved")
    ]


def _data(res) -> str:
    return res["config"].get("data_description", res["config"]["data"])


def verdicts(res) -> str:
    """What a reader needs from the run: each slope against its theorem, each bound where it
    applies, the late rate; failed α by name."""
    th, fits = res["theory"], res["fits"]
    runs = [r for r in res["runs"] if not r["failed"]]
    lines = [f"data: {_data(res)}"]
    for r in res["runs"]:
        if r["failed"]:
            lines.append(f"α = {r['alpha']:.3g} failed: {r['reason']}")
    lines += _unresolved(res)
    runs = [r for r in runs if not r.get("unresolved")]  # no gap to judge there
    if not runs:
        lines.append("no α finished: nothing to judge")
        return "\n".join(lines)
    lines.append(
        f"verdicts over {len(runs)} finished α ({_alphas(runs)}), Chizat, Oyallon & Bach 2019:"
    )
    lines += _slope_verdicts(fits, th)
    lines.append(_theorem_2_2_verdict(runs))
    lines.append(_theorem_2_4_verdict(runs, th))
    lines.append("  " + _late_rate(res, fits, th))
    return "\n".join(lines)


def _alphas(runs) -> str:
    a = [r["alpha"] for r in runs]
    return f"α = {a[0]:.3g} … {a[-1]:.3g}" if len(a) > 2 else ", ".join(f"{x:.3g}" for x in a)


def _slope_verdicts(fits, th) -> list[str]:
    if not fits.get("n_alphas_fitted"):
        return [f"  log-log slopes over α: not fitted ({fits['fit_note']})"]
    exp = th.get("expected_slopes")
    out = []
    for key, what in SLOPES:
        slope = fits.get(key + "_slope")
        if slope is None:
            continue
        if not exp:
            verdict = "no theorem predicts it (the activation is not smooth)"
        else:
            off = abs(slope - exp[key])
            word = "agrees" if off <= SLOPE_AGREES else f"DIFFERS by {off:.2g}"
            verdict = f"predicted {exp[key]:+d}: {word}"
        out.append(f"  slope over α of the {what:37s} {slope:+.4f}, {verdict}")
    return out


def _theorem_2_2_verdict(runs) -> str:
    """Thm 2.2's bound on the distance travelled holds for every α, no condition: count it."""
    pairs = [
        (r["sup_distance_from_init"], r["theorem_2_2_bound"])
        for r in runs
        if r.get("sup_distance_from_init") is not None and r.get("theorem_2_2_bound") is not None
    ]
    if not pairs:
        return "  Thm 2.2 bound sup_t‖w_α − w0‖ ≤ √(T·R(αh(w0)))/α: not measured"
    held = sum(d <= b * (1 + 1e-9) for d, b in pairs)
    worst = max(d / b for d, b in pairs if b > 0) if any(b > 0 for _, b in pairs) else 0.0
    word = "held" if held == len(pairs) else "BROKEN"
    return (
        f"  Thm 2.2 bound sup_t‖w_α − w0‖ ≤ √(T·R(αh(w0)))/α: {word} at {held} of "
        f"{len(pairs)} α (largest ratio to the bound {worst:.2g})"
    )


def _theorem_2_4_verdict(runs, th) -> str:
    """Thm 2.4's bound on the residual, judged where its conditions hold; below α_min the
    theorem says nothing, so the count there is information, not a verdict."""
    head = "  Thm 2.4 bound on ‖αh(w_α(t)) − y*‖ (all t)"
    if not th.get("theory_applies", True):
        return f"{head}: not applicable ({th['theory_note']})"
    if th.get("alpha_min") is None:
        why = (th.get("unavailable") or {}).get("alpha_min") or "its constants are unknown"
        return f"{head}: not applicable, its threshold α_min is unavailable ({why})"
    a_min = th["alpha_min"]
    inside = [r for r in runs if r.get("theorem_2_4_conditions_hold")]
    outside = [r for r in runs if not r.get("theorem_2_4_conditions_hold")]
    parts = []
    if inside:
        held = sum(bool(r.get("theorem_2_4_bound_held")) for r in inside)
        word = "held" if held == len(inside) else "BROKEN"
        parts.append(f"{word} at {held} of {len(inside)} α where it applies (α > {a_min:.3g})")
    else:
        parts.append(f"applies only above α_min = {a_min:.3g}: no α of this run is there")
    if outside:
        held = sum(bool(r.get("theorem_2_4_bound_held")) for r in outside)
        parts.append(
            f"not applicable below α = {a_min:.3g} (held there anyway at {held} of {len(outside)})"
        )
    return f"{head}:\n    " + ";\n    ".join(parts)


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
