"""`gradflows run transport`: optimal transport regularised by each f-divergence, solved by the
generalised Sinkhorn algorithm, on two 2-D clouds (Terjék & González-Sánchez, AISTATS 2022,
arXiv 2105.14337).

For each of the 8 Legendre f and each ε of a grid: iterations to the marginal tolerance, wall
time, the plan's fraction of nonzeros, the marginal error and the duality gap, and whether it
converged (with ε-scaling: every larger ε of the grid warm-starts the next). Then the particle
flow ẋ_i = −n ∇_{x_i} OT_{ε,f} for KL and χ², whose mean decays as e^{−t}.

Each (f, ε) cell and each flow is a task of the sweep layer (`experiments._sweep`): on a local
Dask cluster (`--workers N`), a running one (`--scheduler`) or in-process (`--workers 0`). The
run folder holds `config.json`, one part per finished task (so an interrupted run keeps them and
`--resume DIR` computes only the missing ones), then `arrays.npz`, `results.json` and four
figures (`experiments.transport.plot`).
"""

from ._cli import add_arguments as add_arguments

DESCRIPTION = (
    "f-divergence-regularised OT: generalised Sinkhorn iterations, sparsity and certificates "
    "over ε for 8 f, and particle flows (Terjék & González-Sánchez 2022)"
)


def run(args) -> int:
    """Run the measurements for parsed `args` (JAX and matplotlib are imported only here)."""
    from ._run import run as _run

    return _run(args)


def plot(folder: str) -> list[str]:
    """Redraw the figures from a run folder's files alone; returns the paths written."""
    from ._plots import plot as _plot

    return _plot(folder)
