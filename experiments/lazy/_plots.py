"""Figures of `gradflows run lazy`, drawn from what the run folder holds.

`plot(folder)` reads `results.json` and `trajectories.npz` and writes five PNGs (the PL
figure from `_plots_pl`); it computes nothing new, so a figure can be redrawn without running
the flows again. Each `draw_*` function returns the `Figure` (tests check it with
`experiments._plotting.figure_problems`).
"""

import os

import numpy as np
from matplotlib.figure import Figure

from .. import _plotting as P
from ._plot_parts import finished, load, slope_label, subtitle
from ._plots_pl import draw_pl

NAMES = {
    "weight_gap": ("sup_t ‖w_α − w̄_α‖ (parameters)", "o", "C0"),
    "output_gap": ("sup_t ‖αh(w_α) − αh̄(w̄_α)‖, training inputs", "s", "C1"),
    "heldout_output_gap": ("sup_t ‖αh(w_α) − αh̄(w̄_α)‖, held-out inputs", "^", "C2"),
}
# Where each expected slope comes from (Chizat, Oyallon & Bach 2019).
SOURCES = {
    ("weight_gap", -2): "‖w_α − w̄_α‖ = O(α⁻²): Thm 2.2",
    ("output_gap", -1): "training output gap O(α⁻¹): Thm 2.2",
    ("output_gap", -2): "training output gap α⁻²: Thm 2.2's O(α⁻¹), even in 1/α when doubled",
    ("heldout_output_gap", -1): "held-out output gap O(α⁻¹): Prop. A.1 up to log α",
    (
        "heldout_output_gap",
        -2,
    ): "held-out output gap α⁻²: Prop. A.1's rate, even in 1/α when doubled",
}
BOUND_2_4 = "Thm 2.4 bound ½(√κ‖αh(w0) − y*‖e^{−mσ_min²t/4})², drawn where its conditions hold"
FLOOR = 10  # round-off floor of the relative loss gap, in units of ε‖y*‖/‖r̄‖ (see _roundoff)
OFFSET = 1.0  # decades between a reference slope and the data it checks


def draw_gaps(res: dict) -> Figure:
    """The three sup gaps against α, fitted slopes, and theory's slopes drawn at least one
    decade below every series and fit (Thm 2.2, Prop. A.1)."""
    # no expected slopes where the theorems do not apply (non-smooth activations)
    fits, expected = res["fits"], res["theory"]["expected_slopes"] or {}
    fig = P.new_figure(10.5, 5.4)
    ax = fig.subplots()
    by_slope, fitted = {}, []
    for key, (label, marker, color) in NAMES.items():
        alphas, sup = finished(res, "sup_" + key)
        if not len(alphas):
            continue
        ax.plot(alphas, sup, marker, color=color, ms=6, label=label)
        line = P.fit_line(
            ax,
            alphas,
            sup,
            fits[key + "_slope"],
            label=slope_label(fits[key + "_slope"]),
            color=color,
        )
        fitted.append(line)
        if expected.get(key) is not None:
            by_slope.setdefault(expected[key], []).append((key, alphas, sup))
    for slope, series in sorted(by_slope.items()):
        if not any(np.any(s > 0) for _, _, s in series):  # gaps 0 at round-off: no place
            continue
        sources = "; ".join(SOURCES.get((k, slope), k) for k, _, _ in series)
        P.reference_slope(
            ax,
            np.concatenate([a for _, a, _ in series]),
            [np.interp(np.concatenate([a for _, a, _ in series]), a, s) for _, a, s in series],
            slope,
            label=f"reference slope {slope:+d}, placed ≥ {OFFSET:g} decade below (not fitted):\n"
            + sources.replace("; ", ";\n"),
            offset=OFFSET,
            fits=fitted,
        )
    unresolved = [r["alpha"] for r in res["runs"] if r.get("unresolved")]
    if unresolved:  # an empty figure is never written without a word
        ax.text(
            0.02, 0.02,
            "not drawn (gaps below float64's resolution 1e-292, round-off): α = "
            + ", ".join(f"{a:.3g}" for a in unresolved),
            transform=ax.transAxes, fontsize=8, va="bottom", color="C3",
        )  # fmt: skip
    P.log_axis(ax)
    ax.set_xlabel(P.ALPHA_LABEL)
    ax.set_ylabel("sup over flow time t ≤ t1 of the gap\n(parameter norm / output norm)")
    fig.suptitle(
        "Lazy training: gaps to the linearised flow against the scale α "
        f"(Chizat et al. 2019, Thm 2.2, Prop. A.1)\n{subtitle(res)}",
        fontsize=9,
    )
    ax.grid(True, which="major", alpha=0.3)
    P.legend_outside(ax)
    return fig


