"""The figures of an eos run, drawn from its run folder alone (results.json and the parts)."""

import json
import os
import textwrap

import numpy as np

from .._plotting import (
    bound_line,
    figure_legend,
    log_axis,
    new_figure,
    save_figure,
    shades,
)
from ._optimizer import optimizer_figure
from ._report import edge_phrase

FLOW_STYLE = {  # name: (label, colour, dashes)
    "gradient_flow": ("gradient flow", "tab:blue", "-"),
    "modified_flow": ("modified flow (order 1)", "tab:green", "-"),
    "central_flow": ("central flow", "tab:red", "--"),
}
TIME = "flow time t = kη (GD step k of size η)"


def plot(folder: str, fmt: str = "png") -> list[str]:
    """Draw `eta-<η>.<fmt>` per η, `update_cosine.<fmt>` and `catapult.<fmt>` into `folder`;
    returns the paths written."""
    with open(os.path.join(folder, "results.json"), encoding="utf-8") as f:
        res = json.load(f)
    paths, cosines = [], []
    for run in res["runs"]:
        with np.load(os.path.join(folder, run["file"])) as npz:
            arrays = {name: npz[name] for name in npz.files}
        path = os.path.join(folder, f"eta-{run['eta']:g}.{fmt}")
        paths.append(save_figure(eta_figure(run, arrays, res.get("config")), path))
        if run.get("optimizer"):
            path = os.path.join(folder, f"optimizer-{run['eta']:g}.{fmt}")
            paths.append(save_figure(optimizer_figure(run, arrays, res.get("config")), path))
        cosines.append(
            (run["eta"], arrays["t_gd"][1:], arrays["update_cosine"], run.get("t_edge"),
             run.get("diverged"))
        )  # fmt: skip
    if cosines:
        path = os.path.join(folder, f"update_cosine.{fmt}")
        paths.append(save_figure(cosine_figure(cosines), path))
    if res.get("catapult"):
        c = res["catapult"]
        with np.load(os.path.join(folder, c["file"])) as npz:
            arrays = {name: npz[name] for name in npz.files}
        paths.append(
            save_figure(catapult_figure(c, arrays), os.path.join(folder, f"catapult.{fmt}"))
        )
    return paths


def problem_line(config: dict | None) -> str:
    """The model, data and loss of a run, from its config.json (empty without one)."""
    if not config:
        return ""
    loss = {"mse": "½ × mean squared error"}.get(config.get("loss"), config.get("loss"))
    data = config.get("dataset", config.get("data"))  # "data" before --data existed
    return f"{config.get('model')}; {data}; loss: {loss}"


