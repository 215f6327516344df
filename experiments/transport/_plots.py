"""Figures of `gradflows run transport`, drawn from the run folder's arrays.npz and
results.json alone."""

import json
import os

import numpy as np

from .. import _plotting as P
from ._design import key

FIGURES = ("iterations_vs_eps", "sparsity_vs_eps", "plans", "particle_flow")


def _series(res, f, field):
    by_eps = res["cells"][f]
    eps = sorted(float(e) for e in by_eps)
    values = [by_eps[f"{e:g}"].get(field) if by_eps[f"{e:g}"]["converged"] else None for e in eps]
    return np.array(eps), np.array([np.nan if v is None else v for v in values], dtype=float)


def _falling_eps(res, config, field) -> dict:
    """{f: the converged cells' `field` values in the order of falling ε}."""
    out = {}
    for f in config["divergences"]:
        eps, values = _series(res, f, field)
        out[f] = values[::-1][np.isfinite(values[::-1])]
    return out


def _iterations_title(res, config) -> str:
    """The trend claim only where every f's iterations rise (or stay) as ε falls, over two ε
    at least; the claim was fixed text above any grid."""
    counts = _falling_eps(res, config, "iterations")
    what = "(KL: Sinkhorn pairs; the others: Newton steps)"
    shown = [v for v in counts.values() if len(v) >= 2]
    if shown and all(np.all(np.diff(v) >= 0) for v in shown):
        return f"Iterations grow as ε falls {what}"
    return f"Iterations to the tolerance against ε {what}"


def _sparsity_title(res, config) -> str:
    """Which plans hold exact zeros, from the converged cells: it said "χ² and triangular
    plans gain exact zeros as ε falls" over --eps 1,0.5, where every plan was dense."""
    fractions = _falling_eps(res, config, "nonzero_fraction")
    sparse = [f for f, v in fractions.items() if np.any(v < 1)]
    if not sparse:
        return "Every plan is dense at these ε (no exact zeros)"
    gain = all(len(fractions[f]) >= 2 and np.all(np.diff(fractions[f]) <= 0) for f in sparse)
    names = " and ".join(sparse)
    return f"{names} plans {'gain exact zeros as ε falls' if gain else 'have exact zeros'}" + (
        "; the others stay dense" if len(sparse) < len(fractions) else ""
    )


def _per_eps_figure(res, config, field, ylabel, title, log_y):
    fig = P.new_figure(6.4, 4.4)
    ax = fig.subplots()
    colors = P.shades("viridis", len(config["divergences"]), 0.0, 0.95)
    any_failed = drawn = False
    for k, (f, color) in enumerate(zip(config["divergences"], colors)):
        eps, values = _series(res, f, field)
        drawn = drawn or bool(np.isfinite(values).any())
        ax.plot(eps, values, "o-", color=color, label=f, markersize=4)
        failed = np.isnan(values)
        if failed.any():  # stacked at the top of the panel, in the colour of the f
            any_failed = True
            height = np.full(failed.sum(), 0.97 - 0.035 * k)
            ax.plot(eps[failed], height, "x", color=color, markersize=8,
                    transform=ax.get_xaxis_transform())  # fmt: skip
    if any_failed:  # the legend entry only where some cell failed
        budget = config["max_iters"]
        label = f"not converged in {budget} iterations\nper stage (height only\nseparates the f)"
        ax.plot([], [], "kx", label=label)
    ax.set_xscale("log")
    if log_y and drawn:  # no converged cell: a log axis of no data failed the whole run
        ax.set_yscale("log")
    if not drawn:
        ax.text(0.5, 0.5, "no (f, ε) cell converged: no values to draw", ha="center",
                transform=ax.transAxes)  # fmt: skip
        # the axis of no data ran from −0.04 to 0.05 under the title's claim of a trend
        ax.set_yticks([])
        title = f"{ylabel} against ε: no (f, ε) cell converged"
    ax.invert_xaxis()
    ax.set_xlabel("ε (units of the cost; c = ½|x − y|² ≤ 1 in the unit box)")
    ax.set_ylabel(ylabel)
    fig.suptitle(title, fontsize=10)
    P.legend_outside(ax)
    return fig


