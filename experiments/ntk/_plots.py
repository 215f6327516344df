"""Figures of `gradflows run ntk`, drawn from the run folder's arrays.npz and results.json."""

import json
import os

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from ._report import REFERENCE, key

FIGURES = ("error_vs_width", "condition_vs_depth")
COLORS = {"constant": "tab:blue", "quadratic": "tab:orange"}


def _error_figure(arrays, config) -> Figure:
    datasets, acts, schemes = config["datasets"], list(config["activations"]), config["schemes"]
    widths = arrays["widths"]
    fig = Figure(figsize=(4.2 * len(acts), 3.6 * len(datasets)), layout="constrained")
    axes = fig.subplots(len(datasets), len(acts), squeeze=False, sharex=True)
    for r, data in enumerate(datasets):
        for c, act in enumerate(acts):
            ax = axes[r, c]
            top = 0.0
            for scheme in schemes:
                err = arrays[key("errors", data, act, scheme)]
                color = COLORS.get(scheme, "k")
                ax.plot(np.repeat(widths, err.shape[1]), err.ravel(), ".", color=color,
                        alpha=0.25, markersize=3)  # fmt: skip
                label = "m_k = m" if scheme == "constant" else "m_k = k²·m"
                ax.plot(widths, err.mean(axis=1), "o-", color=color, label=f"{label} (mean)")
                top = max(top, err.mean(axis=1)[0])
            # the claim's slope, drawn through 2× the largest first mean: offset, not fitted
            ref = 2 * top * (widths / widths[0]) ** -0.5
            ax.plot(widths, ref, "k--", lw=1, label=f"m^(−1/2) ({REFERENCE})")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(widths, [str(m) for m in widths])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("base width m")
            ax.set_ylabel("‖K_m − K∞‖₂ / ‖K∞‖₂")
            a, b = config["activations"][act]
            ax.set_title(f"{data}, {act} (a={a:g}, b={b:g}), depth {config['depth']}")
            ax.legend(fontsize=7, loc="lower left")
    return fig


def _condition_figure(arrays, config) -> Figure:
    datasets = config["datasets"]
    depths = arrays["depths"]
    fig = Figure(figsize=(5 * len(datasets), 3.8), layout="constrained")
    axes = fig.subplots(1, len(datasets), squeeze=False)[0]
    for ax, data in zip(axes, datasets):
        for act, (a, b) in config["activations"].items():
            lo, hi = arrays[key("lambda", data, act)]
            cond = np.where(lo > 0, hi / np.where(lo > 0, lo, 1.0), np.nan)  # gaps where singular
            delta = b * b / (a * a + b * b)
            ax.plot(depths, cond, "o-", markersize=3, label=f"{act} (Δ_φ = {delta:.2f})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("depth L (hidden layers)")
        ax.set_ylabel("cond(K∞) = λ_max / λ_min")
        ax.set_title(f"{data}: infinite-width NTK at the edge of chaos")
        ax.legend(fontsize=8)
    return fig


def plot(folder: str, fmt: str = "png") -> list[str]:
    """Draw the figures from `arrays.npz` and `config.json` in the run folder; returns the
    files written."""
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    with np.load(os.path.join(folder, "arrays.npz"), allow_pickle=False) as saved:
        arrays = {k: saved[k] for k in saved.files}
    written = []
    for name, draw in zip(FIGURES, (_error_figure, _condition_figure)):
        path = os.path.join(folder, f"{name}.{fmt}")
        tmp = os.path.join(folder, f".tmp-{name}.{fmt}")
        draw(arrays, config).savefig(tmp, dpi=130)
        os.replace(tmp, path)
        written.append(path)
    return written
