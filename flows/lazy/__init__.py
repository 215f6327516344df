"""Lazy training (Chizat, Oyallon & Bach 2019): the flows of F_α and of its linearisation F̄_α
from the same start, the rules that choose how they are integrated, the closed form of the
linear branch, and the theorems' constants."""

# The pair of flows
# The linear branch in closed form (squared loss)
from ._closed_form import LinearBranch as LinearBranch
from ._closed_form import linear_closed_form as linear_closed_form
from ._comparison import LazyComparison as LazyComparison
from ._comparison import lazy_comparison as lazy_comparison

# How the pair is integrated and saved
from ._rules import LAZY_NODES as LAZY_NODES
from ._rules import LAZY_REMAINDER_ALPHA as LAZY_REMAINDER_ALPHA
from ._rules import explicit_steps as explicit_steps
from ._rules import lazy_horizon as lazy_horizon
from ._rules import lazy_remainder_rule as lazy_remainder_rule
from ._rules import lazy_save_times as lazy_save_times

# Theory: constants, bounds and fitted slopes
from ._theory import LazyConstants as LazyConstants
from ._theory import jacobian_lipschitz as jacobian_lipschitz
from ._theory import late_rate as late_rate
from ._theory import lazy_constants as lazy_constants
from ._theory import loglog_slope as loglog_slope
from ._theory import theorem_2_2_bound as theorem_2_2_bound
from ._theory import theorem_2_4_bound as theorem_2_4_bound

__all__ = [  # what the API reference documents (tests/flows/test_exports.py)
    "LinearBranch",
    "linear_closed_form",
    "LazyComparison",
    "lazy_comparison",
    "LAZY_NODES",
    "LAZY_REMAINDER_ALPHA",
    "explicit_steps",
    "lazy_horizon",
    "lazy_remainder_rule",
    "lazy_save_times",
    "LazyConstants",
    "jacobian_lipschitz",
    "late_rate",
    "lazy_constants",
    "loglog_slope",
    "theorem_2_2_bound",
    "theorem_2_4_bound",
]
