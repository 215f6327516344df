"""Which claim from which paper: one module per seed figure or theorem, and the CLI."""

from ._portraits import ModelLoss as ModelLoss
from ._portraits import Portrait as Portrait
from ._portraits import ScalarLinearNet as ScalarLinearNet
from ._portraits import ScaledObjective as ScaledObjective
from ._portraits import TwoWeightNet as TwoWeightNet
from ._portraits import balancedness as balancedness
from ._portraits import conservation_portrait as conservation_portrait
from ._portraits import flow_portrait as flow_portrait
from ._portraits import lazy_flow_portrait as lazy_flow_portrait
from ._portraits import linearized as linearized
from ._portraits import save_figure as save_figure
from ._portraits import surface_portrait as surface_portrait
