"""Portrait 3: exact flows on the level sets of a conserved quantity, and gradient descent
leaving them."""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike
from matplotlib import colors
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

import flows

from .. import _plotting
from ._checks import _bounds, _grid_size, _integer, _point, _points, _positive
from ._drawing import (
    Portrait,
    _bar_ticks,
    _colours,
    _figure,
    _finish,
    _label_axes,
    _legend,
    _nice_levels,
    _paths,
)
from ._numerics import _axes, _flows, _gradient_descent, _on_grid, _Plain
from ._toys import _formula, balancedness


def draw_conservation(data: dict) -> Figure:
    """Draw `conservation_portrait`'s data: the (w1, w2) plane with level sets of the loss
    (filled) and of the invariant through each start (dotted), exact flows (solid) and gradient
    descent (dots); and the invariant's change along each path against flow time."""
    w1, w2 = np.asarray(data["w1"]), np.asarray(data["w2"])
    paths, starts, gd = (
        np.asarray(data["paths"]),
        np.asarray(data["starts"]),
        np.asarray(data["gd"]),
    )
    q_label, eta = str(data["invariant_label"]), float(data["eta"])
    cols = _colours(len(starts))
    fig = _figure(13.5, 6.2)
    ax, ax_q = fig.subplots(1, 2, width_ratios=[1.15, 1])
    value = np.asarray(data["value"])
    vmax = float(np.quantile(value, 0.95)) or 1.0
    levels = colors.PowerNorm(0.5, vmin=0, vmax=vmax).inverse(np.linspace(0, 1, 17))
    cs = ax.contourf(w1, w2, value, levels=levels, cmap="Blues", alpha=0.6, extend="max")
    bar = fig.colorbar(cs, ax=ax, label=f"loss {data['model']}", shrink=0.85)
    _bar_ticks(bar, 0.0, vmax)
    Q = np.asarray(data["invariant"])
    ax.contour(
        w1,
        w2,
        Q,
        levels=_nice_levels(Q.min(), Q.max(), 8),
        colors="0.6",
        linewidths=0.4,
        linestyles="-",
    )
    for q, c in zip(data["invariant_paths"][:, 0], cols):
        ax.contour(w1, w2, Q, levels=[q], colors=[c], linewidths=1.0, linestyles=":")
    _paths(ax, paths, cols, "-")
    for s, c in zip(starts, cols):
        ax.plot(*s, "o", color=c, ms=6, mec="white", mew=0.8, zorder=5)
    q_gd = np.asarray(data["invariant_gd"])
    ax.contour(w1, w2, Q, levels=[q_gd[0]], colors=["k"], linewidths=1.4, linestyles=":")
    ax.plot(gd[:, 0], gd[:, 1], "-", color="k", lw=0.9, zorder=6)
    ax.plot(gd[:, 0], gd[:, 1], "o", color="k", ms=4.5, mec="white", mew=0.7, zorder=7)
    ax.set_xlim(w1[0], w1[-1])
    ax.set_ylim(w2[0], w2[-1])
    ax.set_aspect("equal")
    _label_axes(ax)
    ax.set_title(
        f"Exact flows stay on their hyperbola {q_label} = const;\n"
        f"gradient descent with step η = {eta:g} (black dots) leaves its own",
        fontsize=10,
    )
    ts, gd_ts = np.asarray(data["ts"]), np.asarray(data["gd_ts"])
    drift = np.abs(np.asarray(data["invariant_paths"]) - np.asarray(data["invariant_paths"])[:, :1])
    floor = 1e-17
    for d, c in zip(drift, cols):
        ax_q.plot(ts[1:], np.maximum(d[1:], floor), "-", color=c, lw=1.8)
    ax_q.plot(
        gd_ts[1:],
        np.maximum(np.abs(q_gd[1:] - q_gd[0]), floor),
        "o-",
        color="k",
        ms=4.5,
        lw=1.0,
    )
    _plotting.log_axis(ax_q)
    ax_q.autoscale_view()
    # |Δ(w1² − w2²)| cannot be resolved below the round-off of w1² + w2² along the paths
    scale = float(np.max(paths[..., 0] ** 2 + paths[..., 1] ** 2))
    _plotting.roundoff_floor(
        ax_q, ts[1:], 10 * _plotting.EPS * scale, label="round-off: 10ε·max(w1² + w2²)"
    )
    _plotting.bound_line(
        ax_q,
        ts[[1, -1]],
        [float(data["rtol"]) * scale] * 2,
        label=f"rtol·max(w1² + w2²), rtol = {float(data['rtol']):g} (the solver's tolerance)",
    )
    ax_q.set_xlabel("flow time t (a gradient-descent step η covers time η)")
    ax_q.set_ylabel(f"|Δ({q_label})| since t = 0")
    ax_q.set_title(
        f"Change of {q_label} along each path\n"
        f"exact flows (Tsit5, rtol {float(data['rtol']):g}) vs gradient descent (η = {eta:g})",
        fontsize=10,
    )
    ax_q.grid(True, which="major", alpha=0.3)
    handles = [
        Line2D([], [], color="k", lw=2, label="exact gradient flow"),
        Line2D(
            [], [], color="k", marker="o", mec="white", lw=1, label=f"gradient descent, η = {eta:g}"
        ),
        Line2D([], [], color="k", lw=1, ls=":", label=f"{q_label} = its value at the start"),
        Line2D([], [], marker="o", ls="", color="grey", mec="white", ms=6, label="starting point"),
        ax_q.get_lines()[-1],
        ax_q.collections[-1],
    ]
    _legend(fig, handles, ncol=3)
    fig.suptitle(
        f"{data['model']}: {q_label} is conserved by the exact flow, not by gradient descent",
        fontsize=12,
    )
    return fig