def _picks(alphas, n):
    return sorted(set(np.round(np.linspace(0, len(alphas) - 1, n)).astype(int)))


def _roundoff(arr, i, y_norm):
    """Round-off floor of the relative loss gap, FLOOR·ε‖y*‖/‖r̄(t)‖ with r̄ = αh̄ − y*.

    R = ½‖r‖² is computed from αh ≈ y* late in the flow, so r, R and R̄ carry a relative
    round-off of order ε‖y*‖/‖r‖, and |R − R̄|/R̄ cannot resolve less. Measured (default run,
    α = 10⁶, where the true gap is ~10⁻⁴ of that at α = 10⁴): the relative gap is 0.74 (median
    over t) to 3.2 (max) times ε‖y*‖/‖r̄‖; at α = 10⁵ it is 40 times (median), above the floor."""
    r = np.asarray(arr["residual_linearized"][i], float)
    return FLOOR * P.EPS * y_norm / np.where(r > 0, r, np.nan)


def _theorem_2_4_note(res, run) -> str | None:
    """Why Thm 2.4's bound is not drawn for this α (None where it is)."""
    th = res["theory"]
    if not th.get("theory_applies", True):
        return "Thm 2.4 does not apply (Dh not Lipschitz)"
    if run.get("theorem_2_4_conditions_hold"):
        return None
    if th["alpha_min"] is None:
        return "Thm 2.4: C0 unknown, no bound"
    return f"Thm 2.4's bound needs α > {th['alpha_min']:.3g}"


def draw_loss(res: dict, arr: dict, n_curves: int = 4) -> Figure:
    """Left: the training loss of the nonlinear flow for a few α against log flow time, the
    linearised flow's (one curve where every α has the same, as with h(w0) = 0), and Thm 2.4's
    bound for the α where its conditions hold. Right: the relative loss gap |R − R̄|/R̄ of the
    same α, which falls with α, above the round-off floor of the largest α (shaded)."""
    ts, alphas, th = arr["ts"], arr["alphas"], res["theory"]
    runs = {r["alpha"]: r for r in res["runs"] if not r["failed"]}
    picks = _picks(alphas, n_curves)
    colours = P.shades("viridis", len(picks))
    fig = P.new_figure(11.5, 6.0)
    left, right = fig.subplots(1, 2, sharex=True)
    late = ts > 0
    same = np.allclose(arr["loss_linearized"][picks], arr["loss_linearized"][picks[-1]], rtol=1e-9)
    notes = []
    for i, colour in zip(picks, colours):
        label = f"α = {alphas[i]:.3g}"
        left.plot(ts[late], arr["loss"][i][late], "-", color=colour, lw=2.6, alpha=0.75)
        left.lines[-1].set_label(f"R(αh(w_α(t))), {label}")
        if not same:
            left.plot(ts[late], arr["loss_linearized"][i][late], "--", color=colour, lw=1.0)
            left.lines[-1].set_label(f"R̄, linearised flow, {label}")
        run = runs.get(float(alphas[i]), {})
        note = _theorem_2_4_note(res, run)
        if note is None:
            bound = 0.5 * arr["theorem_2_4_bound"][i][late] ** 2
            P.bound_line(left, ts[late], bound, label=f"{BOUND_2_4}, {label}", color=colour)
        elif note not in notes:
            notes.append(note)
        rel = np.abs(arr["loss"][i] - arr["loss_linearized"][i]) / arr["loss_linearized"][i]
        keep = late & (rel > 0) & np.isfinite(rel)
        right.plot(ts[keep], rel[keep], "-", color=colour, lw=1.6, label=label)
    if same:
        left.plot(
            ts[late],
            arr["loss_linearized"][picks[-1]][late],
            "--",
            color="k",
            lw=1.2,
            label="R̄ = R(αh̄(w̄_α(t))), linearised flow (the same for every α)",
        )
    for ax in (left, right):
        P.log_axis(ax)
        ax.grid(True, which="major", alpha=0.3)
        ax.set_xlabel(P.TIME_LABEL)
    right.autoscale_view()
    P.roundoff_floor(
        right,
        ts[late],
        _roundoff(arr, picks[-1], th["y_star_norm"])[late],
        label=f"round-off floor of |R − R̄|/R̄ at α = {alphas[picks[-1]]:.3g}: "
        f"{FLOOR}ε‖y*‖/‖αh̄ − y*‖",
    )
    left.set_ylabel("training loss R = ½‖αh − y*‖²")
    right.set_ylabel("relative loss gap |R − R̄| / R̄")
    left.set_title(
        "Training loss; " + ("; ".join(notes) if notes else "Thm 2.4's bound dotted"), fontsize=9
    )
    right.set_title(
        "The nonlinear flow's loss approaches the linearised one as α grows", fontsize=9
    )
    P.legend_outside(left, where="below")
    P.legend_outside(right, where="below", ncol=2)
    rate = th.get("theorem_2_4_rate")
    fig.suptitle(
        f"Training loss, nonlinear vs linearised flow (Chizat et al. 2019); λ_min(Σ) = "
        f"{th['lambda_min']:.3g}"
        + (f", Thm 2.4's loss rate mσ_min²/2 = {2 * rate:.3g}" if rate is not None else "")
        + f"\n{subtitle(res)}",
        fontsize=9,
    )
    return fig


