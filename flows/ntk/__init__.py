"""The neural tangent kernel: the empirical Gram matrix of a model, and the infinite-width
kernel of an MLP with activation a·s + b·|s| (Jacot, Gabriel & Hongler 2018)."""

from ._gram import ntk_gram as ntk_gram
from ._infinite import ntk_infinite as ntk_infinite

__all__ = [  # what the API reference documents (tests/flows/test_exports.py)
    "ntk_gram",
    "ntk_infinite",
]
