"""What is trained: models, their linearisation and symmetrisation, and initialisations.

**Importing `models` (or `flows`) turns on JAX's float64 mode for the whole process**
(`jax.config.update("jax_enable_x64", True)`), so that models are built in float64, the
precision of every `flows` entry point. JAX then creates float64 arrays by default and the
same PRNG key draws different numbers than in the default float32 mode.
"""

import jax

jax.config.update("jax_enable_x64", True)

from ._activations import AbsFamily as AbsFamily  # noqa: E402
from ._activations import abs_family as abs_family  # noqa: E402
from ._activations import activation as activation  # noqa: E402
from ._deep_linear import DeepLinearNet as DeepLinearNet  # noqa: E402
from ._dirac_gan import DiracGAN as DiracGAN  # noqa: E402
from ._dirac_gan import DiracGenerator as DiracGenerator  # noqa: E402
from ._dirac_gan import LinearCritic as LinearCritic  # noqa: E402
from ._frozen import Frozen as Frozen  # noqa: E402
from ._frozen import partition as partition  # noqa: E402
from ._frozen import read_frozen as read_frozen  # noqa: E402
from ._linearize import Linearized as Linearized  # noqa: E402
from ._linearize import linearize as linearize  # noqa: E402
from ._mlp import MLP as MLP  # noqa: E402
from ._symmetrize import Centred as Centred  # noqa: E402
from ._symmetrize import Doubled as Doubled  # noqa: E402
from ._symmetrize import symmetrize as symmetrize  # noqa: E402
from ._two_layer import TwoLayerNet as TwoLayerNet  # noqa: E402

__all__ = [  # what the API reference documents (tests/flows/test_exports.py)
    "AbsFamily",
    "abs_family",
    "activation",
    "DeepLinearNet",
    "DiracGAN",
    "DiracGenerator",
    "LinearCritic",
    "Frozen",
    "partition",
    "read_frozen",
    "Linearized",
    "linearize",
    "MLP",
    "Centred",
    "Doubled",
    "symmetrize",
    "TwoLayerNet",
]