def eta_figure(run: dict, a: dict, config: dict | None = None):
    """Three panels for one η: GD's sharpness against 2/η, the training losses, ‖GD − flow‖
    beside ‖w_GD − w0‖ (how far GD moved at all). `config`: the run's config.json, whose model,
    data and loss the title names. A flow that stopped early says why where it ends."""
    eta = run["eta"]
    fig = new_figure(13.0, 4.8)
    ax_s, ax_l, ax_d = fig.subplots(1, 3)
    t, S = a["t"], a["sharpness_gd"]
    t_flow = a.get("t_flow", t)  # the flows reach t1 where GD stopped early
    few = {"marker": "o", "ms": 4} if len(a["t_gd"]) < 5 else {}  # a lone point is seen
    for j in range(S.shape[1] - 1, 0, -1):
        ax_s.plot(t, S[:, j], color="0.6", lw=0.8, label=f"GD: λ_{j + 1}" if j < 3 else None)
    ax_s.plot(t, S[:, 0], color="k", lw=1.0,
              label="GD (black): sharpness S = λ_max(∇²L) left, loss at every step middle",
              **few)  # fmt: skip
    if "sharpness_central" in a:
        S_c = a["sharpness_central"]
        ax_s.plot(t_flow[: len(S_c)], S_c, color="tab:red", lw=1.4, ls="--")  # with its loss
    if "next_eigenvalue_central" in a:  # below 2/η throughout: k tracked all that reached it
        lam, k = a["next_eigenvalue_central"], (run.get("central_flow") or {}).get("k", 1)
        ax_s.plot(t_flow[: len(lam)], lam, color="tab:red", lw=0.8, ls=":",
                  label=f"central flow: λ_{k + 1}, the first it does not track")  # fmt: skip
    bound_line(ax_s, t_flow[[0, -1]], [2 / eta] * 2, label=f"2/η = {2 / eta:.4g}",
               color="tab:orange")  # fmt: skip
    ax_s.set(xlabel=TIME, ylabel="sharpness S (loss units per parameter²)",
             title=f"sharpness of GD, η = {eta:g}")  # fmt: skip
    ax_l.plot(a["t_gd"], a["loss_gd"], color="k", lw=0.7, **few)  # labelled with its sharpness
    for name, (label, colour, ls) in FLOW_STYLE.items():
        if f"loss_{name}" in a:
            y = a[f"loss_{name}"]
            if name == "central_flow" and "sharpness_central" in a:
                label += " (its S left)"
            ax_l.plot(t_flow[: len(y)], y, color=colour, ls=ls, lw=1.4, label=label)
    if "loss_gd_averaged" in a:
        g, tg = a["loss_gd_averaged"], t_flow[: len(a["loss_gd_averaged"])]
        # only where the filter's window (±3σ) lies inside GD's run, as the error is measured
        reach = (150 - 1e-9) * eta  # 3σ of 50 steps
        inside = (tg >= reach) & (tg <= a["t_gd"][-1] - reach)
        ax_l.plot(tg[inside], g[inside], color="tab:cyan", lw=1.4,
                  label="GD's loss, Gaussian average (σ = 50 steps; 3σ from the ends)")  # fmt: skip
    if "predicted_loss" in a:
        p = a["predicted_loss"]
        ax_l.plot(t_flow[: len(p)], p, color="tab:red", ls=":", lw=1.6,
                  label="central flow: predicted time-averaged GD loss L + tr Σ/η")  # fmt: skip
    error = (run.get("central_flow") or {}).get("predicted_loss_error")
    if error:
        text = "predicted vs averaged after the edge:"
        text += f"\nmean {error['mean']:.1%}, max {error['max']:.1%}"
        if error.get("settled"):
            settled = error["settled"]
            text += f"\nfrom 3σ after it: mean {settled['mean']:.1%}, max {settled['max']:.1%}"
        # lower left: below the first steps' loss, where GD's spikes (later) do not reach
        ax_l.text(0.02, 0.02, text, transform=ax_l.transAxes, ha="left", va="bottom",
                  fontsize=7, color="tab:red")  # fmt: skip
    stopped = (run.get("central_flow") or {}).get("stopped")
    if stopped:  # where and why the central flow ends, on the panels that draw it
        k = (run.get("central_flow") or {}).get("k", 1)
        sub = str(k + 1).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
        why = f"λ{sub} reaches 2/η" if "eigenvalue" in stopped["reason"] else "step budget"
        for ax in (ax_s, ax_l):
            ax.axvline(stopped["t"], color="tab:red", lw=0.8, ls="-.", zorder=0)
        ax_s.annotate(f"central flow (k = {k}) stops:\n{why}", (stopped["t"], 2 / eta),
                      xytext=(4, 12), textcoords="offset points", fontsize=7,
                      color="tab:red")  # fmt: skip
    ax_l.set_yscale("log")
    ax_l.set(xlabel=TIME, ylabel="training loss L (mean over points)", title="training loss")
    for name, (_, colour, ls) in FLOW_STYLE.items():
        if f"distance_{name}" in a:
            d = a[f"distance_{name}"]
            keep = d > 0
            ax_d.plot(t[: len(d)][keep], d[keep], color=colour, ls=ls, lw=1.4, **few)
    if "distance_gd_from_init" in a:  # the scale: how far GD itself moved
        moved = a["distance_gd_from_init"]
        keep = moved > 0
        bound_line(
            ax_d,
            t[: len(moved)][keep],
            moved[keep],
            color="0.3",
            ls="-.",
            label="‖w_GD(t) − w0‖: how far GD moved (the scale of the distances)",
        )
    ax_d.set_yscale("log")
    if t_flow[-1] > t_flow[0]:
        ax_d.set_xlim(t_flow[0], t_flow[-1])  # the requested horizon, even where GD stopped
    ax_d.set(xlabel=TIME, ylabel="‖w_GD(t) − w_flow(t)‖ (parameter units)",
             title="distance of GD from each flow")  # fmt: skip
    if run.get("t_edge") is not None:
        for ax in (ax_s, ax_l, ax_d):
            label = f"GD's S first at 2/η (t = {run['t_edge']:.3g})" if ax is ax_s else None
            ax.axvline(run["t_edge"], color="0.75", lw=0.8, zorder=0, label=label)
    if run.get("diverged"):
        d = run["diverged"]
        ax_l.set_title(f"training loss (GD diverged at step {d['step']})")
    notes = stop_notes(run)
    if notes:  # why a curve stops, or is absent: never an empty panel without a word
        text = "\n".join(textwrap.fill(n, 44) for n in notes)  # inside the panel
        ax_d.text(0.98, 0.72, text, transform=ax_d.transAxes, ha="right", va="top",
                  fontsize=7, color="0.2")  # fmt: skip
    handles, labels = [], []
    for ax in (ax_s, ax_l):
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    h, lab = ax_d.get_legend_handles_labels()
    handles, labels = handles + h, labels + lab
    figure_legend(fig, handles, labels, ncol=3)
    hover = (run.get("hover") or {}).get("median")
    claim = (
        f"GD at η = {eta:g} passes 2/η at t = {run['t_edge']:.3g} and stays about it "
        f"(S/(2/η) after: median {hover:.3g}, range {run['hover']['min']:.2g}–"
        f"{run['hover']['max']:.3g})"
        if run.get("t_edge") is not None and hover is not None
        else f"GD at η = {eta:g}: sharpness S against the edge 2/η = {2 / eta:.4g}"
    )
    if run.get("diverged") or (hover is not None and run["sharpness_initial"] > 2 / eta):
        # "passes 2/η at t = 0 and hovers there" was the title of a GD that diverged
        d = run.get("diverged")
        claim = f"GD at η = {eta:g}: " + "; ".join(
            ([f"diverges at step {d['step']} (t = {d['t']:.4g})"] if d else [])
            + [edge_phrase(run).replace("S0", "S(0)").replace("t=", "t = ")]
            + ([f"median S/(2/η) = {hover:.3g} after"] if hover is not None and not d else [])
        )
    fig.suptitle(claim + ("\n" + problem_line(config) if config else ""), fontsize=9)
    return fig


