"""A warning, once at the start, where gradient descent's step η is past what a tool assumes
of it: S(0) > 2/η for gradient descent (unstable from its first step), ηλ_max > 1 for the
modified flows (the premise of backward error analysis fails)."""

import warnings

import numpy as np

from ._hessian import flat_loss
from ._sharpness import top_eigenpairs

# A Lanczos estimate of λ_max: a Rayleigh quotient vᵀHv ≤ λ_max, so a warning it triggers is
# never a false alarm; 20 products find λ_max to a few digits on the problems at hand.
_ITERS, _TOL = 20, 1e-6


class EdgeOfStabilityWarning(UserWarning):
    """Gradient descent's step η is past what the tool assumes at the start: S(0) > 2/η for
    `gradient_descent`, ηλ_max(0) > 1 for `modified_flow`."""


def warn_above_edge(
    who: str, loss, params, eta: float, bound: float, name: str, meaning: str, stacklevel=3
) -> float:
    """Warn once (`EdgeOfStabilityWarning`) where η·λ_max(params) > `bound`, naming λ_max (as
    `name`), `bound`/η and η·λ_max, and `meaning` (what fails there). Silent where the
    Hessian is not finite (a diagnostic never raises). `stacklevel` as `warnings.warn`'s,
    counted from this function: 3 names the caller of the function that calls it.
    Returns the estimate of λ_max (NaN where the Hessian is not finite)."""
    f, w, _, _ = flat_loss(loss, params)
    values = np.asarray(top_eigenpairs(f, w, 1, tol=_TOL, max_iters=_ITERS).values)
    lam = float(values[0])
    if np.isfinite(lam) and eta * lam > bound:
        warnings.warn(
            f"{who}: {name} = {lam:.6g} > {bound:g}/eta = {bound / eta:.6g} (eta·{name} = "
            f"{eta * lam:.4g} > {bound:g}; {name} is the Hessian's top eigenvalue at params0, "
            f"by Lanczos, a lower bound): {meaning}",
            EdgeOfStabilityWarning,
            stacklevel=stacklevel,
        )
    return lam
