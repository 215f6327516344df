"""Portrait 1: a two-weight model against its linearisation, at several scales."""

from collections.abc import Callable, Sequence

import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike
from matplotlib import colors
from matplotlib.figure import Figure

from ._checks import _grid_size, _point, _positive, _positives
from ._drawing import Portrait, _figure, _finish, _label_axes, _mark, _nice_levels
from ._numerics import _axes, _on_grid, _Plain
from ._toys import _evaluate, _formula, _network, linearized


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
