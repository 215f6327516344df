"""Portrait 2: streamlines of −∇F over level sets, and exact flows (F_α against F̄_α)."""

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike
from matplotlib import colors
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

import flows
import models

from ._checks import _bounds, _grid_size, _integer, _point, _points, _positive, _positives
from ._drawing import (
    Portrait,
    _bar_ticks,
    _colours,
    _figure,
    _finish,
    _flow_panel,
    _legend,
    _mark,
    _marker_handles,
    _paths,
)
from ._numerics import _axes, _Descent, _flows, _on_grid, _path_lengths, _Plain, _straightness
from ._toys import _at, _formula, _network


@dataclasses.dataclass(frozen=True)
class ScaledObjective:
    """F_α(w) = R(α·h(w))/α² for a two-weight model h, or F̄_α with h̄ = linearisation at w0.

    Called as `F(w, args)` with `args = {"alpha": α, "w0": (2,), "target": y*}` (arrays, so a
    new α, w0 or target reuses the compilation). Hashable, compared by value.

    **Fields:**

    - `model`: f, a function of `w`, shape `(2,)`, returning a scalar.
    - `loss`: a `flows` loss object, R(y) = loss(y, y*) on one row.
    - `centred`: h = f − f(w0) (`models.symmetrize(…, "centred")`), so that h(w0) = 0.
    - `linearized`: use h̄ (`models.linearize`) instead of h.

    **Reference:** Chizat, Oyallon & Bach 2019, §2 (F_α and F̄_α).
    """

    model: Callable
    loss: Any
    centred: bool = True
    linearized: bool = False

    def __call__(self, w, args):
        h = _network(self.model, args["w0"], self.centred)
        if self.linearized:
            h = models.linearize(h)
        alpha = args["alpha"]
        prediction = alpha * jnp.reshape(_at(h, w)(None), (1,))
        return self.loss(prediction, jnp.reshape(args["target"], (1,))) / alpha**2


def _solve_columns(objectives, columns, *, t1, n_times, grid, settings):
    """For each column (bounds, starts, args): values, fields and flows of each objective."""
    out = {"w1": [], "w2": [], "values": [], "fields": [], "paths": [], "stats": []}
    ts = None
    for bounds, starts, args in columns:
        w1, w2 = _axes(bounds, grid)
        out["w1"].append(w1)
        out["w2"].append(w2)
        out["values"].append([_on_grid(F, w1, w2, args) for F in objectives])
        out["fields"].append([_on_grid(_Descent(F), w1, w2, args) for F in objectives])
        paths, ts, stats, config = _flows(
            objectives, starts, t1, args, n_times=n_times, settings=settings
        )
        out["paths"].append(paths)
        out["stats"].append(stats)
    data = {
        "w1": np.stack(out["w1"]),
        "w2": np.stack(out["w2"]),
        "values": np.stack(out["values"]),  # (k, K, G, G)
        "fields": np.stack(out["fields"]),  # (k, K, G, G, 2)
        "paths": np.stack(out["paths"]),  # (k, K, S, T, 2)
        "ts": ts,
        "rtol": np.array(config["rtol"]),
        "atol": np.array(config["atol"]),
        "solver": np.array(config["solver"]),
        "num_steps": np.array([s["num_steps"] for s in out["stats"]]),
    }
    return data


_DEFAULT_OFFSETS = np.array([[0.0, 0.0], [-0.7, 0.6], [0.65, -0.7], [-0.6, -0.75], [0.7, 0.7]])


