"""Figures of `gradflows run lazy`, drawn from what the run folder holds.

`plot(folder)` reads `results.json` and `trajectories.npz` and writes four PNGs; it computes
nothing new, so a figure can be redrawn without running the flows again.
"""

import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ALPHA_LABEL = "scale α (dimensionless)"
TIME_LABEL = "flow time t (time of w′ = −∇F_α(w))"
NAMES = {
    "weight_gap": ("sup_t ‖w_α − w̄_α‖", "o", "C0"),
    "output_gap": ("sup_t ‖αh(w_α) − αh̄(w̄_α)‖, training inputs", "s", "C1"),
    "heldout_output_gap": ("sup_t ‖αh(w_α) − αh̄(w̄_α)‖, held-out inputs", "^", "C2"),
}


def _load(folder):
    with open(os.path.join(folder, "results.json")) as f:
        res = json.load(f)
    with np.load(os.path.join(folder, "trajectories.npz")) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return res, arrays


def _ok(res, key):
    runs = [r for r in res["runs"] if not r["failed"] and r.get(key) is not None]
    return np.array([r["alpha"] for r in runs]), np.array([r[key] for r in runs])


def _fit_line(ax, x, y, slope, color, style, label=None):
    """Draw y = c·x^slope through the centroid of (log x, log y)."""
    keep = (x > 0) & (y > 0)
    if slope is None or np.count_nonzero(keep) < 1:
        return
    lx, ly = np.log(x[keep]), np.log(y[keep])
    c = np.mean(ly - slope * lx)
    grid = np.geomspace(x[keep].min(), x[keep].max(), 50)
    ax.plot(grid, np.exp(c) * grid**slope, style, color=color, lw=1.2, label=label)


def _subtitle(res):
    c = res["config"]
    return f"{c['model']}; {c['data_description']}; n = {c['n_train']}, t1 = {c['t1']:.3g}"


