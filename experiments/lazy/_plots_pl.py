"""The PL figure of `gradflows run lazy`: μ(t) = ‖∇F_α‖²/(2F_α) along each α's flow, with
λ_min(Σ) as a reference, drawn from the parts of μ that the run saved."""

import numpy as np
from matplotlib.figure import Figure

import flows

from .. import _plotting as P
from ._plot_parts import subtitle

LAMBDA_MIN = (
    "λ_min(Σ), Σ = Dh(w0)Dh(w0)ᵀ:\nμ ≥ λ_min(Σ(w(t))) → λ_min(Σ) as α → ∞\n(Liu, Zhu & Belkin 2022)"
)


def _mu(arr, i, suffix, floor):
    """(t, μ(t)) at the save times t > 0 where μ is defined (F_α above the run's floor)."""
    mu = flows.observables.pl_constant(
        {"grad_norm_sq": arr["pl_grad_norm_sq" + suffix][i], "gap": arr["pl_gap" + suffix][i]},
        floor=floor,
    )
    keep = ~np.ma.getmaskarray(mu) & (arr["ts"] > 0)
    return arr["ts"][keep], np.asarray(mu.data)[keep]


def draw_pl(res: dict, arr: dict) -> Figure | None:
    """μ(t) of the nonlinear flow, one curve per finished α (dark: small α), the linearised
    flow's μ̄(t) (the same for every α, since h(w0) = 0), and λ_min(Σ) as a line."""
    if "pl_grad_norm_sq" not in arr:
        return None
    runs = {r["alpha"]: r for r in res["runs"] if not r["failed"]}
    alphas, th = arr["alphas"], res["theory"]
    fig = P.new_figure(10.5, 5.4)
    ax = fig.subplots()
    drawn = False
    for i, colour in zip(range(len(alphas)), P.shades("viridis", len(alphas))):
        run = runs.get(float(alphas[i]), {})
        t, mu = _mu(arr, i, "", run.get("pl_floor", 0.0))
        if len(t):
            ax.plot(t, mu, "-", color=colour, lw=1.4, label=f"μ(t), α = {alphas[i]:.3g}")
            drawn = True
    if not drawn:
        return None
    last = len(alphas) - 1
    t, mu_bar = _mu(arr, last, "_linearized", runs.get(float(alphas[last]), {}).get("pl_floor", 0))
    ax.plot(t, mu_bar, "--", color="k", lw=1.2, label="μ̄(t) of the linearised flow (any α)")
    t_all = arr["ts"][arr["ts"] > 0]
    P.bound_line(ax, t_all[[0, -1]], [th["lambda_min"]] * 2, label=LAMBDA_MIN, color="C3", ls="-.")
    P.log_axis(ax)
    ax.set_xlabel(P.TIME_LABEL)
    ax.set_ylabel("PL quotient μ(t) = ‖∇F_α(w(t))‖² / (2 F_α(w(t)))\n(1 / flow time)")
    ax.grid(True, which="major", alpha=0.3)
    P.legend_outside(ax)
    fig.suptitle(
        "Polyak–Łojasiewicz quotient along the lazy flows (F* = 0; μ = rᵀΣ(w)r/‖r‖², "
        f"no power of α)\n{subtitle(res)}",
        fontsize=9,
    )
    return fig