def draw_flows(data: dict) -> Figure:
    """Draw `flow_portrait`'s or `lazy_flow_portrait`'s data: one column per window (α), one
    row per objective (its level sets and −∇ field); every panel shows the flows of all
    objectives (solid: first, dashed: second)."""
    values, fields, paths = (np.asarray(data[k]) for k in ("values", "fields", "paths"))
    n_cols, n_rows = values.shape[:2]
    lazy = str(data["kind"]) == "lazy_flows"
    if lazy:  # the claim is about the paths: one row (F_α's field) carries both objectives'
        n_rows = 1
    labels = [str(s) for s in np.asarray(data["labels"]).ravel()]
    vmax = float(np.quantile(values, 0.98)) or 1.0
    vmin = float(min(values.min(), 0.0))
    norm = (
        colors.PowerNorm(0.5, vmin=vmin, vmax=vmax) if vmin == 0 else colors.Normalize(vmin, vmax)
    )
    fig = _figure(4.3 * n_cols + 1.2, 4.0 * n_rows + (1.6 if lazy else 0.9))
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    styles = ("-", "--")
    for k in range(n_cols):
        w1, w2 = np.asarray(data["w1"][k]), np.asarray(data["w2"][k])
        starts = np.asarray(data["starts"][k])
        cols = _colours(len(starts))
        for j in range(n_rows):
            ax = axes[j, k]
            cs = _flow_panel(ax, w1, w2, values[k, j], fields[k, j], norm)
            for i in range(paths.shape[1]):
                _paths(ax, paths[k, i], cols, styles[i])
            _mark(ax, np.asarray(data["w0"][k]) if "w0" in data else None, starts, cols)
            if k == 0 and not lazy:  # the row's objective, once, beside the row
                ax.set_ylabel(f"−∇{labels[j]}\n{ax.get_ylabel()}")
            title = str(data["column_titles"][k]) if j == 0 else ""
            if lazy and "weight_gap" in data:  # the path from w0 ★, the one the claim is on
                title += (
                    f"\npath from w0 ★: length {data['path_length'][k, 0, 0]:.2g}, chord/length "
                    f"{data['straightness'][k, 0, 0]:.3f},\nmax_t ‖w_α − w̄_α‖ = "
                    f"{data['weight_gap'][k, 0]:.2g}"
                )
            if title:
                ax.set_title(title, fontsize=9)
        if "weight_gap" in data and not lazy:
            # below the column, one line: the paths reach every corner, so not over a panel
            axes[-1, k].set_title(
                f"from w0: length {data['path_length'][k, 0, 0]:.2g}, chord/length "
                f"{data['straightness'][k, 0, 0]:.3f}, "
                f"max_t ‖w − w̄‖ {data['weight_gap'][k, 0]:.2g}",
                fontsize=9,
            )
    bar = fig.colorbar(cs, ax=axes, label=str(data["value_label"]), shrink=0.8)
    _bar_ticks(bar, vmin, vmax)
    handles = [
        Line2D([], [], color="k", ls=styles[i], lw=2, label=f"exact flow of {labels[i]}")
        for i in range(paths.shape[1])
    ]
    _legend(fig, handles + _marker_handles(with_w0="w0" in data))
    if lazy:
        fig.suptitle(
            "As α grows the flows of F_α (solid) and of its linearisation F̄_α (dashed) shorten, "
            "straighten and coincide: the lazy regime\n"
            f"F_α(w) = R(α·h(w))/α² (level sets, −∇F_α streamlines), {data['model']}, target "
            f"y* = {float(data['target']):g}; h̄ = linearisation at w0 ★; window w0 ± ρ/α",
            fontsize=10,
        )
    return fig


