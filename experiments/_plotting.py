"""One plotting style for every experiment, and checks that a figure shows what it claims.

Drawing uses matplotlib's object-oriented `Figure` API only (no pyplot global state), so that
figures can be drawn from threads and tests. Artists are tagged with a `gid` that the checks
read: `"fit"` (a line fitted to data), `"reference"` (a line from theory, never fitted to the
data it checks), `"bound"` (a value computed from theory: a bound, a tolerance), `"floor"`
(a round-off band). Every other line is data.

The checks return lists of problems (empty when the figure is fine) so that a test can assert
`figure_problems(fig) == []` and print every fault at once:
- a reference line lies at least `offset` (in the axis's scale: decades on a log axis) from
  every fitted line of its panel, and is labelled in a legend;
- no legend box overlaps the bounding box of a data line, fit or reference line;
- no panel is nearly blank: its lines span a fair part of the panel, and its filled contours
  or images use a fair part of their colour scale.
"""

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection
from matplotlib.contour import ContourSet
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.ticker import LogFormatterSciNotation, LogLocator, NullFormatter
from matplotlib.transforms import Bbox

from ._files import write_figure

EPS = float(np.finfo(np.float64).eps)
FIT, REFERENCE, BOUND, FLOOR = "fit", "reference", "bound", "floor"
# flow time in the ODE's own units (a gradient-descent step η covers time η), as every axis
# names its unit
TIME_LABEL = "flow time t (a gradient-descent step η covers time η)"
ALPHA_LABEL = "scale α (dimensionless)"


# ----------------------------------------------------------------------------- drawing


