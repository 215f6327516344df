"""Gradient descent at large steps against the flows: the sharpness, the modified flows of
backward error analysis, the central flow at the edge of stability, and the catapult map;
any optax optimizer on the same time axis (`optimize`), with the preconditioned sharpness of
the adaptive ones.

Conventions: L the loss, H = ∇²L, sharpness S = λ_max(H); a gradient-descent step η covers
flow time η (step k at t = kη).
"""

from .._optimize import optimize as optimize
from ._catapult import catapult_map as catapult_map
from ._catapult import uv_init as uv_init
from ._catapult import uv_invariant as uv_invariant
from ._catapult import uv_loss as uv_loss
from ._catapult import uv_ntk as uv_ntk
from ._catapult import uv_output as uv_output
from ._central import EdgeLimitReached as EdgeLimitReached
from ._central import central_flow as central_flow
from ._complementarity import ComplementarityError as ComplementarityError
from ._cosine import update_cosine as update_cosine
from ._edge_warning import EdgeOfStabilityWarning as EdgeOfStabilityWarning
from ._modified import modified_flow as modified_flow
from ._optimizers import adam as adam
from ._optimizers import geometry_aware as geometry_aware
from ._optimizers import heavy_ball as heavy_ball
from ._optimizers import rmsprop as rmsprop
from ._preconditioned import adaptive_preconditioner as adaptive_preconditioner
from ._preconditioned import preconditioned_sharpness as preconditioned_sharpness
from ._sharpness import Sharpness as Sharpness
from ._sharpness import SharpnessAlong as SharpnessAlong
from ._sharpness import sharpness as sharpness
from ._sharpness import sharpness_along as sharpness_along

__all__ = [
    "catapult_map",
    "uv_init",
    "uv_invariant",
    "uv_loss",
    "uv_ntk",
    "uv_output",
    "central_flow",
    "ComplementarityError",
    "EdgeLimitReached",
    "EdgeOfStabilityWarning",
    "update_cosine",
    "modified_flow",
    "optimize",
    "adam",
    "geometry_aware",
    "heavy_ball",
    "rmsprop",
    "adaptive_preconditioner",
    "preconditioned_sharpness",
    "Sharpness",
    "SharpnessAlong",
    "sharpness",
    "sharpness_along",
]
