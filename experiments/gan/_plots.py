"""Draw the figures of a `gradflows run gan` folder from its `.npz` files."""

import glob
import math
import os

import numpy as np
from matplotlib.lines import Line2D

from .._plotting import REFERENCE, TIME_LABEL, figure_legend, new_figure, save_figure
from ._cli import DIRAC, MIXTURE

LABELS = {
    "gan": "GAN", "ns_gan": "non-saturating GAN", "wgan": "WGAN", "fgan_kl": "f-GAN, KL",
    "fgan_chi2": "f-GAN, Pearson χ²", "r1": "GAN + R1", "instance_noise": "GAN + instance noise",
    "consensus": "GAN + consensus", "wgan_gp": "WGAN-GP", "one_sided": "WGAN + one-sided Lip.",
    "alp": "WGAN + adversarial Lip.", "my_kl": "MY f-GAN (KL, α = 2)",
    "my_chi2": "MY f-GAN (χ², α = 2)",
}  # fmt: skip
RUNS = {
    "flow": ("exact GDA flow", "k", "-"),
    "simgd": ("SimGD", "tab:red", "--"),
    "altgd": ("AltGD", "tab:blue", "--"),
    "odegan": ("ODE-GAN splitting", "tab:green", ":"),
}


def _load(path):
    with np.load(path, allow_pickle=False) as saved:
        return {key: saved[key] for key in saved.files}


def _present(folder, prefix, order):
    found = {os.path.basename(p)[len(prefix) + 1 : -4]: p
             for p in glob.glob(os.path.join(folder, f"{prefix}-*.npz"))}  # fmt: skip
    return [(v, _load(found[v])) for v in order if v in found]


def draw_portraits(panels):
    n = len(panels)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    # at least two panels wide: one panel (--dirac gan) ran its title and legend off the page
    fig = new_figure(3.1 * max(cols, 2), 3.0 * rows + 0.6)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax, (name, d) in zip(axes.flat, panels):
        grid, field = d["grid"], d["field"]
        speed = np.linalg.norm(field, axis=-1)
        unit = field / np.where(speed > 0, speed, 1.0)[..., None]
        ax.quiver(grid[..., 0], grid[..., 1], unit[..., 0], unit[..., 1], color="0.7",
                  angles="xy", scale=28, width=0.004)  # fmt: skip
        for key in ("simgd", "altgd"):
            path, colour = d[key], RUNS[key][1]
            if len(path):
                ax.plot(path[:, 0], path[:, 1], ".-", color=colour, ms=2, lw=0.6, alpha=0.8)
        ax.plot(d["orbit"][:, 0], d["orbit"][:, 1], color="k", lw=1.4)
        ax.plot([d["orbit"][0, 0]], [d["orbit"][0, 1]], "o", color="k", ms=4)
        ax.set_xlim(-2, 2)
        ax.set_ylim(-2, 2)
        ax.set_aspect("equal")
        ax.set_title(LABELS.get(name, name), fontsize=9)
        ax.set_xlabel("generator θ")
        ax.set_ylabel("critic ψ")
    handles = [Line2D([], [], color="k", lw=1.4, label="exact GDA flow from (1, 1)"),
               Line2D([], [], color="tab:red", marker=".", lw=0.6,
                      label="SimGD (consensus panel: consensus optimisation)"),
               Line2D([], [], color="tab:blue", marker=".", lw=0.6, label="AltGD"),
               Line2D([], [], color="0.7", lw=2, label="direction of the GDA field")]  # fmt: skip
    figure_legend(fig, handles, ncol=4 if cols > 2 else 2)
    # AltGD is bounded only while ηf′(0) ≤ 2: at --eta 3 it left for r = 6.8e83 under a
    # title that said it stays bounded
    altgd = "AltGD stays bounded" if all(map(_bounded, (d["altgd"] for _, d in panels))) else (
        "AltGD leaves the plot at this η (bounded only while ηf′(0) ≤ 2)")  # fmt: skip
    fig.suptitle(
        "Dirac-GAN: zero-sum unregularised orbits are closed, SimGD spirals out, "
        f"{altgd}; R1, noise, consensus and MY converge to (0, 0)",
        wrap=True,
    )  # fmt: skip  (--dirac gan: one panel, both ran past its edges)
    return fig


