"""Optimal transport regularised by an f-divergence: the generalised Sinkhorn algorithm with
its certificates (duality gap, marginal errors), and the particle flow of a point cloud
under that cost.

Reference: Terjék & González-Sánchez, "Optimal transport with f-divergence regularization and
generalized Sinkhorn algorithm", AISTATS 2022 (arXiv 2105.14337).
"""

from ._particle import particle_flow as particle_flow
from ._sinkhorn import SinkhornNotConverged as SinkhornNotConverged
from ._sinkhorn import SinkhornResult as SinkhornResult
from ._sinkhorn import sinkhorn as sinkhorn

__all__ = [  # what the API reference documents (tests/flows/test_exports.py)
    "sinkhorn",
    "SinkhornResult",
    "SinkhornNotConverged",
    "particle_flow",
]