def new_figure(width: float, height: float) -> Figure:
    """A figure with constrained layout (room for legends placed outside) and an Agg canvas."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(figure: Figure, path: str, *, dpi: int = 130) -> str:
    """Write `figure` to `path` atomically (format from the extension: .png, .svg, .pdf).

    Arguments:
        figure: the figure.
        path: the file to write; a partial file never replaces a finished one.
        dpi: resolution of raster formats.

    Returns:
        `path`.
    """
    write_figure(path, figure, dpi=dpi)
    return path


def log_axis(ax: Axes, which: str = "xy", numticks: int = 8) -> None:
    """Log scale on `which` axes ("x", "y" or "xy") with labels at powers of ten only (at
    most about `numticks` of them: every other decade on a long range).

    Minor ticks stay unlabelled, so a short range never shows labels like 6×10⁻¹.
    """
    for name in which:
        axis = ax.xaxis if name == "x" else ax.yaxis
        (ax.set_xscale if name == "x" else ax.set_yscale)("log")
        axis.set_major_locator(LogLocator(base=10, numticks=numticks))
        axis.set_major_formatter(LogFormatterSciNotation(base=10))
        axis.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10), numticks=12))
        axis.set_minor_formatter(NullFormatter())


def _log_points(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    return np.log10(x[keep]), np.log10(y[keep])


def fit_line(ax: Axes, x, y, slope: float, *, label: str, color, **kw) -> Line2D | None:
    """Draw the power law y = c·x^slope through the centroid of (log x, log y) (`gid="fit"`).

    Use it for the slope fitted to these data; a slope from theory goes through
    `reference_slope`, which never passes through the data.
    """
    lx, ly = _log_points(x, y)
    if slope is None or lx.size < 1:
        return None
    c = np.mean(ly - slope * lx)
    grid = np.linspace(lx.min(), lx.max(), 50)
    kw = {"lw": 1.2, "ls": "-"} | kw
    (line,) = ax.plot(10**grid, 10 ** (c + slope * grid), color=color, label=label, gid=FIT, **kw)
    return line


def reference_slope(ax: Axes, x, ys, slope: float, *, label: str, **kw) -> Line2D:
    """Draw the power law y = c·x^slope of a theorem, offset from the data it checks.

    The constant c is chosen as in `reference_curve` (at least `offset` decades from every
    point and fitted line): the reader compares slopes, and the line cannot pass for a fit.
    """
    return reference_curve(ax, x, ys, lambda v: v**slope, label=label, **kw)


def reference_curve(
    ax: Axes,
    x,
    ys,
    shape,
    *,
    label: str,
    offset: float = 1.0,
    side: str = "below",
    fits: tuple = (),
    color="k",
    **kw,
) -> Line2D:
    """Draw y = c·shape(x) from theory (c unknown or irrelevant), offset from the data.

    The constant c is chosen so that the curve lies at least `offset` decades below (or above)
    every point of every series in `ys` and every line in `fits`, over the range of `x`.

    Arguments:
        ax: a log-log panel.
        x: the abscissae (n,), positive; the curve spans their range.
        ys: one array (n,) or a sequence of them (the series the shape is checked on).
        shape: a positive function of x, e.g. `lambda a: np.log(a) / a`.
        label: what the curve is and its source, e.g. "slope −2: Thm 2.2 (not fitted)".
        offset: decades between the curve and the nearest point or fitted line.
        side: "below" or "above".
        fits: lines from `fit_line` to keep clear of.

    Returns:
        The line (`gid="reference"`).

    Raises:
        ValueError: if `side` is neither "below" nor "above", or no point is positive.
    """
    if side not in ("below", "above"):
        raise ValueError(f"side must be 'below' or 'above', got {side!r}")
    ys = [ys] if np.ndim(ys[0]) == 0 else list(ys)
    x = np.asarray(x, float)
    series = [(x, y) for y in ys] + [line.get_data() for line in fits if line is not None]
    intercepts = []
    for sx, sy in series:
        lx, ly = _log_points(sx, sy)
        with np.errstate(divide="ignore"):  # shape 0 (log 1) gives -inf, dropped below
            intercepts.append(ly - np.log10(shape(10**lx)))
    intercepts = np.concatenate(intercepts)
    intercepts = intercepts[np.isfinite(intercepts)]
    if intercepts.size == 0:
        raise ValueError("reference_curve needs at least one positive point")
    c = intercepts.min() - offset if side == "below" else intercepts.max() + offset
    lx, _ = _log_points(x, np.ones_like(x))
    grid = np.logspace(lx.min(), lx.max(), 60)
    kw = {"lw": 1.6, "ls": (0, (4, 2))} | kw
    (line,) = ax.plot(grid, 10**c * shape(grid), color=color, label=label, gid=REFERENCE, **kw)
    return line


def bound_line(ax: Axes, x, y, *, label: str, color="k", **kw) -> Line2D:
    """Draw a value computed from theory (a bound, a tolerance), labelled with its source.

    Unlike `reference_curve` its height means something, so it is drawn where it is
    (`gid="bound"`: the checks ask for a label, not for an offset)."""
    kw = {"lw": 1.4, "ls": ":"} | kw
    (line,) = ax.plot(x, y, color=color, label=label, gid=BOUND, **kw)
    return line


def roundoff_floor(ax: Axes, x, level, *, label: str, color="0.55") -> Collection:
    """Shade y below `level` (a number or an array over `x`): values there are round-off.

    Arguments:
        ax: a panel with a log y axis.
        x: abscissae (n,).
        level: the floor, a scalar or (n,), in the units of the y axis.
        label: how the floor is estimated, e.g. "round-off: 10·ε·‖y*‖/‖αh̄ − y*‖".

    Returns:
        The band (`gid="floor"`); the y limits are not widened for it.
    """
    x = np.asarray(x, float)
    level = np.broadcast_to(np.asarray(level, float), x.shape)
    ylim = ax.get_ylim() if ax.has_data() else None
    band = ax.fill_between(
        x, np.full_like(x, 1e-300), level, color=color, alpha=0.25, lw=0, label=label, gid=FLOOR
    )
    if ylim is not None:
        ax.set_ylim(ylim)
    return band


def legend_outside(ax: Axes, *, where: str = "right", ncol: int = 1, **kw):
    """The legend of `ax`, outside its data area: to the right or below the panel."""
    kw = {"fontsize": 8, "frameon": False} | kw
    if where == "right":
        return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, **kw)
    if where == "below":
        return ax.legend(
            loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=ncol, borderaxespad=0, **kw
        )
    raise ValueError(f"where must be 'right' or 'below', got {where!r}")


def figure_legend(fig: Figure, handles=None, labels=None, *, ncol: int = 1, **kw):
    """One legend for the whole figure, below all panels (constrained layout makes room)."""
    kw = {"fontsize": 8, "frameon": False} | kw
    if handles is None:
        return fig.legend(loc="outside lower center", ncol=ncol, **kw)
    if labels is None:
        return fig.legend(handles=handles, loc="outside lower center", ncol=ncol, **kw)
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol, **kw)


def shades(cmap, n: int, lo: float = 0.15, hi: float = 0.85) -> list:
    """n colours along a sequential colour map, dark to light (one per ordered curve)."""
    from matplotlib import colormaps

    return list(colormaps[cmap](np.linspace(lo, hi, n)))


# ----------------------------------------------------------------------------- checks


def _data_lines(ax: Axes) -> list[Line2D]:
    return [
        line
        for line in ax.get_lines()
        if line.get_visible()
        and line.get_gid() not in (FIT, REFERENCE, BOUND)
        and line.get_xydata().size
    ]


def _scaled(ax: Axes, x, y):
    """Coordinates in the axes' scale (log10 on a log axis), finite points only."""
    x = ax.xaxis.get_transform().transform(np.asarray(x, float))
    y = ax.yaxis.get_transform().transform(np.asarray(y, float))
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def reference_distance(ax: Axes, reference: Line2D, fitted: Line2D) -> float:
    """Smallest vertical distance (in the y axis's scale) between two lines where both exist."""
    rx, ry = _scaled(ax, *reference.get_data())
    fx, fy = _scaled(ax, *fitted.get_data())
    order = np.argsort(fx)
    fx, fy = fx[order], fy[order]
    inside = (rx >= fx[0]) & (rx <= fx[-1])
    if not inside.any():
        return np.inf
    return float(np.min(np.abs(ry[inside] - np.interp(rx[inside], fx, fy))))