def _plans_figure(arrays, res, config):
    """Each plan as an image, rows and columns ordered by the first coordinate of the points,
    on a log scale; exact zeros white."""
    x, y = arrays["x"], arrays["y"]
    rows, cols = np.argsort(x[:, 0]), np.argsort(y[:, 0])
    fig = P.new_figure(4.0 * len(config["plans"]) + 0.8, 4.4)
    axes = fig.subplots(1, len(config["plans"]), squeeze=False)[0]
    eps = config["plan_eps"]
    image = None
    for ax, f in zip(axes, config["plans"]):
        name = key("plan", f)
        if name not in arrays:
            ax.set_title(f"{f}: not converged at ε = {eps:g}")
            ax.set_axis_off()  # was an empty 0–1 frame
            continue
        plan = arrays[name][np.ix_(rows, cols)]
        shown = np.ma.masked_equal(plan, 0.0)
        with np.errstate(divide="ignore"):
            image = ax.imshow(np.log10(shown / plan.max()), vmin=-12, vmax=0, cmap="viridis",
                              interpolation="nearest", aspect="auto")  # fmt: skip
        nnz = res["cells"][f][f"{eps:g}"]["nonzero_fraction"]
        ax.set_title(f"{f}: {100 * nnz:.1f}% of entries nonzero")
        ax.set_xlabel("j: target points y, by first coordinate")
        ax.set_ylabel("i: source points x, by first coordinate")
        ax.set_facecolor("white")
    if image is not None:
        fig.colorbar(image, ax=list(axes), label="log₁₀ π_ij / max π (white: exactly 0)")
    claim = "none converged"
    if image is not None:
        claim = "χ² has exact zeros, KL and Jeffreys are dense"
    fig.suptitle(f"Plans at ε = {eps:g}: {claim}", fontsize=10)
    return fig


def _flow_figure(arrays, res, config):
    names = config["flows"]
    fig = P.new_figure(4.0 * (len(names) + 1), 4.2)
    axes = fig.subplots(1, len(names) + 1, squeeze=False)[0]
    for ax, f in zip(axes, names):
        pos, ts, y = arrays[key("positions", f)], arrays[key("ts", f)], arrays[key("y", f)]
        shades = P.shades("plasma", len(ts), 0.0, 0.85)
        for k in (0, 2, 4, len(ts) - 1):
            ax.plot(*pos[k].T, ".", color=shades[k], markersize=4, label=f"x(t), t = {ts[k]:.2g}")
        ax.plot(*y.T, "k+", markersize=5, label="targets y")
        ax.set_title(f"{f}, ε = {config['flow_eps']:g}: particles at 4 times")
        ax.set_xlabel("x₁ (unit box)")
        ax.set_ylabel("x₂ (unit box)")
        ax.set_aspect("equal")
    handles, labels = axes[0].get_legend_handles_labels()
    ax = axes[-1]
    for f, marker in zip(names, ("o", "x", "s", "^")):
        mean, ts, y = arrays[key("mean", f)], arrays[key("ts", f)], arrays[key("y", f)]
        ax.plot(ts, np.linalg.norm(mean - y.mean(0), axis=1), marker, markersize=8,
                markerfacecolor="none", label=f"|x̄(t) − ȳ|, {f}")  # fmt: skip
    m0 = np.linalg.norm(arrays[key("mean", names[0])][0] - arrays[key("y", names[0])].mean(0))
    tt = np.linspace(0, float(ts[-1]), 50)
    ax.plot(tt, m0 * np.exp(-tt), "k--", label="|x̄(0) − ȳ| e^{−t} (exact, not fitted)")
    ax.set_yscale("log")
    ax.set_xlabel("flow time t")
    ax.set_ylabel("|x̄(t) − ȳ| (unit box)")
    errors = ", ".join(f"{f} {res['flows'][f]['mean_error']:.0e}" for f in names)
    ax.set_title(f"mean − e^(−t) law: max error {errors}", fontsize=9)
    more_h, more_l = ax.get_legend_handles_labels()
    P.figure_legend(fig, handles + more_h, labels + more_l, ncol=4)
    fig.suptitle(
        "Particle flows ẋ_i = −n ∇_{x_i} OT_ε,f: the mean decays exactly as e^(−t)", fontsize=10
    )
    return fig


def plot(folder: str) -> list[str]:
    """Draw the figures from `arrays.npz`, `results.json` and `config.json` in the run
    folder, in the run's `--format`; returns the files written."""
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as fh:
        config = json.load(fh)
    with open(os.path.join(folder, "results.json"), encoding="utf-8") as fh:
        res = json.load(fh)
    with np.load(os.path.join(folder, "arrays.npz"), allow_pickle=False) as saved:
        arrays = {k: saved[k] for k in saved.files}
    figures = {
        "iterations_vs_eps": _per_eps_figure(
            res, config, "iterations", "iterations to the tolerance (all ε stages)",
            _iterations_title(res, config), True,
        ),
        "sparsity_vs_eps": _per_eps_figure(
            res, config, "nonzero_fraction", "fraction of nonzero entries of π",
            _sparsity_title(res, config), False,
        ),
        "plans": _plans_figure(arrays, res, config),
        "particle_flow": _flow_figure(arrays, res, config),
    }  # fmt: skip
    written = []
    for name, fig in figures.items():
        path = os.path.join(folder, f"{name}.{config['format']}")
        P.save_figure(fig, path)
        written.append(path)
    return written
