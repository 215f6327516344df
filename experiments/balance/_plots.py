"""Figures of `gradflows run balance`, drawn from what the run saved (results.json + .npz).

Each `_*_figure` function returns a `Figure` (tests check it with
`experiments._plotting.figure_problems`); `plot(folder)` writes them.
"""

import json
import os

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .. import _plotting as P
from ._conservation_plots import conservation_figure, homogeneous_figure
from ._report import plain_list

DRIFT_LABEL = (
    "relative drift of C_k (dimensionless):\nmax_k ‖C_k(t) − C_k(0)‖_F\n/ max(1, ‖W_k‖² + ‖W_k+1‖²)"
)


def _load(folder, name):
    with np.load(os.path.join(folder, name)) as f:
        return {k: f[k] for k in f.files}


def _finish(ax, title, ylabel, *, log_x=True):
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(P.TIME_LABEL)
    ax.set_ylabel(ylabel)
    if log_x:
        P.log_axis(ax, "x")
    ax.grid(True, which="major", alpha=0.3)


def _positive(ts, values):
    keep = (ts > 0) & (values > 0)
    return ts[keep], values[keep]


def _relative_drift(data):
    return data["drift_relative"].max(axis=1)


def plot(folder: str) -> list[str]:
    """Draw every figure the saved parts allow; returns the file names written."""
    with open(os.path.join(folder, "results.json")) as f:
        results = json.load(f)
    figures = {}
    logistic = results.get("logistic", {}).get("runs", [])
    gd = results.get("gd", {}).get("runs", [])
    if logistic or gd:
        figures["drift.png"] = drift_figure(folder, results)
    if logistic:
        main = _load(folder, logistic[0]["file"])
        figures["singular_values.png"] = singular_value_figure(main)
        figures["alignment.png"] = alignment_figure(main)
        figures["max_margin.png"] = margin_figure(results, main)
        figures["loss_times_t.png"] = loss_figure(main, _depth(results))
    if "squared" in results:
        squared = results["squared"]
        figures["squared.png"] = squared_figure(squared, _load(folder, squared["file"]))
    if results.get("conservation", {}).get("runs"):
        figures["conservation.png"] = conservation_figure(
            folder, results["conservation"], DRIFT_LABEL
        )
    if results.get("homogeneous", {}).get("runs"):
        figures["homogeneous.png"] = homogeneous_figure(folder, results["homogeneous"])
    for name, fig in figures.items():
        P.save_figure(fig, os.path.join(folder, name), dpi=120)
    return list(figures)


def drift_figure(folder: str, results: dict) -> Figure:
    """Relative drift of the C_k (docs/balance.md's table) against flow time: the flow at
    each tolerance, its rtol as a labelled line, gradient descent at each step η."""
    fig = P.new_figure(10, 4.8)
    ax = fig.subplots()
    flows = results.get("logistic", {}).get("runs", [])
    for j, run in enumerate(flows):
        data = _load(folder, run["file"])
        colour = f"C{j}"
        ax.plot(
            *_positive(data["ts"], _relative_drift(data)),
            lw=2,
            color=colour,
            label=f"exact flow, {run['solver']}, rtol = {run['rtol']:g}",
        )
        P.bound_line(
            ax,
            [data["ts"][1], data["ts"][-1]],
            [run["rtol"]] * 2,
            color=colour,
            lw=1.0,
            label=f"rtol = {run['rtol']:g}: the solver's relative tolerance",
        )
    gd = results.get("gd", {}).get("runs", [])
    for run, colour in zip(gd, P.shades("Reds", len(gd), 0.9, 0.45)):
        data = _load(folder, run["file"])
        ax.plot(
            *_positive(data["ts"], _relative_drift(data)),
            ls="--",
            color=colour,
            label=f"gradient descent, η = {run['eta']:g}",
        )
    P.log_axis(ax)
    if flows:  # the C_k are sums of products of O(1) weights: ε-relative round-off per entry
        ts = _load(folder, flows[0]["file"])["ts"]
        P.roundoff_floor(ax, ts[ts > 0], 10 * P.EPS, label="round-off floor, 10ε")
    title = "Balancedness drift of the logistic flow (Du, Hu & Lee 2018: C_k is conserved)"
    if "drift_exponent_in_eta" in results.get("gd", {}):  # two or more η finished
        title += (
            f"\ngradient descent breaks it: drift ∝ η^{results['gd']['drift_exponent_in_eta']:.3f}"
            f" at t = {results['gd']['t1']:g}"
        )
    _finish(ax, title, DRIFT_LABEL)
    P.legend_outside(ax)
    return fig


