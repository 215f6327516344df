"""Drawing helpers shared by the portraits (object-oriented matplotlib, Agg canvas)."""

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from matplotlib import ticker
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .. import _plotting

# Colours of the starting points; colour-blind-safe (Okabe–Ito).
_START_COLOURS = ("#d55e00", "#0072b2", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000")


class Portrait(NamedTuple):
    """A portrait: `figure` (a matplotlib `Figure` on an Agg canvas; `None` when called with
    `draw=False`) and `data` (`{name: numpy array}`: the grids, surfaces, fields and
    trajectories that were drawn; `np.savez`-able, and redrawn by the matching `draw_*`)."""

    figure: Figure | None
    data: dict


def _figure(width: float, height: float) -> Figure:
    return _plotting.new_figure(width, height)


def save_figure(figure: Figure, path: str, *, dpi: int = 110) -> str:
    """Write `figure` to `path` (format from the extension: .png, .svg, .pdf) and return the
    path; a partial file never replaces a finished one."""
    return _plotting.save_figure(figure, path, dpi=dpi)


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


def _bar_ticks(bar, lo: float, hi: float, n: int = 6) -> None:
    """About n round ticks on colour bar `bar` of the range [lo, hi], none outside it: a tick
    above hi was drawn at the bar's end, on top of its neighbour (5 and 6 with 5.6 at the
    top)."""
    ticks = _nice_levels(lo, hi, n)
    slack = 1e-9 * max(abs(lo), abs(hi), 1.0)
    bar.set_ticks(ticks[(ticks >= lo - slack) & (ticks <= hi + slack)])


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
