"""`gradflows run ntk`: the NTK of a·s + b·|s| MLPs at the edge of chaos concentrates around its
infinite-width limit at rate m^(−1/2) (Terjék & González-Sánchez 2025).

For digits and Gaussian inputs (‖x‖² = d), for ReLU, |s| and one mixed (a, b), and for constant
and quadratic widths (m_k = m or k²·m): the relative operator-norm error ‖K_m − K∞‖/‖K∞‖ of the
empirical NTK (`flows.ntk.ntk_gram`) against
`flows.ntk.ntk_infinite`, over widths and seeds, its fitted
log-log slope, and cond(K∞) against depth.

The measurements are tasks of the sweep layer (`experiments._sweep`): one per data set,
activation, width scheme and base width (every seed's error at that width), and one per data
set and activation (cond(K∞) over depth). They run on a local Dask cluster (`--workers N`), on
a running one (`--scheduler ADDRESS`) or in-process (`--workers 0`), with the same bits. The
run folder holds `config.json`, then one part per finished task (`part-<key>.json`/`.npz`,
written atomically), so an interrupted run keeps them and `--resume DIR` computes only the
missing ones; then `arrays.npz` (assembled from the parts), `results.json` and two figures
(`experiments.ntk.plot`).
"""

from ._cli import add_arguments as add_arguments

DESCRIPTION = (
    "NTK of a·s + b·|s| MLPs at the edge of chaos against its infinite-width limit: "
    "error vs width and cond(K∞) vs depth (Terjék & González-Sánchez 2025)"
)


def run(args) -> int:
    """Run the measurements for parsed `args` (JAX and matplotlib are imported only here)."""
    from ._run import run as _run

    return _run(args)


def plot(folder: str) -> list[str]:
    """Redraw the two figures from a run folder's files alone; returns the paths written."""
    from ._plots import plot as _plot

    return _plot(folder)