def stop_notes(run: dict) -> list[str]:
    """One short line per curve that stops before t1 or is absent, and why."""
    notes = []
    if run.get("diverged"):
        d = run["diverged"]
        notes.append(
            f"GD stops at step {d['step']} (t = {d['t']:.4g}): diverged; no distance after it"
        )
    for name, reason in (run.get("failed") or {}).items():
        notes.append(f"{FLOW_STYLE[name][0]}: not drawn, {_short(reason)}")
    for name in FLOW_STYLE:
        stopped = (run.get(name) or {}).get("stopped")
        if stopped:
            notes.append(f"{FLOW_STYLE[name][0]} stops at t = {stopped['t']:.4g}: "
                         f"{_short(stopped['reason'])}")  # fmt: skip
    return notes


def _short(reason: str, width: int = 110) -> str:
    return reason if len(reason) <= width else reason[: width - 1] + "…"


def cosine_figure(cosines):
    """cos(Δw_t, w_t − w_0) along GD, one line per η (tuples (η, t, cos[, t_edge[,
    diverged]])), each η's edge time (S first at 2/η) marked in its colour, with a note for
    each η whose GD stopped (diverged) and markers where only a few steps exist."""
    fig = new_figure(7.5, 4.6)
    ax = fig.subplots()
    colours = shades("viridis", len(cosines))
    notes = []
    for entry, colour in zip(cosines, colours):
        eta, t, cos = entry[:3]
        t_edge = entry[3] if len(entry) > 3 else None
        diverged = entry[4] if len(entry) > 4 else None
        few = {"marker": "o", "ms": 4} if len(t) < 5 else {}
        ax.plot(t, cos, color=colour, lw=0.8, label=f"η = {eta:g}", **few)
        if t_edge is not None:
            ax.axvline(t_edge, color=colour, lw=1.0, ls=":",
                       label=f"η = {eta:g}: S first at 2/η, t = {t_edge:.3g}")  # fmt: skip
        if diverged:
            notes.append(f"η = {eta:g}: GD diverged at step {diverged['step']}, "
                         f"{len(t)} update(s) drawn")  # fmt: skip
    if notes:
        ax.text(0.02, 0.02, "\n".join(notes), transform=ax.transAxes, fontsize=7,
                color="0.2", va="bottom")  # fmt: skip
    ax.axhline(0.0, color="0.7", lw=0.8, zorder=0)
    ax.set(xlabel=TIME, ylabel="cos(Δw_t, w_t − w_0) (dimensionless)")
    ax.set_title(
        "After GD reaches the edge of stability (dotted: S first at 2/η) its steps turn across "
        "its path where it oscillates:\nthe cosine of each update with the distance travelled "
        "drops towards 0",
        fontsize=9,
    )
    figure_legend(fig, ncol=2)
    return fig


def catapult_figure(c: dict, a: dict):
    """The uv model: ηλ_final against ηλ0, and the loss spike's height."""
    fig = new_figure(11.0, 4.2)
    ax_l, ax_s = fig.subplots(1, 2)
    x, ok = a["x"], ~a["diverged"]
    ax_l.plot(x[ok], a["eta_lam_final"][ok], "o", ms=3, color="k", label="GD, converged")
    grid = np.array([0.0, 4.5])
    ax_l.plot(grid, grid, color="0.6", lw=0.8, ls="--", label="ηλ_final = ηλ0 (λ unchanged)")
    for ax in (ax_l, ax_s):
        ax.axvline(2.0, color="tab:orange", lw=1.2, ls=":")
        ax.axvline(4.0, color="tab:purple", lw=1.2, ls=":")
    bound_line(ax_l, grid, [2.0, 2.0], label="ηλ = 2 (λ = 2/η)", color="tab:orange")
    if (~ok).any():
        ax_l.plot(x[~ok], np.full((~ok).sum(), 0.05), "x", color="tab:red", ms=4,
                  label="GD diverged (no final λ)")  # fmt: skip
    ax_l.set(xlabel="ηλ0 (dimensionless; dotted lines at 2 and 4)",
             ylabel="η·λ_final, final NTK λ times η",
             title=f"uv model (m = {c['m']}): final NTK after {c['steps']} steps")  # fmt: skip
    ax_s.plot(x[ok], a["spike"][ok], "o", ms=3, color="k")
    log_axis(ax_s, "y")
    ax_s.set(
        xlabel="ηλ0 (dimensionless; dotted lines at 2 and 4)",
        ylabel="loss spike max_k L_k / L_0 (dimensionless)",
        title="height of the loss spike",
    )
    figure_legend(fig, ncol=4)
    return fig
