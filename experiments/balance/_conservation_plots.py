"""Figures of the invariants per method: the balancedness drift of the logistic flow for each
solver (`conservation.png`), and the per-neuron invariants of the two-layer ReLU-type nets
along their Filippov flows against the chattering Tsit5 baseline (`homogeneous.png`)."""

import os

import numpy as np
from matplotlib.figure import Figure

from .. import _plotting as P
from ._report import stop_text

RELATIVE_NEURON = "relative drift (dimensionless)\nmax_j |I_j(t) − I_j(0)| / max(1, ‖b_j‖² + a_j²)"
_STYLES = ("-", "--", ":", "-.")


def _load(folder, name):
    with np.load(os.path.join(folder, name)) as f:
        return {k: f[k] for k in f.files}


def _positive(ts, values):
    keep = (ts > 0) & (values > 0)
    return ts[keep], values[keep]


def _axes(ax, title, ylabel):
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(P.TIME_LABEL)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)


def conservation_figure(folder: str, conservation: dict, ylabel: str) -> Figure:
    """Maximum relative drift of the C_k against t, one colour per solver, one line style
    per rtol, each rtol as a labelled line and the round-off floor 10ε shaded."""
    runs = conservation["runs"]
    solvers = list(dict.fromkeys(r["solver"] for r in runs))
    rtols = sorted({r["rtol"] for r in runs})
    fig = P.new_figure(10, 5.2)
    ax = fig.subplots()
    ts_all = None
    for run in runs:
        data = _load(folder, run["file"])
        ts_all = data["ts"]
        newton = run.get("newton_residual")
        ax.plot(
            *_positive(data["ts"], data["drift_relative"]),
            color=f"C{solvers.index(run['solver'])}",
            ls=_STYLES[rtols.index(run["rtol"]) % len(_STYLES)],
            lw=1.8,
            label=f"{run['solver']}, rtol = {run['rtol']:g}: {run['num_steps']} steps"
            + (f", Newton residual ≤ {newton:.0e}" if newton else ""),
        )
    for rtol in rtols:
        P.bound_line(
            ax,
            [ts_all[1], ts_all[-1]],
            [rtol, rtol],
            lw=1.0,
            ls=_STYLES[rtols.index(rtol) % len(_STYLES)],
            label=f"rtol = {rtol:g}: the solvers' relative tolerance",
        )
    P.log_axis(ax)
    P.roundoff_floor(ax, ts_all[ts_all > 0], 10 * P.EPS, label="round-off floor, 10ε")
    _axes(
        ax,
        f"Balancedness drift of the logistic flow to t = {conservation['t1']:g}, per solver\n"
        "(Gauss–Legendre methods conserve quadratic invariants: they sit at round-off)",
        ylabel,
    )
    P.legend_outside(ax)
    return fig


#: Line style per activation: ReLU and leaky ReLU give nearly the same flow, so ReLU is drawn
#: wide and pale and leaky ReLU dashed on top of it, each visible through the other.
STYLES = {
    "relu": {"lw": 4.0, "alpha": 0.45, "ls": "-"},
    "leaky_relu": {"lw": 1.4, "ls": "--"},
    "abs": {"lw": 1.6, "ls": "-"},
}


def _stop_line(axes, t, band, count, **style):
    """A vertical line at the time t where a run stopped, drawn over its own band
    (`band` of `count`) of each panel's height, so that runs stopping at nearly the same time
    (ReLU and leaky ReLU) stay apart; labelled once."""
    label = style.pop("label")
    for ax in axes:
        ax.axvline(t, ymin=band / count, ymax=(band + 1) / count, label=label, **style)
        label = None


def homogeneous_figure(folder: str, homogeneous: dict) -> Figure:
    """Per-neuron invariant drift and loss along the Filippov flows, with the times where the
    Tsit5 baseline stopped; one legend for both panels. The drift panel reaches down to the
    round-off floor 10ε, so that the drift is seen against it. A Filippov flow that stopped
    before its horizon is drawn as a dash-dotted line at the time it stopped, with its status
    in the legend, and the title says how many reached their horizon."""
    fig = P.new_figure(11, 5.4)
    ax1, ax2 = fig.subplots(1, 2)
    ts_all, rtol = None, None
    runs_all = homogeneous["runs"]
    finished = [r.get("filippov", {}).get("status") == "finished" for r in runs_all.values()]
    for j, (name, runs) in enumerate(runs_all.items()):
        style = {"color": f"C{j}"} | STYLES.get(name, {"lw": 1.6})
        exact = runs.get("filippov", {})
        if exact.get("status") == "finished":
            data = _load(folder, exact["file"])
            ts_all, rtol = data["ts"], exact["rtol"]
            ax1.plot(
                *_positive(data["ts"], data["drift_relative"]),
                label=f"{name}, Filippov: {exact['num_steps']} steps, {exact['events']} events",
                **style,
            )
            ax2.plot(*_positive(data["ts"], data["loss"]), **style)
        elif exact.get("t_reached") is not None:  # stopped: where, and why
            label = f"{name}, Filippov {stop_text(exact)}"
            _stop_line((ax1, ax2), exact["t_reached"], j, len(runs_all), color=style["color"],
                       ls="-.", lw=1.6, label=label)  # fmt: skip
        base = runs.get("tsit5", {})
        if base.get("status") == "max_steps reached" and base.get("t_reached"):
            label = f"{name}, Tsit5 alone {stop_text(base)} (chatter)"
            _stop_line((ax1, ax2), base["t_reached"], j, len(runs_all), color=style["color"],
                       ls=":", lw=1.4, label=label)  # fmt: skip
    if ts_all is not None:
        P.bound_line(ax1, [ts_all[1], ts_all[-1]], [rtol, rtol], label=f"rtol = {rtol:g}")
        P.log_axis(ax1)
        low, high = ax1.get_ylim()
        ax1.set_ylim(min(low, 10 * P.EPS / 3), high)  # the floor in view
        P.roundoff_floor(ax1, ts_all[ts_all > 0], 10 * P.EPS, label="round-off floor, 10ε")
        P.log_axis(ax2)
    _axes(ax1, "Per-neuron invariant I_j = ‖b_j‖² − a_j² (Du, Hu & Lee 2018)", RELATIVE_NEURON)
    _axes(ax2, "Loss along the exact flow", "mean squared loss (loss units)")
    P.figure_legend(fig, *ax1.get_legend_handles_labels(), ncol=2)
    reached = (
        "exact flows to their horizon"
        if all(finished)
        else f"exact flows: {sum(finished)} of {len(finished)} to their horizon (stops marked)"
    )
    fig.suptitle(
        f"Two-layer nets (width {homogeneous['width']}) on 10 digits: {reached}, "
        "Tsit5 alone chatters at the kinks",
        fontsize=11,
    )
    return fig
