"""Phase portraits in the plane of two weights: surfaces, flow fields, conservation laws.

Every portrait is computed in two steps: the public `*_portrait` function computes a dict of
numpy arrays (what a run folder saves as `.npz`; `draw=False` stops there), and a `draw_*`
function turns such a dict into a matplotlib Figure (object-oriented API, Agg canvas, no
pyplot state), so a figure can be redrawn from saved data.

Trajectories are exact gradient flows from `flows.gradient_flow`. All starting points (and
the flows of both objectives being compared) are integrated as one product system: the loss
Σ_k Σ_s F_k(w_ks) is separable, so each block follows its own flow w' = −∇F_k(w), and one
compilation serves them all. Arrays such as α, w0 and the target travel inside a `Frozen`
leaf, so changing them reuses the compilation.
"""

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike
from matplotlib import colors, ticker
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

import flows
import models

# Colours of the starting points; colour-blind-safe (Okabe–Ito).
_START_COLOURS = ("#d55e00", "#0072b2", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000")


class Portrait(NamedTuple):
    """A portrait: `figure` (a matplotlib `Figure` on an Agg canvas; `None` when called with
    `draw=False`) and `data` (`{name: numpy array}`: the grids, surfaces, fields and
    trajectories that were drawn; `np.savez`-able, and redrawn by the matching `draw_*`)."""

    figure: Figure | None
    data: dict


# ----------------------------------------------------------------------------- models


@dataclasses.dataclass(frozen=True)
class TwoWeightNet:
    """The seed's toy network f(w) = w2·σ(w1·x) at a fixed input x; hashable, compared by value.

    **Arguments:**

    - `activation`: a name accepted by `models.activation` ("tanh", "gelu", "softplus", …) or
      an elementwise callable. Use a smooth one: the linearisation needs Dh locally Lipschitz.
    - `x`: the input (a float).

    Calling it on `w`, shape `(2,)` = (w1, w2), returns the scalar output.

    **Reference:** Chizat, Oyallon & Bach 2019, §1 (the two-weight picture of lazy training).
    """

    activation: Any = "tanh"
    x: float = 1.0

    def __call__(self, w: Array) -> Array:
        sigma = models.activation(self.activation)
        return w[1] * sigma(w[0] * self.x)

    @property
    def formula(self) -> str:
        name = self.activation if isinstance(self.activation, str) else "σ"
        return f"w2·{name}(w1·{self.x:g})"


@dataclasses.dataclass(frozen=True)
class ScalarLinearNet:
    """The two-layer scalar linear net f(w) = w2·w1·x; hashable, compared by value.

    Under gradient flow of any loss of f, w1² − w2² is conserved.

    **Reference:** Du, Hu & Lee 2018 (balancedness of homogeneous layers); Saxe, McClelland &
    Ganguli 2014 (deep linear networks).
    """

    x: float = 1.0

    def __call__(self, w: Array) -> Array:
        return w[1] * w[0] * self.x

    @property
    def formula(self) -> str:
        return f"w2·w1·{self.x:g}"


@dataclasses.dataclass(frozen=True)
class ModelLoss:
    """F(w) = R(f(w)) = loss(f(w), y*) for a two-weight model f and a scalar target y*;
    hashable, compared by value (so equal objectives share one compilation).

    **Fields:** `model` (f, a function of `w`, shape `(2,)`, returning a scalar), `target`
    (y*, a float), `loss` (a `flows` loss object or name; default ½(y − y*)²).
    """

    model: Callable
    target: float = 1.0
    loss: Any = "squared"

    @property
    def formula(self) -> str:
        if self.loss == "squared":
            return f"½({getattr(self.model, 'formula', 'f(w)')} − {self.target:g})²"
        return f"R({getattr(self.model, 'formula', 'f(w)')}), y* = {self.target:g}"

    def __call__(self, w: Array) -> Array:
        prediction = jnp.reshape(self.model(w), (1,))
        return flows.get_loss(self.loss)(prediction, jnp.full((1,), self.target))


def balancedness(w: Array) -> Array:
    """w1² − w2², the conserved quantity of `ScalarLinearNet` flows (shape `(2,)` → scalar)."""
    return w[0] ** 2 - w[1] ** 2


class _TwoWeights(eqx.Module):
    """A model with one trainable leaf `w` (shape (2,)); the input is ignored."""

    w: Array
    fn: Callable = eqx.field(static=True)

    def __call__(self, x=None) -> Array:
        return jnp.reshape(self.fn(self.w), ())


def _formula(model: Callable, name: str = "f(w)") -> str:
    """ "f(w) = <model.formula>" if the model has a formula, else "f(w)"."""
    formula = getattr(model, "formula", None)
    return f"{name} = {formula}" if isinstance(formula, str) else name


def _at(module: eqx.Module, w: Array) -> eqx.Module:
    """`module` with its single trainable leaf replaced by `w`."""
    trainable, static = models.partition(module)
    leaves, treedef = jax.tree.flatten(trainable)
    return eqx.combine(jax.tree.unflatten(treedef, [w] * len(leaves)), static)


def _network(model: Callable, w0: Array, centred: bool) -> eqx.Module:
    net = _TwoWeights(w0, model)
    return models.symmetrize(net, "centred") if centred else net


def _evaluate(module: eqx.Module) -> Callable:
    return lambda w: jnp.reshape(_at(module, w)(None), ())


def linearized(model: Callable, w0: ArrayLike, *, centred: bool = False) -> Callable:
    """The linearisation f̄(w) = f(w0) + ∇f(w0)·(w − w0) of a two-weight model, as a function.

    Built with `models.linearize` on a one-leaf equinox module (a single `jax.jvp`; no
    Jacobian is formed), so it is differentiable and vmappable like `model` itself.

    **Arguments:**

    - `model`: f, any JAX-traceable function of `w`, shape `(2,)`, returning a scalar.
    - `w0`: the linearisation point, shape `(2,)`.
    - `centred`: linearise g(w) = f(w) − f(w0) instead (`models.symmetrize(…, "centred")`),
      so that g(w0) = 0 as Chizat et al.'s theorems assume.

    **Returns:**

    f̄ (or ḡ): a function of `w`, shape `(2,)`, returning a scalar.

    **Raises:**

    `ValueError` if `w0` is not a finite array of shape `(2,)`.

    **Reference:** Chizat, Oyallon & Bach 2019, §1 (h̄(w) = h(w0) + Dh(w0)(w − w0)).
    """
    w0 = _point("w0", w0)
    return _evaluate(models.linearize(_network(model, jnp.asarray(w0), centred)))


# ----------------------------------------------------------------------------- checks


def _point(name: str, value) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.shape != (2,) or not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be a finite array of shape (2,), got {value!r}")
    return array


def _points(name: str, value) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 2 or len(array) < 1:
        raise ValueError(f"{name} must have shape (S, 2) with S >= 1, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite")
    return array


def _positive(name: str, value) -> float:
    number = float(value)
    if not (np.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return number


def _positives(name: str, values) -> np.ndarray:
    array = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if array.ndim != 1 or len(array) < 1 or not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError(f"{name} must be one or more finite numbers > 0, got {values!r}")
    return array


def _grid_size(grid) -> int:
    if isinstance(grid, bool) or int(grid) != grid or int(grid) < 5:
        raise ValueError(f"grid must be an integer >= 5, got {grid!r}")
    return int(grid) | 1  # odd, so that the centre of a centred window is a grid point


def _bounds(value) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.shape != (4,) or not np.all(np.isfinite(array)):
        raise ValueError(f"bounds must be (w1_min, w1_max, w2_min, w2_max), got {value!r}")
    if not (array[0] < array[1] and array[2] < array[3]):
        raise ValueError(f"bounds must have w1_min < w1_max and w2_min < w2_max, got {value!r}")
    return array


# ----------------------------------------------------------------------------- numerics


def _axes(bounds: np.ndarray, grid: int) -> tuple[np.ndarray, np.ndarray]:
    return np.linspace(bounds[0], bounds[1], grid), np.linspace(bounds[2], bounds[3], grid)


def _grid(w1: np.ndarray, w2: np.ndarray) -> Array:
    """Points of the grid, shape (G2, G1, 2); entry [i, j] is (w1[j], w2[i]) (matplotlib's
    layout for contourf and streamplot)."""
    return jnp.stack(jnp.meshgrid(jnp.asarray(w1), jnp.asarray(w2)), axis=-1)


@functools.partial(jax.jit, static_argnums=0)
def _apply_on_grid(fn: Callable, W: Array, args) -> Array:
    return jax.vmap(jax.vmap(lambda w: fn(w, args)))(W)


def _on_grid(fn: Callable, w1: np.ndarray, w2: np.ndarray, args=None) -> np.ndarray:
    """fn(w, args) at every grid point: shape (G2, G1) + fn's output shape. `fn` must be
    hashable (it is a static argument of one cached compilation)."""
    return np.asarray(_apply_on_grid(fn, _grid(w1, w2), args))


@dataclasses.dataclass(frozen=True)
class _Descent:
    """−∇F(w, args): the gradient-flow field of F."""

    objective: Callable

    def __call__(self, w, args):
        return -jax.grad(self.objective)(w, args)


@dataclasses.dataclass(frozen=True)
class _Plain:
    """F(w, args) = objective(w): a user objective with the (w, args) signature; compared
    by the objective's identity, so the same objective reuses its compilation."""

    objective: Callable

    def __call__(self, w, args):
        return jnp.reshape(self.objective(w), ())


class _Points(eqx.Module):
    w: tuple
    args: models.Frozen


@functools.lru_cache(maxsize=64)
def _summed(objectives: tuple) -> Callable:
    """Σ_k Σ_s F_k(w_ks, args): separable, so its flow moves each point along its own −∇F_k."""

    def loss(points: _Points):
        args = models.read_frozen(points.args)
        return sum(
            jnp.sum(jax.vmap(lambda w, F=F: F(w, args))(ws)) for F, ws in zip(objectives, points.w)
        )

    return loss


def _flows(objectives: tuple, starts: np.ndarray, t1: float, args, *, n_times, rtol, atol):
    """Exact flows of each objective from each start: ((K, S, T, 2) positions, (T,) times,
    solver stats and config)."""
    ts = flows.log_times(t1, n_times - 1, t_min=1e-3 * t1)
    points = _Points(
        w=tuple(jnp.asarray(starts) for _ in objectives),
        args=models.Frozen(jax.tree.map(jnp.asarray, args)),
    )
    trajectory = flows.gradient_flow(
        _summed(tuple(objectives)),
        points,
        t1,
        ts=ts,
        solver="tsit5",
        rtol=rtol,
        atol=atol,
        chunks=1,
    )
    paths = np.stack([np.swapaxes(np.asarray(w), 0, 1) for w in trajectory.params.w])
    return paths, ts, trajectory.stats, trajectory.config


def _gradient_descent(objective: Callable, w0: np.ndarray, eta: float, steps: int) -> np.ndarray:
    """Iterates w ← w − η∇F(w) of `flows.gradient_descent`, every step: shape (steps + 1, 2)."""
    t1 = eta * steps
    traj = flows.gradient_descent(
        lambda w: jnp.reshape(objective(w), ()),
        jnp.asarray(w0, dtype=jnp.float64),
        t1,
        eta=eta,
        ts=eta * np.arange(steps + 1),
    )
    return np.asarray(traj.params)


# ----------------------------------------------------------------------------- drawing


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(figure: Figure, path: str, *, dpi: int = 110) -> str:
    """Write `figure` to `path` (format from the extension: .png, .svg, .pdf) and return the
    path."""
    figure.savefig(path, dpi=dpi)
    return path


def _finish(data: dict, draw_fn: Callable, path: str | None, draw: bool) -> Portrait:
    if not draw:
        return Portrait(None, data)
    fig = draw_fn(data)
    if path is not None:
        save_figure(fig, path)
    return Portrait(fig, data)


def _mark(ax, w0, starts=None, colours=()):
    if starts is not None:
        for s, c in zip(starts, colours):
            ax.plot(*s, "o", color=c, ms=5, mec="white", mew=0.8, zorder=5)
    if w0 is not None:
        ax.plot(*w0, "*", color="white", ms=15, mec="black", mew=1.0, zorder=6)


def _paths(ax, paths: np.ndarray, colours, style: str):
    for path, c in zip(paths, colours):
        ax.plot(path[:, 0], path[:, 1], style, color=c, lw=2.0, zorder=4)


def _label_axes(ax):
    ax.set_xlabel("w1 (weight)")
    ax.set_ylabel("w2 (weight)")


def _nice_levels(lo: float, hi: float, n: int) -> np.ndarray:
    """About n contour levels at round numbers covering [lo, hi]."""
    if not hi > lo:
        hi = lo + max(abs(lo), 1.0) * 1e-6
    return ticker.MaxNLocator(n).tick_values(lo, hi)


def _colours(n: int) -> list[str]:
    return [_START_COLOURS[i % len(_START_COLOURS)] for i in range(n)]


def _flow_panel(ax, w1, w2, value, field, norm, cmap="viridis", density=0.9):
    """Filled level sets of `value` and streamlines of `field` = −∇F; returns the contour set."""
    levels = norm.inverse(np.linspace(0, 1, 17))
    cs = ax.contourf(w1, w2, value, levels=levels, norm=norm, cmap=cmap, extend="max")
    speed = np.hypot(field[..., 0], field[..., 1])
    finite = np.isfinite(speed) & (speed > 0)
    U = np.where(finite, field[..., 0], 0.0)
    V = np.where(finite, field[..., 1], 0.0)
    ax.streamplot(
        w1, w2, U, V, density=density, color=(1, 1, 1, 0.75), linewidth=0.7, arrowsize=0.8
    )
    ax.set_xlim(w1[0], w1[-1])
    ax.set_ylim(w2[0], w2[-1])
    _label_axes(ax)
    return cs


def _legend(fig, handles, ncol=None):
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=ncol or len(handles),
        frameon=False,
        fontsize=9,
    )


def _marker_handles(with_w0=True):
    start = Line2D(
        [], [], marker="o", ls="", color="grey", mec="white", ms=6, label="starting point"
    )
    if not with_w0:
        return [start]
    w0 = Line2D([], [], marker="*", ls="", color="white", mec="black", ms=12, label="w0")
    return [w0, start]


# ----------------------------------------------------------------------------- 1. surfaces


def draw_surfaces(data: dict) -> Figure:
    """Draw `surface_portrait`'s data: one row per scale α; columns α·f, α·f̄ (shared colour
    scale per row, same contour levels) and the gap α(f − f̄) (one colour scale for all rows)."""
    scales, w0 = np.asarray(data["scales"]), np.asarray(data["w0"])
    out, out_lin = np.asarray(data["output"]), np.asarray(data["output_linearized"])
    gap = out - out_lin
    gap_max = float(np.max(np.abs(gap))) or 1.0
    gap_norm = colors.Normalize(-gap_max, gap_max)
    gap_levels = _nice_levels(-gap_max, gap_max, 20)
    fig = _figure(13.5, 3.9 * len(scales) + 0.6)
    axes = fig.subplots(len(scales), 3, squeeze=False)
    scaled = bool(data["scaled_window"])
    radius = float(data["radius"])
    for k, alpha in enumerate(scales):
        w1, w2 = np.asarray(data["w1"][k]), np.asarray(data["w2"][k])
        lo = float(min(out[k].min(), out_lin[k].min()))
        hi = float(max(out[k].max(), out_lin[k].max()))
        levels = _nice_levels(lo, hi, 20)
        window = (
            f"window |w − w0|∞ ≤ {radius:g}/α = {data['radii'][k]:.3g}"
            if scaled
            else f"window |w − w0|∞ ≤ {data['radii'][k]:.3g}"
        )
        for j, (z, name) in enumerate(
            ((out[k], "network α·f(w)"), (out_lin[k], "linearisation α·f̄(w)"))
        ):
            ax = axes[k, j]
            cs = ax.contourf(w1, w2, z, levels=levels, cmap="viridis")
            ax.contour(
                w1,
                w2,
                z,
                levels=levels[::2],
                colors="k",
                linewidths=0.5,
                alpha=0.6,
                linestyles="solid",
            )
            _mark(ax, w0)
            _label_axes(ax)
            ax.set_title(f"{name}, scale α = {alpha:g}\n{window}", fontsize=10)
        fig.colorbar(cs, ax=axes[k, :2], label=f"output × α (α = {alpha:g})", shrink=0.9)
        ax = axes[k, 2]
        gs = ax.contourf(w1, w2, gap[k], levels=gap_levels, norm=gap_norm, cmap="RdBu_r")
        _mark(ax, w0)
        _label_axes(ax)
        ax.set_title(
            f"gap α·(f − f̄), α = {alpha:g}\nmax |gap| = {np.max(np.abs(gap[k])):.2g}", fontsize=10
        )
    fig.colorbar(gs, ax=axes[:, 2], label="α·(f(w) − f̄(w)) (shared scale)", shrink=0.9)
    fig.suptitle(
        f"{data['model']} and its linearisation f̄ at w0 = ({w0[0]:g}, {w0[1]:g}) (★): "
        "far apart at small scale, close (lazy) at large scale",
        fontsize=12,
    )
    return fig


def surface_portrait(
    model: Callable,
    w0: ArrayLike,
    *,
    scales: Sequence[float] = (0.1, 10.0),
    radius: float = 2.0,
    scaled_window: bool = True,
    grid: int = 101,
    path: str | None = None,
    draw: bool = True,
) -> Portrait:
    """The seed's picture: a two-weight model against its linearisation at w0, at several scales.

    For each scale α, filled level sets of w ↦ α·f(w) and of w ↦ α·f̄(w) (f̄ from
    `models.linearize`) on one colour scale, and their gap α·(f − f̄). The window has radius
    `radius`/α around w0 by default: the neighbourhood the flow of F_α explores (Thm 2.2:
    ‖w_α − w0‖ = O(1/α)). In it the gap is O(radius²/α): far at α = 0.1, small at α = 10.
    (On a fixed window α·f and α·f̄ would be the same picture at every α, times α.)

    **Arguments:**

    - `model`: f, a JAX-traceable function of `w`, shape `(2,)`, returning a scalar, e.g.
      `TwoWeightNet("tanh", x=1.0)`.
    - `w0`: the linearisation point, shape `(2,)`.
    - `scales`: the scales α > 0, one row each.
    - `radius`: window half-width ρ (in weight units, times 1/α when `scaled_window`).
    - `scaled_window`: window half-width ρ/α (True) or ρ (False).
    - `grid`: points per axis (made odd, so w0 is a grid point).
    - `path`: if given, save the figure there (.png, .svg or .pdf).
    - `draw`: draw the figure; with `False` only `data` is computed (`figure` is None).

    **Returns:**

    A `Portrait`; its `data` has `scales (k,)`, `radii (k,)`, `w1 (k, G)`, `w2 (k, G)`,
    `output (k, G, G)` = α·f and `output_linearized (k, G, G)` = α·f̄, with entry `[k, i, j]`
    at (w1[k, j], w2[k, i]).

    **Raises:**

    `ValueError` naming the argument: `w0` not finite of shape (2,), non-positive `scales` or
    `radius`, `grid` < 5.

    **Reference:** Chizat, Oyallon & Bach 2019, §1 and Thm 2.2.
    """
    w0 = _point("w0", w0)
    scales = _positives("scales", scales)
    radius = _positive("radius", radius)
    grid = _grid_size(grid)
    f = _Plain(_evaluate(_network(model, jnp.asarray(w0), False)))
    f_lin = _Plain(linearized(model, w0))
    radii = radius / scales if scaled_window else np.full_like(scales, radius)
    w1, w2, out, out_lin = [], [], [], []
    for alpha, r in zip(scales, radii):
        a1, a2 = _axes(np.array([w0[0] - r, w0[0] + r, w0[1] - r, w0[1] + r]), grid)
        w1.append(a1)
        w2.append(a2)
        out.append(alpha * _on_grid(f, a1, a2))
        out_lin.append(alpha * _on_grid(f_lin, a1, a2))
    data = {
        "kind": np.array("surfaces"),
        "model": np.array(_formula(model)),
        "w0": w0,
        "scales": scales,
        "radius": np.array(radius),
        "radii": radii,
        "scaled_window": np.array(bool(scaled_window)),
        "w1": np.stack(w1),
        "w2": np.stack(w2),
        "output": np.stack(out),
        "output_linearized": np.stack(out_lin),
    }
    return _finish(data, draw_surfaces, path, draw)


# ----------------------------------------------------------------------------- 2. flow fields


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


def _straightness(paths: np.ndarray) -> np.ndarray:
    """Chord over path length of each path (1 = straight); shape paths.shape[:-2]."""
    chord = np.linalg.norm(paths[..., -1, :] - paths[..., 0, :], axis=-1)
    length = np.sum(np.linalg.norm(np.diff(paths, axis=-2), axis=-1), axis=-1)
    return np.where(length > 0, chord / np.where(length > 0, length, 1.0), 1.0)


def _path_lengths(paths: np.ndarray) -> np.ndarray:
    return np.sum(np.linalg.norm(np.diff(paths, axis=-2), axis=-1), axis=-1)


def _solve_columns(objectives, columns, *, t1, n_times, grid, rtol, atol):
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
            objectives, starts, t1, args, n_times=n_times, rtol=rtol, atol=atol
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
        "rtol": np.array(rtol),
        "atol": np.array(atol),
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
    labels = [str(s) for s in np.asarray(data["labels"]).ravel()]
    vmax = float(np.quantile(values, 0.98)) or 1.0
    vmin = float(min(values.min(), 0.0))
    norm = (
        colors.PowerNorm(0.5, vmin=vmin, vmax=vmax) if vmin == 0 else colors.Normalize(vmin, vmax)
    )
    fig = _figure(4.3 * n_cols + 1.2, 4.0 * n_rows + 0.9)
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
            title = f"−∇{labels[j]}"
            if str(data["column_titles"][k]):
                title += "\n" + str(data["column_titles"][k])
            ax.set_title(title, fontsize=10)
        if "weight_gap" in data:
            note = (
                f"from w0: path length {data['path_length'][k, 0, 0]:.2g}, "
                f"chord/length {data['straightness'][k, 0, 0]:.3f}\n"
                f"max_t ‖w(t) − w̄(t)‖ = {data['weight_gap'][k, 0]:.2g}"
            )
            axes[0, k].text(
                0.02,
                0.02,
                note,
                transform=axes[0, k].transAxes,
                fontsize=8,
                va="bottom",
                bbox={"boxstyle": "round", "fc": "white", "alpha": 0.85, "lw": 0},
            )
    bar = fig.colorbar(cs, ax=axes, label=str(data["value_label"]), shrink=0.8)
    bar.set_ticks(_nice_levels(vmin, vmax, 6))
    handles = [
        Line2D([], [], color="k", ls=styles[i], lw=2, label=f"exact flow of {labels[i]}")
        for i in range(paths.shape[1])
    ]
    _legend(fig, handles + _marker_handles(with_w0="w0" in data))
    if str(data["kind"]) == "lazy_flows":
        fig.suptitle(
            f"Exact gradient flows of F_α(w) = R(α·h(w))/α² and of F̄_α (h̄ = linearisation at w0 ★),"
            f" {data['model']}, target y* = {float(data['target']):g}\n"
            "As α grows the flows shorten (the window is w0 ± ρ/α), straighten, and the solid "
            "and dashed paths coincide: the lazy regime",
            fontsize=11,
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
    rtol: float = 1e-10,
    atol: float = 1e-12,
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
    - `n_times`: saved points per trajectory (log-spaced in t, plus t = 0).
    - `grid`: grid points per axis for level sets and streamlines.
    - `rtol`, `atol`: solver tolerances.
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
        n_times=max(int(n_times), 3),
        grid=_grid_size(grid),
        rtol=rtol,
        atol=atol,
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
    rtol: float = 1e-10,
    atol: float = 1e-12,
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
    - `t1`, `n_times`, `grid`, `rtol`, `atol`: as in `flow_portrait`.
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
        n_times=max(int(n_times), 3),
        grid=_grid_size(grid),
        rtol=rtol,
        atol=atol,
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


# ----------------------------------------------------------------------------- 3. conservation


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
    bar.set_ticks(_nice_levels(0, vmax, 6))
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
    ax_q.set_xscale("log")
    ax_q.set_yscale("log")
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
    ]
    _legend(fig, handles)
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
    rtol: float = 1e-10,
    atol: float = 1e-12,
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
    - `t1`, `n_times`, `grid`, `rtol`, `atol`: as in `flow_portrait`.
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
    if isinstance(gd_steps, bool) or int(gd_steps) != gd_steps or int(gd_steps) < 1:
        raise ValueError(f"gd_steps must be an integer >= 1, got {gd_steps!r}")
    w1, w2 = _axes(bounds, _grid_size(grid))
    F, Q = _Plain(objective), _Plain(invariant)
    paths, ts, stats, config = _flows(
        (F,), starts, _positive("t1", t1), None, n_times=max(int(n_times), 3), rtol=rtol, atol=atol
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
        "rtol": np.array(rtol),
        "atol": np.array(atol),
        "solver": np.array(config["solver"]),
        "num_steps": np.array(stats["num_steps"]),
        "model": np.array(_formula(objective, "F(w)")),
        "invariant_label": np.array(
            invariant_label or ("w1² − w2²" if invariant is balancedness else "Q(w)")
        ),
    }
    return _finish(data, draw_conservation, path, draw)
