"""Closed form of the linearised flow for the squared loss."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_positive, check_ts
from .._flat import jacobian
from .._losses import SquaredLoss


@dataclasses.dataclass(frozen=True)
class LinearBranch:
    """The linearised flow w̄_α(t) in closed form, at times `ts` (shape `(T,)`).

    - `ubar`: displacement α(w̄_α(t) − w0), flat, shape `(T, p)` (flattening order of
      `models.partition(model)[0]`'s leaves).
    - `outputs`: ȳ(t) = αh̄(w̄_α(t)) on the training inputs, shape `(T,) + Y.shape`.
    - `loss`: R(ȳ(t)), shape `(T,)`.
    - `ntk_eigenvalues`: eigenvalues of c·Σ, Σ = JJᵀ (c = 1 for a sum, 1/n for a mean),
      ascending, shape `(n·k,)`, with round-off-level ones set to 0.
    """

    ts: np.ndarray
    ubar: np.ndarray
    outputs: np.ndarray
    loss: np.ndarray
    ntk_eigenvalues: np.ndarray


def linear_closed_form(model, data, alpha: float, ts, *, loss=None, eig_tol: float = 1e-12):
    """The flow of F̄_α(w) = R(αh̄(w))/α² for R(y) = ½‖y − y*‖² (sum, or mean over rows).

    With J = Dh(w0) (shape `(n·k, p)`), A = c·JJᵀ and r0 = αh(w0) − y*:
      ȳ(t) = y* + e^{−tA} r0,   ū(t) = α(w̄ − w0) = −c·Jᵀ φ_t(A) r0,   φ_t(λ) = (1 − e^{−tλ})/λ,
    computed through an eigendecomposition of A. Eigenvalues below `eig_tol`·λ_max (round-off,
    including slightly negative ones) are set to 0. On such a mode v, Jᵀv = 0 exactly
    (‖Jᵀv‖² = vᵀJJᵀv = 0), so it contributes nothing to ū at any t: φ is taken as 0 there,
    not φ_t(0) = t, which would multiply the round-off in the computed Jᵀv by t. The outputs
    on those modes do not decay. A singular Σ thus gives no NaN, and as t → ∞ ū tends to the
    minimum-norm solution −J⁺r0 (J⁺ the pseudo-inverse at the same cut-off).

    **Arguments:**
    - `model`: equinox Module on one input `(d,)`; `data`: `(X (n, d), Y (n,) or (n, k))`.
    - `alpha`: scale α > 0. `ts`: times `(T,)` in [0, ∞), increasing, flow-time units.
    - `loss`: a `SquaredLoss` (default: sum).

    **Returns:** a `LinearBranch`.

    **Raises:** `ValueError` naming `alpha`, `ts` or `loss` when they are out of range.

    **Reference:** Chizat, Oyallon & Bach 2019, §2 (linearised model); Jacot et al. 2018.
    """
    alpha = check_positive("alpha", alpha)
    ts = np.asarray(ts, dtype=np.float64)
    ts = check_ts(ts, ts.max() if ts.size else 0.0)
    loss = SquaredLoss() if loss is None else loss
    if not isinstance(loss, SquaredLoss):
        raise ValueError(f"loss must be a SquaredLoss for the closed form, got {loss!r}")
    X, Y = (jnp.asarray(a, dtype=jnp.float64) for a in data)
    J, w0, h = jacobian(model, X)
    c, _ = loss.curvature(X.shape[0])
    lam, V = jnp.linalg.eigh(c * (J @ J.T))
    lam = jnp.where(lam > eig_tol * jnp.max(jnp.abs(lam)), lam, 0.0)
    r0 = V.T @ (alpha * h(w0) - jnp.ravel(Y))
    t = jnp.asarray(ts)[:, None]
    decay = jnp.exp(-t * lam)
    safe = jnp.where(lam > 0, lam, 1.0)
    phi = jnp.where(lam > 0, -jnp.expm1(-t * lam) / safe, 0.0)
    outputs = jnp.ravel(Y) + (decay * r0) @ V.T
    ubar = -c * ((phi * r0) @ V.T) @ J
    losses = jax.vmap(lambda y: loss(y.reshape(Y.shape), Y))(outputs)
    return LinearBranch(
        ts=ts,
        ubar=np.asarray(ubar),
        outputs=np.asarray(outputs).reshape((len(ts),) + Y.shape),
        loss=np.asarray(losses),
        ntk_eigenvalues=np.asarray(lam),
    )
