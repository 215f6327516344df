"""How it moves and what is measured: solvers, objectives, observables, closed forms.

**Importing `flows` (or `models`) turns on JAX's float64 mode for the whole process**
(`jax.config.update("jax_enable_x64", True)`): gradflows checks theory to solver precision,
which float32 cannot give. From then on JAX creates float64 arrays by default and draws
different numbers from the same PRNG key, and float32 code written for the default mode may
need explicit dtypes. Every entry point refuses state that is not float64 with one line
naming the dtype (a model built before the import, or cast by hand), and refuses to run if
float64 mode was turned off again.
"""

import jax

jax.config.update("jax_enable_x64", True)

from ._closed_form import LinearBranch as LinearBranch  # noqa: E402
from ._closed_form import linear_closed_form as linear_closed_form  # noqa: E402
from ._exprb import ExpRosenbrock32 as ExpRosenbrock32  # noqa: E402
from ._failures import MaxStepsReached as MaxStepsReached  # noqa: E402
from ._filippov import filippov_flow as filippov_flow  # noqa: E402
from ._flow import Trajectory as Trajectory  # noqa: E402
from ._flow import UndefinedObservableWarning as UndefinedObservableWarning  # noqa: E402
from ._flow import gradient_flow as gradient_flow  # noqa: E402
from ._gauss import GaussLegendre as GaussLegendre  # noqa: E402
from ._gauss import gauss_legendre_tableau as gauss_legendre_tableau  # noqa: E402
from ._gd import gradient_descent as gradient_descent  # noqa: E402
from ._lazy import LazyComparison as LazyComparison  # noqa: E402
from ._lazy import lazy_comparison as lazy_comparison  # noqa: E402
from ._lazy_rules import LAZY_NODES as LAZY_NODES  # noqa: E402
from ._lazy_rules import LAZY_REMAINDER_ALPHA as LAZY_REMAINDER_ALPHA  # noqa: E402
from ._lazy_rules import explicit_steps as explicit_steps  # noqa: E402
from ._lazy_rules import lazy_horizon as lazy_horizon  # noqa: E402
from ._lazy_rules import lazy_remainder_rule as lazy_remainder_rule  # noqa: E402
from ._lazy_rules import lazy_save_times as lazy_save_times  # noqa: E402
from ._losses import ExponentialLoss as ExponentialLoss  # noqa: E402
from ._losses import LogisticLoss as LogisticLoss  # noqa: E402
from ._losses import SquaredLoss as SquaredLoss  # noqa: E402
from ._losses import get_loss as get_loss  # noqa: E402
from ._max_margin import MaxMargin as MaxMargin  # noqa: E402
from ._max_margin import is_linearly_separable as is_linearly_separable  # noqa: E402
from ._max_margin import max_margin as max_margin  # noqa: E402
from ._ntk import ntk_gram as ntk_gram  # noqa: E402
from ._ntk_infinite import ntk_infinite as ntk_infinite  # noqa: E402
from ._observables import adjacent_alignment as adjacent_alignment  # noqa: E402
from ._observables import balancedness_drift as balancedness_drift  # noqa: E402
from ._observables import end_to_end as end_to_end  # noqa: E402
from ._observables import layer_norm_gaps as layer_norm_gaps  # noqa: E402
from ._observables import layer_singular_values as layer_singular_values  # noqa: E402
from ._observables import max_margin_angle as max_margin_angle  # noqa: E402
from ._observables import neuron_balancedness as neuron_balancedness  # noqa: E402
from ._observables import neuron_balancedness_drift as neuron_balancedness_drift  # noqa: E402
from ._observables import normalised_margin as normalised_margin  # noqa: E402
from ._observables import singular_value_ratio as singular_value_ratio  # noqa: E402
from ._observables import stable_rank as stable_rank  # noqa: E402
from ._pl import distance_from_init as distance_from_init  # noqa: E402
from ._pl import pl_constant as pl_constant  # noqa: E402
from ._pl import pl_quotient as pl_quotient  # noqa: E402
from ._problems import SeparableDeepLinear as SeparableDeepLinear  # noqa: E402
from ._problems import separable_deep_linear as separable_deep_linear  # noqa: E402
from ._settings import SolveSettings as SolveSettings  # noqa: E402
from ._solvers import SOLVERS as SOLVERS  # noqa: E402
from ._solvers import make_solver as make_solver  # noqa: E402
from ._stats import SolveStats as SolveStats  # noqa: E402
from ._stiffness import STABILITY_BOUNDARY as STABILITY_BOUNDARY  # noqa: E402
from ._theory import LazyConstants as LazyConstants  # noqa: E402
from ._theory import jacobian_lipschitz as jacobian_lipschitz  # noqa: E402
from ._theory import late_rate as late_rate  # noqa: E402
from ._theory import lazy_constants as lazy_constants  # noqa: E402
from ._theory import loglog_slope as loglog_slope  # noqa: E402
from ._theory import theorem_2_2_bound as theorem_2_2_bound  # noqa: E402
from ._theory import theorem_2_4_bound as theorem_2_4_bound  # noqa: E402
from ._times import log_times as log_times  # noqa: E402
