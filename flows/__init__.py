"""How it moves and what is measured: solvers, objectives, observables, closed forms."""

import jax

jax.config.update("jax_enable_x64", True)

from ._flow import Trajectory as Trajectory  # noqa: E402
from ._flow import gradient_flow as gradient_flow  # noqa: E402
from ._integrate import MaxStepsReached as MaxStepsReached  # noqa: E402
from ._lazy import LazyComparison as LazyComparison  # noqa: E402
from ._lazy import lazy_comparison as lazy_comparison  # noqa: E402
from ._losses import ExponentialLoss as ExponentialLoss  # noqa: E402
from ._losses import LogisticLoss as LogisticLoss  # noqa: E402
from ._losses import SquaredLoss as SquaredLoss  # noqa: E402
from ._losses import get_loss as get_loss  # noqa: E402
from ._solvers import make_solver as make_solver  # noqa: E402
from ._theory import LazyConstants as LazyConstants  # noqa: E402
from ._theory import jacobian_lipschitz as jacobian_lipschitz  # noqa: E402
from ._theory import late_rate as late_rate  # noqa: E402
from ._theory import lazy_constants as lazy_constants  # noqa: E402
from ._theory import loglog_slope as loglog_slope  # noqa: E402
from ._theory import ntk_gram as ntk_gram  # noqa: E402
from ._theory import theorem_2_2_bound as theorem_2_2_bound  # noqa: E402
from ._theory import theorem_2_4_bound as theorem_2_4_bound  # noqa: E402
from ._times import log_times as log_times  # noqa: E402
