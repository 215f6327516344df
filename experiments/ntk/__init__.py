"""`gradflows run ntk`: the NTK of a·s + b·|s| MLPs at the edge of chaos concentrates around its
infinite-width limit at rate m^(−1/2) (Terjék & González-Sánchez 2025).

Modules: `_cli` (options, run folder, the run), `_compute` (kernels and errors), `_report`
(fits, results.json, the summary line), `_plots` (figures drawn from the saved arrays).
"""

from ._cli import DESCRIPTION as DESCRIPTION
from ._cli import add_arguments as add_arguments
from ._cli import run as run
from ._plots import plot as plot