def singular_value_figure(main: dict) -> Figure:
    """σ_i(W_k) against flow time, one panel per layer, σ_1 darkest to σ_r lightest."""
    layers = sorted(k for k in main if k.startswith("singular_values_"))
    fig = P.new_figure(4.2 * len(layers), 4.6)
    axes = fig.subplots(1, len(layers), squeeze=False)[0]
    ts = main["ts"]
    maps = ("Blues", "Oranges", "Greens", "Purples", "Reds", "Greys")
    for j, (ax, key) in enumerate(zip(axes, layers)):
        sv = main[key]
        n = sv.shape[1]
        colours = P.shades(maps[j % len(maps)], n, 0.95, 0.35)
        for i in range(n):
            ax.plot(ts[1:], sv[1:, i], color=colours[i], lw=2.0 if i == 0 else 0.9)
        k = int(key.rsplit("_", 1)[1]) + 1
        title = f"W_{k}: {n} singular value{'s' * (n > 1)}"
        _finish(ax, title, f"σ_i(W_{k}) (weight units)")
        handles = [Line2D([], [], color=colours[0], lw=2.0, label="σ_1 (largest)")]
        if n > 1:
            handles.append(Line2D([], [], color=colours[-1], lw=0.9, label=f"σ_{n} (smallest)"))
        ax.legend(
            handles=handles,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.18),
            ncol=2,
            fontsize=8,
            frameon=False,
        )
    fig.suptitle("Singular values per layer along the logistic flow (dark: large, light: small)")
    return fig


def alignment_figure(main: dict) -> Figure:
    """Adjacent-layer alignment and σ₂/σ₁ per layer against flow time."""
    ts, align, ratio = main["ts"][1:], main["alignment"][1:], main["sigma_ratio"][1:]
    fig = P.new_figure(11, 4.6)
    ax1, ax2 = fig.subplots(1, 2)
    for k in range(align.shape[1]):
        ax1.plot(ts, align[:, k], label=f"|⟨u₁(W_{k + 1}), v₁(W_{k + 2})⟩|")
    ax1.set_ylim(0, 1.02)
    _finish(ax1, "Adjacent-layer alignment (1: aligned)", "alignment (dimensionless)")
    for k in range(ratio.shape[1] - 1):  # the last layer has a single singular value
        ax2.plot(ts, ratio[:, k], label=f"σ₂/σ₁ of W_{k + 1}")
    _finish(ax2, "Approach to rank one (0: rank one)", "σ₂/σ₁ (dimensionless)")
    for ax in (ax1, ax2):
        P.legend_outside(ax, where="below", ncol=2)
    return fig


def _depth(results: dict) -> int | None:
    """The number of layers N of the run's deep linear net (`settings.dims` = N + 1 sizes)."""
    dims = (results.get("settings") or {}).get("dims")
    return len(dims) - 1 if dims else None


#: The flow time from which the predicted rates are drawn through the measured curve: past
#: the transient (the angle has fallen from 1.0 to 0.35 rad on the default run).
ANCHOR_T = 1e3


def _at(ts, values, t):
    i = int(np.argmin(np.abs(np.log(ts[ts > 0]) - np.log(t))))
    return float(ts[ts > 0][i]), float(values[ts > 0][i])


def margin_figure(results: dict, main: dict) -> Figure:
    """Angle to the hard-margin SVM direction and the normalised margin against flow time;
    on the angle, the predicted rates O(1/log t) and O(log log t/log t) drawn through the
    measured angle at `ANCHOR_T`, each with the angle it predicts at the last save time."""
    ts = main["ts"]
    gamma = results["data"]["max_margin"]["margin"]
    fig = P.new_figure(11, 4.9)
    ax1, ax2 = fig.subplots(1, 2)
    keep = ts > 0
    ax1.plot(
        ts[keep], main["angle"][keep], color="C0", label="angle of W_L⋯W_1 to the SVM direction"
    )
    title = "Angle to the max-margin direction\n(→ 0 at rate O(1/log t): Ji & Telgarsky 2019)"
    t_end, end = float(ts[-1]), float(main["angle"][-1])
    if t_end > 10 * ANCHOR_T:
        t0, a0 = _at(ts, main["angle"], ANCHOR_T)
        grid = np.geomspace(t0, t_end, 60)
        rates = (
            ("O(1/log t)", lambda t: 1 / np.log(t), "tab:orange"),
            ("O(log log t / log t) (Soudry et al. 2018)", lambda t: np.log(np.log(t)) / np.log(t),
             "tab:red"),
        )  # fmt: skip
        for name, shape, colour in rates:
            c = a0 / shape(t0)
            P.bound_line(ax1, grid, c * shape(grid), color=colour, ls="--",
                         label=f"{name} through t = {t0:.3g}: {c * shape(t_end):.2f} rad at "
                         f"t = {t_end:.3g}")  # fmt: skip
        title += (
            f"\nmeasured {end:.2f} rad at t = {t_end:.3g}: slow by design,"
            "\nthe angle halves only as log t doubles"
        )
    ax1.set_ylim(0, None)
    _finish(ax1, title, "angle (radians)")
    ax2.plot(ts[keep], main["margin"][keep], color="C0", label="normalised margin of W_L⋯W_1")
    P.bound_line(
        ax2,
        ts[keep][[0, -1]],
        [gamma, gamma],
        ls="--",
        label=f"hard-margin SVM γ = {gamma:.4g}, the limit (Soudry et al. 2018)",
    )
    _finish(ax2, "Normalised margin min_i y_i⟨β, x_i⟩/‖β‖", "margin (input units)")
    for ax in (ax1, ax2):
        P.legend_outside(ax, where="below")
    return fig


