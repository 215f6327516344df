"""GAN training as a two-player game: the gradient descent–ascent (GDA) flow, the spectrum of
its Jacobian, and the discrete maps (SimGD, AltGD, extragradient, consensus optimisation) on the
flow's time axis.

Conventions: params = (generator, discriminator); a loss is one L(gen, disc), which the
generator descends and the discriminator ascends, or a pair (L_gen, L_disc); a discrete step η
covers flow time η (step k at t = kη).

The vocabulary:

- the flow and its spectrum: `gda_flow`, `GameField`, `jacobian_eigenvalues`;
- the discrete maps: `gradient_descent_ascent` (SimGD, AltGD), `extragradient`,
  `consensus_optimization`, `ode_gan_splitting`, `step_eigenvalues`, `METHODS`;
- GAN objectives on fixed samples: `gan_loss`, `OBJECTIVES`, `ACTIVATIONS` (the f-GAN's
  output activations for the f of `flows.divergences`);
- penalties: `R1`, `R2`, `GradientPenalty`, `OneSidedLipschitz`, `AdversarialLipschitz`,
  `MoreauYosida`, `InstanceNoise`, `AbstractPenalty`;
- the Dirac-GAN: `dirac_gan`, `dirac_data`, `dirac_eigenvalues`, `dirac_period`.

Reference: Mescheder, Geiger & Nowozin, "Which training methods for GANs actually converge?",
ICML 2018.
"""

from ._dirac import dirac_data as dirac_data
from ._dirac import dirac_eigenvalues as dirac_eigenvalues
from ._dirac import dirac_gan as dirac_gan
from ._dirac import dirac_period as dirac_period
from ._fgan import ACTIVATIONS as ACTIVATIONS
from ._field import GameField as GameField
from ._flow import gda_flow as gda_flow
from ._maps import METHODS as METHODS
from ._maps import consensus_optimization as consensus_optimization
from ._maps import extragradient as extragradient
from ._maps import gradient_descent_ascent as gradient_descent_ascent
from ._maps import ode_gan_splitting as ode_gan_splitting
from ._maps import step_eigenvalues as step_eigenvalues
from ._objectives import OBJECTIVES as OBJECTIVES
from ._objectives import gan_loss as gan_loss
from ._penalties import R1 as R1
from ._penalties import R2 as R2
from ._penalties import AbstractPenalty as AbstractPenalty
from ._penalties import AdversarialLipschitz as AdversarialLipschitz
from ._penalties import GradientPenalty as GradientPenalty
from ._penalties import InstanceNoise as InstanceNoise
from ._penalties import MoreauYosida as MoreauYosida
from ._penalties import OneSidedLipschitz as OneSidedLipschitz
from ._spectrum import jacobian_eigenvalues as jacobian_eigenvalues

__all__ = [  # what the API reference documents (tests/flows/test_exports.py)
    "gda_flow",
    "GameField",
    "jacobian_eigenvalues",
    "gradient_descent_ascent",
    "extragradient",
    "consensus_optimization",
    "ode_gan_splitting",
    "step_eigenvalues",
    "METHODS",
    "gan_loss",
    "OBJECTIVES",
    "ACTIVATIONS",
    "AbstractPenalty",
    "R1",
    "R2",
    "GradientPenalty",
    "OneSidedLipschitz",
    "AdversarialLipschitz",
    "MoreauYosida",
    "InstanceNoise",
    "dirac_gan",
    "dirac_data",
    "dirac_eigenvalues",
    "dirac_period",
]