def _bounded(path) -> bool:
    """A discrete run that stays within 10 times its start's radius (the plot shows ±2 about
    a start at radius √2)."""
    path = np.asarray(path)
    r = np.hypot(path[..., 0], path[..., 1])  # norm overflowed (with a warning) past 1e154
    return len(r) == 0 or bool(np.all(r <= 10.0 * max(r[0], 1.0)))


def draw_eigenvalues(panels):
    fig = new_figure(7.5, 5.5)
    ax = fig.subplots()
    colours = [f"C{i % 10}" for i in range(len(panels))]
    for colour, (name, d) in zip(colours, panels):
        z = d["eigenvalues"]
        marker = "s" if name in ("one_sided", "alp", "fgan_chi2", "ns_gan") else "o"
        ax.plot(z.real, z.imag, marker, color=colour, ms=7, mfc="none", mew=1.5,
                label=LABELS.get(name, name))  # fmt: skip
        if "expected" in d:
            e = d["expected"]
            ax.plot(e.real, e.imag, "x", color="k", ms=6, gid=REFERENCE)
    ax.plot([], [], "x", color="k", label="closed form (Mescheder et al. 2018; f-GAN: ±i k(0))")
    ax.axvline(0.0, color="0.6", lw=0.8)
    ax.set_xlabel("Re λ (1 / flow time)")
    ax.set_ylabel("Im λ (1 / flow time)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    ax.set_title("Eigenvalues of the GDA Jacobian at (0, 0): every computed value (circle)\n"
                 "sits on its closed form (cross); Re λ < 0 only with a penalty or consensus",
                 fontsize=10)  # fmt: skip
    return fig


def draw_locus(d):
    fig = new_figure(8.5, 3.6)
    left, right = fig.subplots(1, 2)
    g = d["gammas"]
    for ax, part, name in ((left, np.real, "Re λ"), (right, np.imag, "Im λ")):
        for i in range(2):
            ax.plot(g, part(d["expected"][:, i]), "-", color="k", lw=1, gid=REFERENCE,
                    label="closed form −γ/2 ± √(γ²/4 − f′(0)²)" if i == 0 else None)  # fmt: skip
            ax.plot(g[::3], part(d["numeric"][::3, i]), "o", color="tab:red", ms=3,
                    label="eigenvalues of the computed Jacobian" if i == 0 else None)  # fmt: skip
        ax.axvline(1.0, color="0.5", ls="--", lw=0.8, label="critical γ = 2f′(0) = 1")
        ax.set_xlabel("R1 weight γ (1 / flow time)")
        ax.set_ylabel(f"{name} (1 / flow time)")
    figure_legend(fig, *left.get_legend_handles_labels(), ncol=3)
    fig.suptitle("R1 root locus of the Dirac-GAN at (0, 0): a complex pair until γ = 1, then "
                 "two real roots, one tending to 0", fontsize=10)  # fmt: skip
    return fig


