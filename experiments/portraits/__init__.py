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

`gradflows run portrait` draws the seed's lazy picture, flow fields and conservation laws.
Each figure is a task of the sweep layer (`experiments._sweep`: `--workers N`, `--scheduler
ADDRESS`, `--workers 0` in-process, the same bits everywhere), kept as its part
(`part-<key>.json`/`.npz`) as soon as it is computed, so `--resume DIR` computes only the
figures that are missing.

Three figures, each computed into `<name>.npz` in the run folder and drawn from that file:

- `seed`: w ↦ α·f(w) and its linearisation α·f̄(w) at w0 for f(w) = w2·σ(w1·x), on the
  window w0 ± ρ/α, for each scale α (Chizat, Oyallon & Bach 2019, §1).
- `flows`: streamlines of −∇F_α and −∇F̄_α over their level sets, and exact flows of both
  from several starts, one column per α (Chizat et al. 2019, Thm 2.2).
- `conservation`: f(w) = w2·w1·x; exact flows on their hyperbolas w1² − w2² = c, and
  gradient descent with a large step leaving its hyperbola (Du, Hu & Lee 2018).
"""

from .._deferred import deferred_exports
from ._cli import CONSERVATION_STARTS as CONSERVATION_STARTS
from ._cli import add_arguments as add_arguments

DESCRIPTION = "phase portraits in the plane of two weights: lazy surfaces, flow fields, hyperbolas"

# The portrait library, imported on first use (PEP 562), so that `gradflows list` stays cheap.
_LIBRARY = {
    "ModelLoss": "._toys",
    "ScalarLinearNet": "._toys",
    "TwoWeightNet": "._toys",
    "balancedness": "._toys",
    "linearized": "._toys",
    "Portrait": "._drawing",
    "save_figure": "._drawing",
    "surface_portrait": "._surface",
    "draw_surfaces": "._surface",
    "ScaledObjective": "._flow_fields",
    "flow_portrait": "._flow_fields",
    "lazy_flow_portrait": "._flow_fields",
    "draw_flows": "._flow_fields",
    "conservation_portrait": "._conservation",
    "draw_conservation": "._conservation",
}
__getattr__, __dir__ = deferred_exports(__name__, _LIBRARY, globals())


def plot(folder: str, fmt: str = "png", names=("seed", "flows", "conservation")) -> list[str]:
    """Redraw the figures `names` whose `<name>.npz` is in the run folder, as `<name>.<fmt>`;
    returns the paths written."""
    from ._plots import plot as _plot

    return _plot(folder, fmt, names)


def run(args) -> int:
    """Compute and draw the portraits for parsed `args`."""
    from ._run import run as _run

    return _run(args)