def _legend_labels(fig: Figure) -> set[str]:
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    return {t.get_text() for leg in legends for t in leg.get_texts()}


def check_references(fig: Figure, offset: float = 1.0) -> list[str]:
    """Every reference or bound line is labelled in a legend; every reference line lies
    `offset` from every fitted line of its panel."""
    problems, labels = [], _legend_labels(fig)
    for ax in fig.axes:
        refs = [line for line in ax.get_lines() if line.get_gid() in (REFERENCE, BOUND)]
        fits = [line for line in ax.get_lines() if line.get_gid() == FIT]
        for ref in refs:
            name = ref.get_label()
            if name.startswith("_") or name not in labels:
                problems.append(f"reference line {name!r} is not labelled in a legend")
            if ref.get_gid() == BOUND:
                continue
            for fit in fits:
                d = reference_distance(ax, ref, fit)
                if d < offset:
                    problems.append(
                        f"reference {name!r} within {d:.3g} (< {offset:g}) "
                        f"of fit {fit.get_label()!r}"
                    )
    return problems


def check_legends(fig: Figure, *, draw: bool = True) -> list[str]:
    """No legend box overlaps the bounding box of any line of any panel (the part inside
    the panel, for lines clipped to it). `draw=False`: the figure is drawn already."""
    if draw:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    problems = []
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            for line in ax.get_lines():
                if not line.get_visible() or not line.get_xydata().size:
                    continue
                extent = line.get_window_extent(renderer)
                if line.get_clip_on():  # drawn only inside the panel
                    extent = Bbox.intersection(extent, ax.bbox)
                if extent is not None and box.overlaps(extent):
                    problems.append(
                        f"a legend overlaps line {line.get_label()!r} in panel {ax.get_title()!r}"
                    )
    return problems


def _colour_fraction(artist) -> float | None:
    """Part of its colour scale that a filled contour set or image uses."""
    norm = artist.norm
    if isinstance(artist, ContourSet):
        lo, hi = artist.zmin, artist.zmax
    else:
        values = np.asarray(artist.get_array(), float)
        values = values[np.isfinite(values)]
        if values.size == 0:
            return 0.0
        lo, hi = values.min(), values.max()
    a, b = np.clip(norm([lo, hi]), 0.0, 1.0)
    return float(b - a)


def check_panels(fig: Figure, min_fraction: float = 0.25, *, draw: bool = True) -> list[str]:
    """No nearly blank panel: lines span `min_fraction` of the panel's height (in its scale),
    filled contours and images use `min_fraction` of their colour scale. `draw=False`: the
    figure is drawn already."""
    if draw:
        fig.canvas.draw()
    problems = []
    for ax in fig.axes:
        if getattr(ax, "_colorbar", None) is not None:
            continue
        title = ax.get_title() or ax.get_ylabel()
        coloured = [a for a in ax.collections if isinstance(a, ContourSet) and a.filled]
        coloured += [a for a in ax.get_images() if isinstance(a, AxesImage)]
        for artist in coloured:
            frac = _colour_fraction(artist)
            if frac < min_fraction:
                problems.append(
                    f"panel {title!r}: its colours use {frac:.0%} of their scale "
                    f"(< {min_fraction:.0%}): nearly blank"
                )
        lines = _data_lines(ax)
        if coloured or not lines:
            continue
        xy = np.concatenate([np.column_stack(_scaled(ax, *line.get_data())) for line in lines])
        if xy.size == 0:
            problems.append(f"panel {title!r}: no finite data")
            continue
        lo, hi = ax.yaxis.get_transform().transform(np.asarray(ax.get_ylim(), float))
        span = (np.clip(xy[:, 1].max(), min(lo, hi), max(lo, hi))) - np.clip(
            xy[:, 1].min(), min(lo, hi), max(lo, hi)
        )
        frac = span / abs(hi - lo) if hi != lo else 0.0
        if frac < min_fraction:
            problems.append(
                f"panel {title!r}: its data span {frac:.0%} of the height (< {min_fraction:.0%})"
            )
    return problems


def check_labels(fig: Figure) -> list[str]:
    """Every panel holding data names the quantity on both axes (or a panel sharing that axis
    does)."""
    problems = []
    for ax in fig.axes:
        if getattr(ax, "_colorbar", None) is not None or not ax.has_data():
            continue
        for name, shared in (("x", ax.get_shared_x_axes()), ("y", ax.get_shared_y_axes())):
            siblings = shared.get_siblings(ax)
            get = (lambda a: a.get_xlabel()) if name == "x" else (lambda a: a.get_ylabel())
            if not any(get(a).strip() for a in siblings):
                problems.append(f"panel {ax.get_title()!r}: no {name} label")
    return problems


def figure_problems(fig: Figure, *, offset: float = 1.0, min_fraction: float = 0.25) -> list[str]:
    """Every fault the checks above find in `fig` (empty: the figure passes)."""
    fig.canvas.draw()  # once: layout and extents for every check
    return (
        check_references(fig, offset)
        + check_legends(fig, draw=False)
        + check_panels(fig, min_fraction, draw=False)
        + check_labels(fig)
    )
