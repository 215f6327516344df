"""How it moves and what is measured: solvers, objectives, observables, closed forms.

The engine lives here (`gradient_flow`, `gradient_descent`, `Trajectory`, `SolveSettings`,
the solvers, the losses, `log_times`); each subject has a subpackage:

- `flows.divergences`: the f-divergence registry (f, f*, (f*)′, (f*)″) and Γ_w, shared by
  optimal transport and f-GANs;
- `flows.games`: GAN training as a two-player game: the GDA flow, its spectrum, the
  discrete maps, GAN objectives and penalties;
- `flows.large_steps`: gradient descent past 2/η: sharpness, modified and central flows,
  the catapult;
- `flows.lazy`: the F_α / F̄_α pair, its rules, closed form and theory constants;
- `flows.nonsmooth`: Filippov flows of two-layer nets with kinked activations;
- `flows.ntk`: the empirical and the infinite-width neural tangent kernel;
- `flows.transport`: optimal transport regularised by an f-divergence (generalised
  Sinkhorn);
- `flows.observables`: balancedness, alignment, ranks, margins, PL quotients.

**Importing `flows` (or `models`) turns on JAX's float64 mode for the whole process**
(`jax.config.update("jax_enable_x64", True)`): gradflows checks theory to solver precision,
which float32 cannot give. From then on JAX creates float64 arrays by default and draws
different numbers from the same PRNG key, and float32 code written for the default mode may
need explicit dtypes. Every entry point refuses state that is not float64 with one line
naming the dtype (a model built before the import, or cast by hand), and refuses to run if
float64 mode was turned off again.

**Importing `flows` also turns on JAX's persistent compilation cache** in a per-user folder
(`$XDG_CACHE_HOME/gradflows/jax`, by default `~/.cache/gradflows/jax`, or the folder named by
`JAX_COMPILATION_CACHE_DIR`), so that a second process on the same problem, a CLI
subprocess or a Dask worker, loads the compiled solve instead of compiling it again. Set
`GRADFLOWS_COMPILATION_CACHE=0` in the environment to turn it off.
"""

import jax

from ._cache import enable_compilation_cache

jax.config.update("jax_enable_x64", True)
enable_compilation_cache()

# The flows: integrating dθ/dt = −∇F(θ), and gradient descent against it
# Subjects, each a subpackage
from . import divergences as divergences  # noqa: E402
from . import games as games  # noqa: E402
from . import large_steps as large_steps  # noqa: E402
from . import lazy as lazy  # noqa: E402
from . import nonsmooth as nonsmooth  # noqa: E402
from . import ntk as ntk  # noqa: E402
from . import observables as observables  # noqa: E402
from . import transport as transport  # noqa: E402
from ._divergence import DivergenceWarning as DivergenceWarning  # noqa: E402
from ._failures import MaxStepsReached as MaxStepsReached  # noqa: E402
from ._flow import Trajectory as Trajectory  # noqa: E402
from ._flow import UndefinedObservableWarning as UndefinedObservableWarning  # noqa: E402
from ._flow import gradient_flow as gradient_flow  # noqa: E402
from ._gd import gradient_descent as gradient_descent  # noqa: E402
from ._integrate import ZeroGradientWarning as ZeroGradientWarning  # noqa: E402

# Losses
from ._losses import CrossEntropyLoss as CrossEntropyLoss  # noqa: E402
from ._losses import ExponentialLoss as ExponentialLoss  # noqa: E402
from ._losses import LogisticLoss as LogisticLoss  # noqa: E402
from ._losses import SquaredLoss as SquaredLoss  # noqa: E402
from ._losses import get_loss as get_loss  # noqa: E402

# Settings, statistics and failures of a solve
from ._settings import SolveSettings as SolveSettings  # noqa: E402
from ._solver._exprb import ExpRosenbrock32 as ExpRosenbrock32  # noqa: E402
from ._solver._gauss import GaussLegendre as GaussLegendre  # noqa: E402
from ._solver._gauss import gauss_legendre_tableau as gauss_legendre_tableau  # noqa: E402

# Solvers (the "auto" rule and the registry of names)
from ._solver._solvers import SOLVERS as SOLVERS  # noqa: E402
from ._solver._solvers import make_solver as make_solver  # noqa: E402
from ._solver._stiffness import STABILITY_BOUNDARY as STABILITY_BOUNDARY  # noqa: E402
from ._solver_options import Auto as Auto  # noqa: E402
from ._solver_options import Kvaerno5 as Kvaerno5  # noqa: E402
from ._stats import SolveStats as SolveStats  # noqa: E402

# Save times
from ._times import log_times as log_times  # noqa: E402

# Gradient descent at large steps (also in flows.large_steps)
from .large_steps import central_flow as central_flow  # noqa: E402
from .large_steps import modified_flow as modified_flow  # noqa: E402
from .large_steps import sharpness as sharpness  # noqa: E402

__all__ = [  # what the API reference documents (tests/flows/test_exports.py)
    "divergences",
    "games",
    "large_steps",
    "lazy",
    "nonsmooth",
    "ntk",
    "observables",
    "transport",
    "MaxStepsReached",
    "Trajectory",
    "UndefinedObservableWarning",
    "gradient_flow",
    "gradient_descent",
    "DivergenceWarning",
    "ZeroGradientWarning",
    "ExponentialLoss",
    "LogisticLoss",
    "SquaredLoss",
    "CrossEntropyLoss",
    "get_loss",
    "SolveSettings",
    "Auto",
    "Kvaerno5",
    "ExpRosenbrock32",
    "GaussLegendre",
    "gauss_legendre_tableau",
    "SOLVERS",
    "make_solver",
    "STABILITY_BOUNDARY",
    "SolveStats",
    "log_times",
    "central_flow",
    "modified_flow",
    "sharpness",
]
