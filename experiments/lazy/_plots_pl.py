"""The PL figure of `gradflows run lazy`, drawn from the parts of μ that the run saved.

μ(t) = ‖∇F_α‖²/(2F_α) = rᵀΣ(w)r/‖r‖² carries no power of α, so the curves of all α lie on
top of each other; what changes with α is their distance to the linearised flow's μ̄(t).
The left panel shows that distance against α, with its fitted slope; the right one μ(t) itself
for three α, with μ̄(t) and λ_min(Σ)."""

import numpy as np
from matplotlib.figure import Figure

import flows

from .. import _plotting as P
from ._plot_parts import finish_panel, finished, slope_label, subtitle

LAMBDA_MIN = "λ_min(Σ), Σ = Dh(w0)Dh(w0)ᵀ:\nμ ≥ λ_min(Σ(w(t))) (Liu, Zhu & Belkin 2022)"
SUP_GAP = "sup_t |μ(t) − μ̄(t)| / λ_min"
INF_GAP = "|inf_t μ − inf_t μ̄| / λ_min"


def _mu(arr, i, suffix, floor):
    """μ(t) at every save time, masked where it is undefined (F_α at or below `floor`, t = 0)."""
    mu = flows.observables.pl_constant(
        {"grad_norm_sq": arr["pl_grad_norm_sq" + suffix][i], "gap": arr["pl_gap" + suffix][i]},
        floor=floor,
    )
    return np.ma.masked_where(arr["ts"] <= 0, mu)


def sup_gaps(res: dict, arr: dict) -> tuple[np.ndarray, np.ndarray]:
    """`(alphas, sup_t |μ(t) − μ̄(t)|/λ_min)` over the finished α, at the save times where both
    quotients are defined; α where they never are, or where the gap is 0, are left out. None
    at all when λ_min(Σ) is not positive (a singular NTK Gram matrix: no relative gap)."""
    runs = {r["alpha"]: r for r in res["runs"] if not r["failed"]}
    lam = res["theory"]["lambda_min"]
    out = []
    if not lam > 0:
        return np.array([]), np.array([])
    for i, alpha in enumerate(arr["alphas"]):
        run = runs.get(float(alpha))
        if run is None:
            continue
        floor = run.get("pl_floor", 0.0)
        gap = np.abs(_mu(arr, i, "", floor) - _mu(arr, i, "_linearized", floor))
        if gap.count() and gap.max() > 0:
            out.append((float(alpha), float(gap.max()) / lam))
    return np.array([a for a, _ in out]), np.array([g for _, g in out])


def _slope(x, y):
    return float(np.polyfit(np.log(x), np.log(y), 1)[0]) if len(x) >= 3 else None


def _draw_gaps(ax, res, arr):
    alphas, sup = sup_gaps(res, arr)
    if not len(alphas):
        return False
    ax.plot(alphas, sup, "o", color="C0", label=SUP_GAP)
    slope = _slope(alphas, sup)
    P.fit_line(ax, alphas, sup, slope, label=slope_label(slope), color="C0")
    a_inf, inf_gap = finished(res, "pl_nonlinear_gap")
    keep = inf_gap > 0
    if keep.any():
        ax.plot(a_inf[keep], inf_gap[keep], "s", color="C1", ms=4, label=INF_GAP)
        fitted = res["fits"].get("pl_nonlinear_gap_slope")
        P.fit_line(
            ax, a_inf[keep], inf_gap[keep], fitted, label=slope_label(fitted), color="C1", ls="--"
        )
    finish_panel(
        ax,
        P.ALPHA_LABEL,
        "distance of μ to the linearised flow's μ̄\n(relative to λ_min)",
        "What changes with α",
    )
    return True


def _draw_curves(ax, res, arr):
    runs = {r["alpha"]: r for r in res["runs"] if not r["failed"]}
    alphas = arr["alphas"]
    picks = sorted({0, len(alphas) // 2, len(alphas) - 1})
    ts = arr["ts"]
    for i, colour in zip(picks, P.shades("viridis", len(picks))):
        mu = _mu(arr, i, "", runs.get(float(alphas[i]), {}).get("pl_floor", 0.0))
        ax.plot(
            ts[~mu.mask],
            mu.compressed(),
            "-",
            color=colour,
            lw=1.6,
            label=f"μ(t), α = {alphas[i]:.3g}",
        )
    last = len(alphas) - 1
    mu_bar = _mu(arr, last, "_linearized", runs.get(float(alphas[last]), {}).get("pl_floor", 0))
    ax.plot(
        ts[~mu_bar.mask],
        mu_bar.compressed(),
        "--",
        color="k",
        lw=1.2,
        label="μ̄(t), linearised flow",
    )
    late = ts[ts > 0]
    P.bound_line(
        ax, late[[0, -1]], [res["theory"]["lambda_min"]] * 2, label=LAMBDA_MIN, color="C3", ls="-."
    )
    finish_panel(
        ax,
        P.TIME_LABEL,
        "μ(t) = ‖∇F_α‖² / (2 F_α)  (1 / flow time)",
        "μ(t) itself: no power of α, the curves overlap",
    )


def draw_pl(res: dict, arr: dict) -> Figure | None:
    """Left: sup_t |μ − μ̄|/λ_min and |inf μ − inf μ̄|/λ_min against α, each with its fitted
    log-log slope. Right: μ(t) of three α, μ̄(t) and λ_min(Σ). None without PL data."""
    if "pl_grad_norm_sq" not in arr:
        return None
    fig = P.new_figure(11.5, 6.2)
    left, right = fig.subplots(1, 2)
    if not _draw_gaps(left, res, arr):
        return None
    _draw_curves(right, res, arr)
    fig.suptitle(
        "Polyak–Łojasiewicz quotient μ along the lazy flows: its distance to the linearised "
        f"flow's μ̄ falls with α\n{subtitle(res)}",
        fontsize=9,
    )
    return fig