def draw_mixture_samples(panels, columns=4):
    # at most one column per save: --saves 3 drew a fourth column of empty panels
    columns = max(1, min(columns, *(len(d["ts"]) for _, d in panels)))
    rows = [(name, run) for name, _ in panels for run in ("flow", "simgd")]
    fig = new_figure(2.3 * columns, 2.25 * len(rows) + 0.5)
    axes = fig.subplots(len(rows), columns, squeeze=False)
    data = dict(panels)
    for r, (name, run) in enumerate(rows):
        d = data[name]
        samples = d.get(f"{run}_samples")
        ts = d["ts"]
        picks = np.unique(np.linspace(0, len(ts) - 1, columns).round().astype(int))
        for c, ax in enumerate(axes[r]):
            ax.set_xlim(-3, 3)
            ax.set_ylim(-3, 3)
            ax.set_aspect("equal")
            ax.tick_params(labelsize=6)
            if c >= len(picks):
                ax.set_visible(False)
                continue
            i = picks[c]
            ax.plot(d["real"][:, 0], d["real"][:, 1], ".", color="0.6", ms=2)
            if samples is not None and i < len(samples):
                x = samples[i]
                ax.plot(x[:, 0], x[:, 1], ".", color=RUNS[run][1], ms=1.5, alpha=0.6)
                modes = int(d[f"{run}_modes"][i])
                ax.set_title(f"{LABELS[name]}, {RUNS[run][0]}\nt = {ts[i]:.3g}, {modes}/8 modes",
                             fontsize=7)  # fmt: skip
            else:
                ax.set_title(f"{RUNS[run][0]}: diverged before t = {ts[i]:.3g}", fontsize=7)
            if c == 0:
                ax.set_ylabel("x₂", fontsize=7)
            if r == len(rows) - 1:
                ax.set_xlabel("x₁", fontsize=7)
    handles = [
        Line2D([], [], ls="", marker=".", color=colour, label=label)
        for colour, label in (
            ("0.6", "data (8 Gaussians)"),
            ("k", "generated, exact flow"),
            ("tab:red", "generated, SimGD"),
        )  # fmt: skip
    ]
    figure_legend(fig, handles, ncol=3)
    fig.suptitle("2-D mixture: generated samples over flow time, exact GDA flow (black) vs "
                 "SimGD at the same t (red)", fontsize=10, wrap=True)  # fmt: skip
    return fig


def _per_variant(panels, key, ylabel, title, log=False):
    n = len(panels)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig = new_figure(3.6 * cols, 2.9 * rows + 0.6)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax, (name, d) in zip(axes.flat, panels):
        for run, (label, colour, style) in RUNS.items():
            if f"{run}_{key}" not in d or (key == "gap" and run == "flow"):
                continue
            y = key_values(d, run, key)
            t = d["ts"][: len(y)]
            if log:
                keep = y > 0
                t, y = t[keep], y[keep]
            ax.plot(t, y, style, color=colour, lw=1.2, label=label)
        if log:
            ax.set_yscale("log")
        ax.set_title(LABELS.get(name, name), fontsize=9)
        ax.set_xlabel(TIME_LABEL, fontsize=7)
        ax.set_ylabel(ylabel, fontsize=8)
    # four columns ran past both edges of a one-panel figure
    figure_legend(fig, *axes.flat[0].get_legend_handles_labels(), ncol=4 if cols > 1 else 2)
    fig.suptitle(title, fontsize=10, wrap=True)  # one panel: it ran past both edges
    return fig


def key_values(d, run, key):
    values = d[f"{run}_{key}"]
    if key == "eigs":
        return values.real.max(axis=1)
    return values


def plot(folder: str, fmt: str = "png") -> list[str]:
    """Draw every figure whose arrays are in the run folder; returns the files written."""
    written = []

    def save(fig, name):
        target = os.path.join(folder, f"{name}.{fmt}")
        save_figure(fig, target)
        written.append(target)

    dirac = _present(folder, "dirac", DIRAC)
    if dirac:
        save(draw_portraits(dirac), "portraits")
        save(draw_eigenvalues(dirac), "eigenvalues")
    locus = os.path.join(folder, "locus.npz")
    if os.path.exists(locus):
        save(draw_locus(_load(locus)), "r1_locus")
    mixture = _present(folder, "mixture", MIXTURE)
    if mixture:
        save(draw_mixture_samples(mixture), "mixture_samples")
        save(_per_variant(mixture, "eigs", "max Re λ of the game Jacobian (1/time)",
                          "2-D mixture: the largest real part of the game Jacobian's "
                          "eigenvalues along each path (> 0: a locally repelling direction)"),
             "mixture_eigenvalues")  # fmt: skip
        save(_per_variant(mixture, "gap", "‖discrete − flow‖ (parameters)",
                          "2-D mixture: distance of each discrete run from the exact flow at "
                          "the same flow time", log=True), "mixture_gaps")  # fmt: skip
        save(_per_variant(mixture, "modes", "modes covered (of 8)",
                          "2-D mixture: modes covered (≥ 1 % of 512 samples within 0.25); the "
                          "discrete runs' counts follow the flow's only where they track it (R1)"),
             "mixture_modes")  # fmt: skip
    return written