def draw_distance(res: dict) -> Figure:
    """sup_t ‖w_α − w0‖ against α with its fit and Thm 2.2's bound."""
    alphas, dist = finished(res, "sup_distance_from_init")
    _, bound = finished(res, "theorem_2_2_bound")
    slope = res["fits"]["distance_slope"]
    expected = (res["theory"]["expected_slopes"] or {}).get("distance")
    fig = P.new_figure(9.5, 5.0)
    ax = fig.subplots()
    ax.plot(alphas, dist, "o", color="C0", label="measured sup_t ‖w_α(t) − w0‖")
    P.fit_line(ax, alphas, dist, slope, label=slope_label(slope, expected), color="C0")
    if len(bound) == len(alphas) and res["theory"].get("theory_applies", True):
        P.bound_line(ax, alphas, bound, label="Thm 2.2 bound √(t1·R(αh(w0)))/α", ls="--")
    P.log_axis(ax)
    ax.set_xlabel(P.ALPHA_LABEL)
    ax.set_ylabel("sup over flow time t ≤ t1 of ‖w_α(t) − w0‖\n(parameter norm)")
    fig.suptitle(
        "Distance travelled from the initialisation (Chizat et al. 2019, Thm 2.2)\n"
        + subtitle(res),
        fontsize=9,
    )
    ax.grid(True, which="major", alpha=0.3)
    P.legend_outside(ax)
    return fig


def draw_heldout(res: dict) -> Figure | None:
    """The held-out output gap against α, overlaid on the training one, with the shape
    (log α)/α of Prop. A.1's bound drawn one decade above the data."""
    alphas, gap = finished(res, "sup_heldout_output_gap")
    if not len(alphas):
        return None
    a_tr, gap_tr = finished(res, "sup_output_gap")
    slope = res["fits"]["heldout_output_gap_slope"]
    expected = (res["theory"]["expected_slopes"] or {}).get("heldout_output_gap")
    fig = P.new_figure(10.5, 5.0)
    ax = fig.subplots()
    ax.plot(alphas, gap, "^", color="C2", ms=7, label=NAMES["heldout_output_gap"][0])
    fit = P.fit_line(ax, alphas, gap, slope, label=slope_label(slope, expected), color="C2")
    ax.plot(a_tr, gap_tr, "s", color="C1", ms=4, alpha=0.7, label=NAMES["output_gap"][0])
    big = alphas > np.e  # (log α)/α decreases there
    if np.count_nonzero(big & (gap > 0)) >= 2 and res["theory"].get("theory_applies", True):
        # Prop. A.1 bounds the gap by C(log α/α)(M1 + ½C·M2·log α) with C not computed here:
        # the shape only, placed above every held-out point and the fit.
        P.reference_curve(
            ax,
            alphas[big],
            gap[big],
            lambda a: np.log(a) / a,
            label=f"shape (log α)/α of Prop. A.1's bound (constant not computed;\n"
            f"placed {OFFSET:g} decade above the data, not fitted)",
            side="above",
            offset=OFFSET,
            fits=(fit,),
        )
    P.log_axis(ax)
    ax.set_xlabel(P.ALPHA_LABEL)
    ax.set_ylabel("sup over flow time t ≤ t1 of the output gap\n(output norm)")
    fig.suptitle(
        f"Held-out inputs (Chizat et al. 2019, Prop. A.1), training inputs for comparison\n"
        f"{subtitle(res)}",
        fontsize=9,
    )
    ax.grid(True, which="major", alpha=0.3)
    P.legend_outside(ax)
    return fig


def plot(folder: str) -> list[str]:
    """Draw the figures of a lazy run folder; returns the paths written."""
    res, arr = load(folder)
    if "alphas" not in arr or len(arr["alphas"]) == 0:
        return []
    figures = {
        "gaps.png": draw_gaps(res),
        "loss.png": draw_loss(res, arr),
        "distance.png": draw_distance(res),
        "heldout.png": draw_heldout(res),
        "pl.png": draw_pl(res, arr),
    }
    return [
        P.save_figure(fig, os.path.join(folder, name))
        for name, fig in figures.items()
        if fig is not None
    ]