def flow_portrait(
    objective: Callable,
    starts: ArrayLike,
    bounds: ArrayLike,
    *,
    compare: Callable | None = None,
    t1: float = 10.0,
    n_times: int = 200,
    grid: int = 41,
    settings: flows.SolveSettings | None = None,
    labels: Sequence[str] = ("F", "F̄"),
    path: str | None = None,
    draw: bool = True,
) -> Portrait:
    """The gradient flow of any objective of two weights, drawn over its level sets.

    Filled level sets of F, streamlines of −∇F, and exact flows w' = −∇F(w) from each start
    (`flows.gradient_flow`, Tsit5, one solve for all starts). With `compare`, a second row
    shows the field of the second objective, and every panel shows its flows dashed.

    **Arguments:**

    - `objective`: F, a JAX-traceable function of `w`, shape `(2,)` = (w1, w2), returning a
      scalar. Passing the same function object again reuses the compilation.
    - `starts`: starting points, shape `(S, 2)`.
    - `bounds`: the window (w1_min, w1_max, w2_min, w2_max).
    - `compare`: optional second objective (e.g. a linearised one), same signature.
    - `t1`: flow time of every trajectory (> 0).
    - `n_times`: saved points per trajectory (log-spaced in t, plus t = 0), an integer >= 3.
    - `grid`: grid points per axis for level sets and streamlines.
    - `settings`: the solve's `flows.SolveSettings` (tolerances, step budget; default
      `flows.SolveSettings()`), always with Tsit5.
    - `labels`: names of the objectives in titles and legend.
    - `path`: if given, save the figure there (.png, .svg or .pdf).
    - `draw`: draw the figure; with `False` only `data` is computed (`figure` is None).

    **Returns:**

    A `Portrait`; `data["paths"]` has shape `(1, K, S, T, 2)` (K = 1 or 2 objectives) at
    times `data["ts"]` `(T,)`; `values (1, K, G, G)`, `fields (1, K, G, G, 2)` (= −∇F) on
    the grid `w1 (1, G)`, `w2 (1, G)`.

    **Raises:**

    `ValueError` naming the argument (`starts`, `bounds`, `t1`, `grid`); `flows.MaxStepsReached`
    or `FloatingPointError` from the solver.

    **Reference:** gradient flow dw/dt = −∇F(w) (Chizat, Oyallon & Bach 2019, §2).
    """
    starts = _points("starts", starts)
    bounds = _bounds(bounds)
    objectives = (_Plain(objective),) + (() if compare is None else (_Plain(compare),))
    data = _solve_columns(
        objectives,
        [(bounds, starts, None)],
        t1=_positive("t1", t1),
        n_times=_integer("n_times", n_times, 3),
        grid=_grid_size(grid),
        settings=settings,
    )
    data.update(
        kind=np.array("flows"),
        bounds=bounds[None],
        starts=starts[None],
        labels=np.array(list(labels)[: len(objectives)]),
        column_titles=np.array([""]),
        value_label=np.array(", ".join(f"{name}(w)" for name in list(labels)[: len(objectives)])),
        straightness=_straightness(data["paths"]),
        path_length=_path_lengths(data["paths"]),
    )
    return _finish(data, draw_flows, path, draw)


