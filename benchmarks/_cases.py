"""The benchmark cases. Each returns rows: one measured ratio (or count) with its goal.

A row is a dict: `case`, `title`, `params`, `label`, `value`, `unit`, `goal` (text),
`goal_met` (True/False, or None where no goal applies), `anchor`, `ours`, `theirs` (short
text), `details` (everything measured), `command` (what reproduces it).
"""

from ._case_alpha import case_alpha
from ._case_auto_family import case_auto_family
from ._case_common import CASES, TITLES, Config, size
from ._case_engine import case_engine
from ._case_exprb import case_exprb
from ._case_exprb_linear import case_exprb_linear
from ._case_gd import case_gd
from ._case_horizon import case_horizon
from ._case_kvaerno import case_kvaerno
from ._case_latency import case_latency
from ._case_lazy import case_lazy, case_relu
from ._case_linear import case_linear
from ._case_overhead import case_overhead
from ._case_scipy import case_scipy
from ._case_stiff import case_stiff
from ._case_torch import case_torch
from ._case_transport import case_transport

__all__ = ["CASES", "RUNNERS", "TITLES", "Config", "size"]

RUNNERS = {
    "overhead": case_overhead,
    "scipy": case_scipy,
    "torch": case_torch,
    "gd": case_gd,
    "horizon": case_horizon,
    "linear": case_linear,
    "lazy": case_lazy,
    "alpha": case_alpha,
    "stiff": case_stiff,
    "engine": case_engine,
    "exprb": case_exprb,
    "latency": case_latency,
    "kvaerno": case_kvaerno,
    "relu": case_relu,
    "exprb_linear": case_exprb_linear,
    "auto_family": case_auto_family,
    "transport": case_transport,
}
