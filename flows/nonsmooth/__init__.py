"""Non-smooth flows: the Filippov solution of gradient flow for two-layer nets whose
activation has a kink (ReLU, absolute value, leaky ReLU), with sliding on the switching
surfaces (Filippov 1988)."""

from ._filippov import filippov_flow as filippov_flow

__all__ = [  # what the API reference documents (tests/flows/test_exports.py)
    "filippov_flow",
]
