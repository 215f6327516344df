"""Figures of `gradflows run ntk`, drawn from the run folder's arrays.npz and results.json."""

import json
import os

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, ScalarFormatter

import flows

from .. import _plotting as P
from ._design import key
from ._report import REFERENCE, settle_depth

FIGURES = ("error_vs_width", "condition_vs_depth")
COLORS = {"constant": "tab:blue", "quadratic": "tab:orange"}
LABELS = {"constant": "m_k = m", "quadratic": "m_k = k²·m"}
SETTLE = "settle"  # gid of the markers where cond(K∞) settles (measured, not theory)


def _error_figure(arrays, config) -> Figure:
    datasets, acts, schemes = config["datasets"], list(config["activations"]), config["schemes"]
    widths = arrays["widths"]
    fig = P.new_figure(4.2 * len(acts), 3.4 * len(datasets) + 0.6)
    axes = fig.subplots(len(datasets), len(acts), squeeze=False, sharex=True)
    for r, data in enumerate(datasets):
        for c, act in enumerate(acts):
            ax = axes[r, c]
            means, fits, slopes = [], [], []
            for scheme in schemes:
                err = arrays[key("errors", data, act, scheme)]
                color = COLORS.get(scheme, "k")
                ax.plot(np.repeat(widths, err.shape[1]), err.ravel(), ".", color=color,
                        alpha=0.25, markersize=3, label=f"{LABELS[scheme]}, each seed")  # fmt: skip
                ax.plot(widths, err.mean(axis=1), "o", color=color,
                        label=f"{LABELS[scheme]}, mean over seeds")  # fmt: skip
                slope = flows.lazy.loglog_slope(widths, err.mean(axis=1))
                fits.append(P.fit_line(ax, widths, err.mean(axis=1), slope, color=color,
                                       label=f"{LABELS[scheme]}, fitted power law"))  # fmt: skip
                slopes.append(f"{slope:+.2f} ({LABELS[scheme]})")
                means.append(err.mean(axis=1))
            # the claim's slope, offset a decade above every mean: compared by slope, not fitted
            P.reference_slope(ax, widths, means, -0.5, side="above", fits=tuple(fits),
                              label=f"slope −1/2: {REFERENCE} (not fitted)")  # fmt: skip
            P.log_axis(ax, "y")
            ax.set_xscale("log")
            ax.set_xticks(widths, [str(m) for m in widths])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("base width m (dimensionless)")
            ax.set_ylabel("‖K_m − K∞‖₂ / ‖K∞‖₂ (relative)")
            a, b = config["activations"][act]
            ax.set_title(f"{data}, {act} (a={a:g}, b={b:g})\nfitted: {', '.join(slopes)}",
                         fontsize=10)  # fmt: skip
    handles, labels = axes[0, 0].get_legend_handles_labels()
    P.figure_legend(fig, handles, labels, ncol=4)
    fig.suptitle(
        f"Empirical NTK against its infinite-width limit, depth {config['depth']}: the error "
        f"falls like m^(−1/2) in the base width ({REFERENCE}); fitted slopes in each title",
        fontsize=11,
    )
    return fig


def _condition_figure(arrays, config) -> Figure:
    datasets = config["datasets"]
    depths = arrays["depths"]
    fig = P.new_figure(5 * len(datasets), 4.6)
    axes = fig.subplots(1, len(datasets), squeeze=False)[0]
    holds = True
    for ax, data in zip(axes, datasets):
        settles = []  # (Δ_φ, act, depth) where cond(K∞) settles, for the title
        for act, (a, b) in config["activations"].items():
            lo, hi = arrays[key("lambda", data, act)]
            cond = np.where(lo > 0, hi / np.where(lo > 0, lo, 1.0), np.nan)  # gaps where singular
            delta = b * b / (a * a + b * b)
            (line,) = ax.plot(depths, cond, "o-", markersize=3, label=f"{act} (Δ_φ = {delta:.2f})")
            settled = settle_depth(depths, cond) if np.isfinite(cond).all() else None
            if settled is not None:  # where it settles: within 10% of its deepest value
                i = int(np.flatnonzero(depths == settled)[0])
                ax.plot(settled, cond[i], "s", color=line.get_color(), markersize=9,
                        markerfacecolor="none", gid=SETTLE)  # fmt: skip
                ax.axvline(settled, color=line.get_color(), lw=0.9, ls=":", zorder=0)
                settles.append((delta, act, int(settled)))
        ax.plot([], [], "ks", markerfacecolor="none",
                label=f"settles: cond(K∞) stays within 10% of its value at depth {depths[-1]} "
                "from this depth on")  # fmt: skip
        ax.set_xscale("log")
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.set_xlabel("depth L (hidden layers)")
        ax.set_ylabel("cond(K∞) = λ_max / λ_min (dimensionless)")
        order = sorted(settles, reverse=True)  # largest Δ_φ first: the claim's order
        holds &= all(a[2] <= b[2] for a, b in zip(order, order[1:]))
        ax.set_title(
            f"{data}: cond(K∞) settles at depth\n"
            + ", ".join(f"{d} ({act}, Δ_φ = {delta:.2g})" for delta, act, d in order),
            fontsize=9,
        )
    handles, labels = axes[0].get_legend_handles_labels()
    P.figure_legend(fig, handles, labels, ncol=len(labels))
    verdict = "the larger Δ_φ, the shallower" if holds else "NOT in the order of Δ_φ:"
    fig.suptitle(
        f"Infinite-width NTK at the edge of chaos: {verdict} the depth at which cond(K∞) "
        "settles\n(Terjék & González-Sánchez 2025; squares and dotted lines: where each "
        "curve settles)",
        fontsize=10,
    )
    return fig


def plot(folder: str) -> list[str]:
    """Draw the figures from `arrays.npz` and `config.json` in the run folder, in the run's
    `--format`; returns the files written."""
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    with np.load(os.path.join(folder, "arrays.npz"), allow_pickle=False) as saved:
        arrays = {k: saved[k] for k in saved.files}
    written = []
    for name, draw in zip(FIGURES, (_error_figure, _condition_figure)):
        path = os.path.join(folder, f"{name}.{config['format']}")
        P.save_figure(draw(arrays, config), path)
        written.append(path)
    return written