def _save(fig, folder, name):
    path = os.path.join(folder, name)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_gaps(res, folder):
    fits, expected = res["fits"], res["theory"]["expected_slopes"]
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    for key, (label, marker, color) in NAMES.items():
        alphas, sup = _ok(res, "sup_" + key)
        if not len(alphas):
            continue
        slope = fits[key + "_slope"]
        ax.loglog(alphas, sup, marker, color=color, ms=6, label=label)
        _fit_line(
            ax,
            alphas,
            sup,
            slope,
            color,
            "-",
            f"   fit: slope {slope:+.3f}" if slope is not None else None,
        )
        if expected:  # theory lines only where the theorems apply (smooth activations)
            _fit_line(
                ax, alphas, sup, expected[key], color, ":", f"   theory: slope {expected[key]:+d}"
            )
    ax.set_xlabel(ALPHA_LABEL)
    ax.set_ylabel("sup over t ≤ t1 of the gap (parameter / output norm)")
    ax.set_title(
        f"Lazy training: gaps to the linearised flow (Thm 2.2, 2.4)\n{_subtitle(res)}", fontsize=9
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    return _save(fig, folder, "gaps.png")


def plot_loss(res, arr, folder, n_curves=4):
    ts, alphas, th = arr["ts"], arr["alphas"], res["theory"]
    picks = sorted(set(np.round(np.linspace(0, len(alphas) - 1, n_curves)).astype(int)))
    fig, (ax, low) = plt.subplots(
        2, 1, figsize=(7.5, 7.4), sharex=True, gridspec_kw={"height_ratios": [2.2, 1]}
    )
    # With h(w0) = 0 the linearised flow in output space does not depend on α: draw it once.
    linear_same = all(
        np.allclose(arr["loss_linearized"][i], arr["loss_linearized"][picks[0]], rtol=1e-6, atol=0)
        for i in picks
    )
    for j, i in enumerate(picks):
        lw = 3.2 - 1.8 * j / max(len(picks) - 1, 1)  # wide to thin: coinciding curves stay visible
        ax.semilogy(
            ts,
            arr["loss"][i],
            "-",
            color=f"C{j}",
            lw=lw,
            label=f"α = {alphas[i]:.3g}: R(αh(w_α)), nonlinear",
        )
        if not linear_same:
            ax.semilogy(
                ts,
                arr["loss_linearized"][i],
                "--",
                color=f"C{j}",
                lw=1.2,
                label=f"α = {alphas[i]:.3g}: R(αh̄(w̄_α)), linearised",
            )
    if linear_same:
        ax.semilogy(
            ts,
            arr["loss_linearized"][picks[0]],
            "--",
            color="k",
            lw=1.2,
            label="R(αh̄(w̄_α)), linearised (the same for every α: h(w0) = 0)",
        )
    same_bound = all(
        np.allclose(arr["theorem_2_4_bound"][i], arr["theorem_2_4_bound"][picks[0]]) for i in picks
    )
    when = (
        "C0 unknown: Lip(Dh) not estimated"
        if th["alpha_min"] is None
        else f"its conditions hold for α > {th['alpha_min']:.3g}"
    )
    bounds = (picks[:1] if same_bound else picks) if th.get("theory_applies", True) else []
    for j, i in enumerate(bounds):  # the theorem's bound only where it applies
        ax.semilogy(
            ts,
            0.5 * arr["theorem_2_4_bound"][i] ** 2,
            ":",
            color="k" if same_bound else f"C{j}",
            lw=2,
            label="Thm 2.4 bound ½(√κ‖αh(w0) − y*‖·exp(−mσ_min²t/4))²"
            + ("" if same_bound else f", α = {alphas[i]:.3g}")
            + f"; {when}",
        )
    for j, i in enumerate(picks):
        rel = np.abs(arr["loss"][i] - arr["loss_linearized"][i]) / arr["loss_linearized"][i]
        keep = (rel > 0) & np.isfinite(rel)
        low.semilogy(ts[keep], rel[keep], "-", color=f"C{j}", lw=1.4, label=f"α = {alphas[i]:.3g}")
    low.set_ylabel("|R − R̄| / R̄\n(relative loss gap)")
    low.set_xlabel(TIME_LABEL)
    low.grid(True, alpha=0.3)
    low.legend(fontsize=7, ncol=len(picks), loc="lower right")
    values = np.concatenate([arr["loss"][picks].ravel(), arr["loss_linearized"][picks].ravel()])
    values = values[values > 0]
    ax.set_ylim(max(values.min() / 10, 1e-30), values.max() * 10)
    ax.set_xlim(0, ts[-1])
    ax.set_ylabel("training loss R = ½‖αh − y*‖² (log scale)")
    ax.set_title(
        "Training loss: nonlinear (solid), linearised (dashed), Thm 2.4 bound (dotted)\n"
        f"λ_min(Σ) = {th['lambda_min']:.3g}; the bound's loss rate is 2·mσ_min²/4 = "
        f"{2 * th['theorem_2_4_rate']:.3g}\n{_subtitle(res)}",
        fontsize=9,
    )
    ax.grid(True, alpha=0.3)
    fig.legend(
        *ax.get_legend_handles_labels(),
        fontsize=7.5,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=1,
    )
    return _save(fig, folder, "loss.png")


def plot_distance(res, folder):
    alphas, dist = _ok(res, "sup_distance_from_init")
    _, bound = _ok(res, "theorem_2_2_bound")
    slope = res["fits"]["distance_slope"]
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    ax.loglog(alphas, dist, "o", color="C0", label="measured sup_t ‖w_α(t) − w0‖")
    _fit_line(
        ax,
        alphas,
        dist,
        slope,
        "C0",
        "-",
        f"   fit: slope {slope:+.3f} (theory −1)" if slope is not None else None,
    )
    if len(bound) == len(alphas):
        ax.loglog(alphas, bound, "--", color="k", label="Thm 2.2 bound √(t1·R(αh(w0)))/α")
    ax.set_xlabel(ALPHA_LABEL)
    ax.set_ylabel("sup over t ≤ t1 of ‖w_α(t) − w0‖ (parameter norm)")
    ax.set_title(
        f"Distance travelled from the initialisation (Thm 2.2)\n{_subtitle(res)}", fontsize=9
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, folder, "distance.png")


def plot_heldout(res, folder):
    alphas, gap = _ok(res, "sup_heldout_output_gap")
    if not len(alphas):
        return None
    a_tr, gap_tr = _ok(res, "sup_output_gap")
    slope = res["fits"]["heldout_output_gap_slope"]
    expected = (res["theory"]["expected_slopes"] or {}).get("heldout_output_gap")
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    ax.loglog(alphas, gap, "^", color="C2", ms=7, label=NAMES["heldout_output_gap"][0])
    _fit_line(
        ax,
        alphas,
        gap,
        slope,
        "C2",
        "-",
        None
        if slope is None
        else f"   fit: slope {slope:+.3f}" + (f" (expected {expected:+d})" if expected else ""),
    )
    ax.loglog(a_tr, gap_tr, "s", color="C1", ms=4, alpha=0.6, label=NAMES["output_gap"][0])
    big = alphas > np.e
    if np.count_nonzero(big) >= 1:
        # Prop. A.1 bounds the gap by C(log α/α)(M1 + ½C·M2·log α) with C not computed here:
        # show the leading shape (log α)/α through the first measured point with log α > 1.
        a0, g0 = alphas[big][0], gap[big][0]
        grid = np.geomspace(a0, alphas.max(), 50)
        ax.loglog(
            grid,
            g0 * (np.log(grid) / grid) / (np.log(a0) / a0),
            ":",
            color="k",
            label="Prop. A.1 bound's shape (log α)/α (constant not computed)",
        )
    ax.set_xlabel(ALPHA_LABEL)
    ax.set_ylabel("sup over t ≤ t1 of the output gap (output norm)")
    ax.set_title(f"Held-out inputs (Prop. A.1)\n{_subtitle(res)}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    return _save(fig, folder, "heldout.png")


def plot(folder: str) -> list[str]:
    """Draw the four figures of a lazy run folder; returns the paths written."""
    res, arr = _load(folder)
    if "alphas" not in arr or len(arr["alphas"]) == 0:
        return []
    paths = [
        plot_gaps(res, folder),
        plot_loss(res, arr, folder),
        plot_distance(res, folder),
        plot_heldout(res, folder),
    ]
    return [p for p in paths if p is not None]
