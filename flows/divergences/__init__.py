"""f-divergences: the registry of normalised generators f (f(1) = f′(1) = 0) with their
convex conjugates f*, (f*)′, (f*)″ and the domain of f*, and Γ_w, the normaliser of the
generalised c-transform. Shared by optimal transport (`flows.transport`) and f-GANs.

`get(name)` returns the generator object; `DIVERGENCES` lists the names. Every generator but
"tv" is of Legendre type; "tv" serves variational bounds only and is refused where the
Legendre property is needed (Γ, the generalised Sinkhorn algorithm).

Reference: Terjék & González-Sánchez, "Optimal transport with f-divergence regularization and
generalized Sinkhorn algorithm", AISTATS 2022 (arXiv 2105.14337).
"""

# The registry
from ._gamma import gamma as gamma
from ._generators import DIVERGENCES as DIVERGENCES
from ._generators import JS as JS
from ._generators import KL as KL
from ._generators import TV as TV
from ._generators import AbstractDivergence as AbstractDivergence
from ._generators import Chi2 as Chi2
from ._generators import Hellinger2 as Hellinger2
from ._generators import Jeffreys as Jeffreys
from ._generators import ReverseChi2 as ReverseChi2
from ._generators import ReverseKL as ReverseKL
from ._generators import Triangular as Triangular
from ._generators import get as get

# Special functions
from ._lambertw import lambertw as lambertw
from ._lambertw import wright_omega as wright_omega

__all__ = [  # what the API reference documents (tests/flows/test_exports.py)
    "DIVERGENCES",
    "get",
    "gamma",
    "AbstractDivergence",
    "KL",
    "ReverseKL",
    "Chi2",
    "ReverseChi2",
    "Hellinger2",
    "JS",
    "Jeffreys",
    "Triangular",
    "TV",
    "lambertw",
    "wright_omega",
]