def lazy_flow_portrait(
    model: Callable,
    w0: ArrayLike,
    target: float = 1.0,
    *,
    alphas: Sequence[float] = (0.1, 1.0, 10.0),
    radius: float = 2.0,
    offsets: ArrayLike | None = None,
    loss: Any = "squared",
    centred: bool = True,
    t1: float = 10.0,
    n_times: int = 200,
    grid: int = 41,
    settings: flows.SolveSettings | None = None,
    path: str | None = None,
    draw: bool = True,
) -> Portrait:
    """Flow fields of F_α and F̄_α in the (w1, w2) plane, one column per α.

    F_α(w) = R(α·h(w))/α² and F̄_α(w) = R(α·h̄(w))/α², with h̄ the linearisation at w0
    (`models.linearize`) and R(y) = loss(y, y*). Top row: level sets of α²F_α and streamlines
    of −∇F_α; bottom row: the same for F̄_α. In every panel, exact flows of F_α (solid) and
    F̄_α (dashed) from starts w0 + (ρ/α)·offsets. The window is w0 ± ρ/α: the O(1/α)
    neighbourhood of Thm 2.2. As α grows, the flows shorten like 1/α, straighten, and the
    solid and dashed paths coincide (weight gap O(1/α²)).

    **Arguments:**

    - `model`: f, a JAX-traceable function of `w`, shape `(2,)`, returning a scalar (e.g.
      `TwoWeightNet("tanh")`); hashable objects reuse compilations across calls.
    - `w0`: the initialisation and linearisation point, shape `(2,)`.
    - `target`: the scalar target y*.
    - `alphas`: the scales α > 0, one column each.
    - `radius`: ρ, the window half-width times α.
    - `offsets`: starting points relative to w0 in units of ρ/α, shape `(S, 2)`; default five
      points, w0 itself first.
    - `loss`: a `flows` loss or its name ("squared": R(y) = ½(y − y*)²).
    - `centred`: h = f − f(w0) (`models.symmetrize(…, "centred")`) so that h(w0) = 0, as the
      theorems assume; with `False`, h = f (then α·f(w0) grows with α and the flow is not lazy
      unless f(w0) = 0).
    - `t1`, `n_times`, `grid`, `settings`: as in `flow_portrait`.
    - `path`: if given, save the figure there (.png, .svg or .pdf).
    - `draw`: draw the figure; with `False` only `data` is computed (`figure` is None).

    **Returns:**

    A `Portrait`; its `data` has `alphas (k,)`, `paths (k, 2, S, T, 2)` ([:, 0] flows of F_α,
    [:, 1] of F̄_α), `ts (T,)`, `values (k, 2, G, G)` = α²F_α, α²F̄_α, `fields (k, 2, G, G, 2)`
    = −∇F_α, −∇F̄_α, `path_length` and `straightness` (chord/length) `(k, 2, S)`, and
    `weight_gap (k, S)` = max_t ‖w_α(t) − w̄_α(t)‖.

    **Raises:**

    `ValueError` naming the argument; `flows.MaxStepsReached` or `FloatingPointError` from the
    solver.

    **Reference:** Chizat, Oyallon & Bach 2019, Thm 2.2 (‖w_α − w0‖ = O(1/α),
    ‖w_α − w̄_α‖ = O(1/α²) on finite horizons).
    """
    w0 = _point("w0", w0)
    alphas = _positives("alphas", alphas)
    radius = _positive("radius", radius)
    target = float(target)
    if not np.isfinite(target):
        raise ValueError(f"target must be a finite number, got {target!r}")
    offsets = _points("offsets", _DEFAULT_OFFSETS if offsets is None else offsets)
    R = flows.get_loss(loss)
    objectives = (
        ScaledObjective(model, R, centred, False),
        ScaledObjective(model, R, centred, True),
    )
    columns = []
    for alpha in alphas:
        r = radius / alpha
        bounds = np.array([w0[0] - r, w0[0] + r, w0[1] - r, w0[1] + r])
        args = {"alpha": alpha, "w0": w0, "target": target}
        columns.append((bounds, w0 + r * offsets, args))
    data = _solve_columns(
        objectives,
        columns,
        t1=_positive("t1", t1),
        n_times=_integer("n_times", n_times, 3),
        grid=_grid_size(grid),
        settings=settings,
    )
    # Colour by α²F_α = R(α h(w)): the same scale in every column.
    data["values"] = data["values"] * (alphas**2)[:, None, None, None]
    paths = data["paths"]
    data.update(
        kind=np.array("lazy_flows"),
        model=np.array(
            f"h(w) = f(w) − f(w0), {_formula(model)}" if centred else f"h(w) = {_formula(model)}"
        ),
        w0=np.tile(w0, (len(alphas), 1)),
        alphas=alphas,
        target=np.array(target),
        radius=np.array(radius),
        bounds=np.stack([c[0] for c in columns]),
        starts=np.stack([c[1] for c in columns]),
        labels=np.array(["F_α (network)", "F̄_α (linearised at w0)"]),
        column_titles=np.array(
            [f"α = {a:g}, window ±{radius:g}/α = ±{radius / a:.3g}" for a in alphas]
        ),
        value_label=np.array("α²·F_α = R(α·h(w)), R(y) = loss(y, y*)"),
        straightness=_straightness(paths),  # (k, 2, S)
        path_length=_path_lengths(paths),  # (k, 2, S)
        weight_gap=np.max(np.linalg.norm(paths[:, 0] - paths[:, 1], axis=-1), axis=-1),  # (k, S)
    )
    return _finish(data, draw_flows, path, draw)