def conservation_portrait(
    objective: Callable,
    invariant: Callable,
    starts: ArrayLike,
    bounds: ArrayLike,
    *,
    eta: float = 0.3,
    gd_start: ArrayLike | None = None,
    gd_steps: int = 12,
    t1: float = 20.0,
    n_times: int = 200,
    grid: int = 81,
    settings: flows.SolveSettings | None = None,
    invariant_label: str | None = None,
    path: str | None = None,
    draw: bool = True,
) -> Portrait:
    """Exact flows on the level sets of a conserved quantity, and gradient descent leaving them.

    Left: level sets of F (filled) and of the invariant Q (thin; dotted through each start),
    exact flows of F from each start (`flows.gradient_flow`), and gradient descent
    w ← w − η∇F(w) from `gd_start` (dots; a discrete algorithm, not an ODE solver). Right:
    |Q(w(t)) − Q(w(0))| against flow time t (step k of gradient descent at t = kη).

    **Arguments:**

    - `objective`: F, a JAX-traceable function of `w`, shape `(2,)`, returning a scalar.
    - `invariant`: Q, a function of `w` returning a scalar, conserved by the flow of F (e.g.
      `balancedness`, w1² − w2², for `ScalarLinearNet`).
    - `starts`: starting points of the flows, shape `(S, 2)`.
    - `bounds`: the window (w1_min, w1_max, w2_min, w2_max).
    - `eta`: gradient-descent step (> 0); one step covers flow time η.
    - `gd_start`: starting point of gradient descent, shape `(2,)`; default `starts[0]`.
    - `gd_steps`: number of gradient-descent steps.
    - `t1`, `n_times`, `grid`, `settings`: as in `flow_portrait`.
    - `invariant_label`: Q's name in titles; default "w1² − w2²" for `balancedness`, else
      "Q(w)".
    - `path`: if given, save the figure there (.png, .svg or .pdf).
    - `draw`: draw the figure; with `False` only `data` is computed (`figure` is None).

    **Returns:**

    A `Portrait`; its `data` has `paths (S, T, 2)` at `ts (T,)`, `invariant_paths (S, T)`,
    `gd (N + 1, 2)`, `invariant_gd (N + 1,)`, and the grids `value`, `invariant` `(G, G)`.

    **Raises:**

    `ValueError` naming the argument; `FloatingPointError` if gradient descent diverges;
    `flows.MaxStepsReached` from the solver.

    **Reference:** Du, Hu & Lee 2018, Thm 2.1 (balancedness is conserved by the flow); for
    f = w2·w1·x and R = ½(f − y*)², one step of gradient descent multiplies w1² − w2² by
    1 − η²r²x², r = f − y*.
    """
    starts = _points("starts", starts)
    bounds = _bounds(bounds)
    eta = _positive("eta", eta)
    gd_start = starts[0] if gd_start is None else _point("gd_start", gd_start)
    gd_steps = _integer("gd_steps", gd_steps, 1)
    w1, w2 = _axes(bounds, _grid_size(grid))
    F, Q = _Plain(objective), _Plain(invariant)
    paths, ts, stats, config = _flows(
        (F,),
        starts,
        _positive("t1", t1),
        None,
        n_times=_integer("n_times", n_times, 3),
        settings=settings,
    )
    paths = paths[0]
    gd = _gradient_descent(objective, gd_start, eta, int(gd_steps))
    on_path = jax.jit(jax.vmap(lambda w: Q(w, None)))
    data = {
        "kind": np.array("conservation"),
        "bounds": bounds,
        "w1": w1,
        "w2": w2,
        "value": _on_grid(F, w1, w2),
        "invariant": _on_grid(Q, w1, w2),
        "starts": starts,
        "paths": paths,  # (S, T, 2)
        "ts": ts,
        "invariant_paths": np.asarray(on_path(jnp.asarray(paths.reshape(-1, 2)))).reshape(
            paths.shape[:2]
        ),
        "eta": np.array(eta),
        "gd": gd,  # (N + 1, 2)
        "gd_ts": eta * np.arange(len(gd)),
        "invariant_gd": np.asarray(on_path(jnp.asarray(gd))),
        "rtol": np.array(config["rtol"]),
        "atol": np.array(config["atol"]),
        "solver": np.array(config["solver"]),
        "num_steps": np.array(stats["num_steps"]),
        "model": np.array(_formula(objective, "F(w)")),
        "invariant_label": np.array(
            invariant_label or ("w1² − w2²" if invariant is balancedness else "Q(w)")
        ),
    }
    return _finish(data, draw_conservation, path, draw)
