"""What every figure of `gradflows run lazy` reads: the run folder's two files, the finished
α of a result, the subtitle naming the run, and the label of a fitted slope."""

import json
import os

import numpy as np

from .. import _plotting as P


def load(folder):
    """`(results.json as a dict, trajectories.npz as a dict of arrays)` of a run folder."""
    with open(os.path.join(folder, "results.json")) as f:
        res = json.load(f)
    with np.load(os.path.join(folder, "trajectories.npz")) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return res, arrays


def finished(res, key):
    """`(alphas, values)` of `key` over the runs that finished and recorded it."""
    runs = [r for r in res["runs"] if not r["failed"] and r.get(key) is not None]
    return np.array([r["alpha"] for r in runs]), np.array([r[key] for r in runs])


def subtitle(res):
    """Two lines naming the model, n, t1 and the data, for a figure's title."""
    c = res["config"]
    return f"{c['model']}, n = {c['n_train']}, t1 = {c['t1']:.3g}\n{c['data_description']}"


def slope_label(slope, expected=None):
    """ "fit: slope ±s.sss (theory ±k)", or None when no slope was fitted."""
    if slope is None:
        return None
    text = f"fit: slope {slope:+.3f}"
    return text if expected is None else f"{text} (theory {expected:+d})"


def finish_panel(ax, xlabel: str, ylabel: str, title: str) -> None:
    """Log axes, labels, a small title, a light grid and the legend below the panel."""
    P.log_axis(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    P.legend_outside(ax, where="below")
