"""What is measured along a flow: conserved quantities, alignment and rank of linear nets,
margins, and the Polyak–Łojasiewicz quotient."""

# Conserved quantities (Arora, Cohen & Hazan 2018; Du, Hu & Lee 2018)
# Alignment and rank of deep linear nets
from ._linear import adjacent_alignment as adjacent_alignment
from ._linear import balancedness_drift as balancedness_drift
from ._linear import end_to_end as end_to_end
from ._linear import layer_norm_gaps as layer_norm_gaps
from ._linear import layer_singular_values as layer_singular_values

# Margins and the max-margin direction (Soudry et al. 2018; Ji & Telgarsky 2019)
from ._linear import max_margin_angle as max_margin_angle
from ._linear import neuron_balancedness as neuron_balancedness
from ._linear import neuron_balancedness_drift as neuron_balancedness_drift
from ._linear import normalised_margin as normalised_margin
from ._linear import singular_value_ratio as singular_value_ratio
from ._linear import stable_rank as stable_rank
from ._max_margin import MaxMargin as MaxMargin
from ._max_margin import is_linearly_separable as is_linearly_separable
from ._max_margin import max_margin as max_margin

# The Polyak–Łojasiewicz quotient and the distance travelled
from ._pl import distance_from_init as distance_from_init
from ._pl import pl_constant as pl_constant
from ._pl import pl_quotient as pl_quotient

__all__ = [  # what the API reference documents (tests/flows/test_exports.py)
    "adjacent_alignment",
    "balancedness_drift",
    "end_to_end",
    "layer_norm_gaps",
    "layer_singular_values",
    "max_margin_angle",
    "neuron_balancedness",
    "neuron_balancedness_drift",
    "normalised_margin",
    "singular_value_ratio",
    "stable_rank",
    "MaxMargin",
    "is_linearly_separable",
    "max_margin",
    "distance_from_init",
    "pl_constant",
    "pl_quotient",
]