def loss_figure(main: dict, depth: int | None = None) -> Figure:
    """Logistic loss times t against flow time (flat if the loss falls like 1/t), with the
    logarithm a depth-N linear net predicts: L·t ∝ (log t)^(−2(N−1)/N), drawn through the
    measured L·t at `ANCHOR_T` (N = `depth`; none drawn without it).

    Why that power: with L ≈ e^(−γr) for r = ‖W_N⋯W_1‖ and balanced layers, r' ≈ Nγ·r^(2−2/N)·L
    (Arora, Cohen & Hazan 2018), so e^(γr) ≈ Nγ²t·r^(2−2/N) and r ≈ log t/γ: L·t ∝
    (log t)^(−(2−2/N)); N = 1 gives Soudry et al.'s flat 1/γ²."""
    fig = P.new_figure(7.5, 4.8)
    ax = fig.subplots()
    ts, loss = main["ts"][1:], main["loss"][1:]
    ax.plot(ts, loss * ts, label="measured: mean logistic loss × t")
    title = "Logistic loss × t (loss ~ 1/t up to logarithms: Soudry et al. 2018)"
    if depth and ts[-1] > 10 * ANCHOR_T:
        power = 2 * (depth - 1) / depth
        t0, v0 = _at(ts, loss * ts, ANCHOR_T)
        grid = np.geomspace(t0, ts[-1], 60)
        predicted = v0 * (np.log(grid) / np.log(t0)) ** -power
        P.bound_line(ax, grid, predicted, color="tab:red", ls="--",
                     label=f"∝ (log t)^(−{power:.3g}), depth N = {depth}, "
                     f"through t = {t0:.3g}")  # fmt: skip
        measured = float((loss * ts)[-1])
        title += (
            f"\nthe logarithm of a depth-{depth} net: predicted {predicted[-1]:.3g}, measured "
            f"{measured:.3g} at t = {ts[-1]:.3g}"
        )
    P.log_axis(ax, "y")
    _finish(ax, title, "mean logistic loss × t (flow time)")
    P.legend_outside(ax, where="below")
    return fig


def squared_figure(squared: dict, data: dict) -> Figure:
    """The squared-loss flow: loss above the least-squares minimum with its round-off floor,
    and the relative drift against the tolerance."""
    fig = P.new_figure(11, 4.8)
    ax1, ax2 = fig.subplots(1, 2)
    ts = data["ts"]
    minimum = squared["loss_least_squares"]
    ax1.plot(
        *_positive(ts, data["loss"] - minimum), color="C0", label="loss − least-squares minimum"
    )
    P.log_axis(ax1)
    P.roundoff_floor(
        ax1,
        ts[ts > 0],
        10 * P.EPS * minimum,
        label=f"round-off of the loss: 10ε × minimum = {10 * P.EPS * minimum:.1e}",
    )
    _finish(ax1, "Loss above the least-squares minimum", "loss − min loss (loss units)")
    ax2.plot(*_positive(ts, _relative_drift(data)), color="C1", label="relative drift of C_k")
    P.bound_line(
        ax2,
        ts[ts > 0][[0, -1]],
        [squared["rtol"]] * 2,
        label=f"rtol = {squared['rtol']:g}: the solver's relative tolerance",
    )
    P.log_axis(ax2)
    _finish(ax2, "Balancedness drift", DRIFT_LABEL)
    solvers = plain_list(squared["solvers"])
    when = squared.get("switched_to_stiff_at")
    how = (
        f"explicit, then {solvers.split(' → ')[-1]} from t = {when:.3g}"
        if when
        else f"{solvers} from the start"
    )
    for ax in (ax1, ax2):
        if when:
            label = f"switch to {solvers.split(' → ')[-1]}, t = {when:.3g}"
            ax.axvline(when, color="k", ls=":", lw=0.8, label=label)
        P.legend_outside(ax, where="below")
    fig.suptitle(
        f"Squared-loss flow to t = {squared['t1']:g}: {squared['num_steps']} steps "
        f"(solver {squared['solver']}: {how})",
        fontsize=11,
    )
    return fig
