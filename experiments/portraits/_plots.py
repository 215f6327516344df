"""Draw the portraits of a run folder from its `.npz` files."""

import os

import numpy as np

from ._cli import FIGURES
from ._conservation import draw_conservation
from ._drawing import save_figure
from ._flow_fields import draw_flows
from ._surface import draw_surfaces


def plot(folder: str, fmt: str = "png", names=FIGURES) -> list[str]:
    """Draw the figures `names` whose `<name>.npz` is in the run folder, as `<name>.<fmt>`;
    returns the files written."""
    draw = {
        "seed": draw_surfaces,
        "flows": draw_flows,
        "conservation": draw_conservation,
    }
    written = []
    for name in names:
        path = os.path.join(folder, f"{name}.npz")
        if not os.path.exists(path):
            continue
        with np.load(path, allow_pickle=False) as saved:
            data = {key: saved[key] for key in saved.files}
        target = os.path.join(folder, f"{name}.{fmt}")
        save_figure(draw[name](data), target)
        written.append(target)
    return written
