"""Heavy-ball momentum, RMSProp and Adam as optax transformations, in the conventions of the
edge-of-stability papers (ε outside the square root, bias correction a switch), with their
hyperparameters checked: optax takes β = 1.5 or ε < 0 silently."""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .._checks import check_flag, check_positive
from ._preconditioned import check_beta, check_eps


def heavy_ball(eta: float, beta: float) -> optax.GradientTransformation:
    """θ_{k+1} = θ_k − η∇L(θ_k) + β(θ_k − θ_{k−1}): `optax.sgd(eta, momentum=beta)`.
    Stable on a quadratic iff ηλ_max < 2 + 2β. **Raises:** `ValueError` naming `eta`
    (not finite and > 0) or `beta` (outside [0, 1))."""
    eta, beta = check_positive("eta", eta), check_beta("beta", beta)
    return optax.sgd(eta, momentum=beta or None)


def rmsprop(
    eta: float,
    beta2: float = 0.99,
    eps: float = 1e-8,
    *,
    bias_correction: bool = False,
    nu0=None,
) -> optax.GradientTransformation:
    """ν_{k+1} = β2ν_k + (1 − β2)g², θ_{k+1} = θ_k − ηg/(√ν̂_{k+1} + ε), ν_0 = 0 (or
    `nu0`), with ν̂ = ν/(1 − β2^{k+1}) if `bias_correction`, else ν̂ = ν: `optax.rmsprop(eta,
    decay=beta2, eps=eps, eps_in_sqrt=False, bias_correction=...)`. Its preconditioner is
    `adaptive_preconditioner(state, eps=eps, beta2=beta2 if bias_correction else None)`.
    `nu0`: ν_0, a pytree of the trainable parameters' structure (entries ≥ 0), e.g. ∇L(θ_0)⊙²,
    so that ν_1 = ∇L(θ_0)⊙², the ν(0) of `central_flow(..., optimizer="rmsprop")`.
    **Raises:** `ValueError` naming `eta`, `beta2` (outside [0, 1)), `eps` (< 0) or `nu0`
    (an entry not finite and ≥ 0; at `init`, not the parameters' structure and shapes),
    `TypeError` naming `bias_correction` (not a bool)."""
    eta, beta2, eps = check_positive("eta", eta), check_beta("beta2", beta2), check_eps(eps)
    bias_correction = check_flag("bias_correction", bias_correction)
    base = optax.rmsprop(
        eta, decay=beta2, eps=eps, eps_in_sqrt=False, bias_correction=bias_correction
    )
    if nu0 is None:
        return base
    nu0 = _check_nu0(nu0)

    def init(params):
        _check_nu0_matches(nu0, params)
        state = base.init(params)
        is_rms = lambda x: hasattr(x, "nu") and hasattr(x, "_replace")  # noqa: E731
        return jax.tree.map(
            lambda x: x._replace(nu=jax.tree.map(jnp.asarray, nu0)) if is_rms(x) else x,
            state,
            is_leaf=is_rms,
        )

    return optax.GradientTransformation(init, base.update)


def _check_nu0(nu0):
    """`nu0` as a pytree of float64 arrays, every entry finite and >= 0, else one line naming
    it: ν_0 = −1 made the first step NaN, reported as "reduce eta"."""
    try:
        nu0 = jax.tree.map(lambda x: np.asarray(x, np.float64), nu0)
        values = [x.ravel() for x in jax.tree.leaves(nu0)]
    except (TypeError, ValueError):
        raise TypeError(
            f"nu0 must be a pytree of arrays of numbers (RMSProp's ν_0), got {nu0!r:.80}"
        ) from None
    flat = np.concatenate(values) if values else np.zeros(0)
    if not flat.size or not np.all(np.isfinite(flat) & (flat >= 0)):
        shown = (
            "no entries"
            if not flat.size
            else f"{int(np.sum(~np.isfinite(flat)))} non-finite entries (NaN or inf)"
            if not np.all(np.isfinite(flat))
            else f"min {np.min(flat):.3g}"
        )
        raise ValueError(f"nu0 must hold entries, each finite and >= 0, got {shown}")
    return nu0


def _check_nu0_matches(nu0, params) -> None:
    """`nu0` of the trainable parameters' structure and shapes (as `optimize` passes them to
    `init`), else one line naming it: a wrong shape failed as "add got incompatible shapes"
    inside the step, a wrong structure as a pytree error naming tree_map."""
    same = jax.tree.structure(nu0) == jax.tree.structure(params) and all(
        np.shape(a) == np.shape(b) for a, b in zip(jax.tree.leaves(nu0), jax.tree.leaves(params))
    )
    if not same:
        shapes = [np.shape(x) for x in jax.tree.leaves(params)]
        raise ValueError(
            "nu0 must have the trainable parameters' structure and shapes "
            f"({jax.tree.structure(params)}, shapes {shapes}), got "
            f"{jax.tree.structure(nu0)}, shapes {[np.shape(x) for x in jax.tree.leaves(nu0)]}"
        )


def adam(
    eta: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-8,
    *,
    bias_correction: bool = True,
) -> optax.GradientTransformation:
    """Adam: μ ← β1μ + (1 − β1)g, ν ← β2ν + (1 − β2)g², θ ← θ − ημ̂/(√ν̂ + ε), with
    μ̂ = μ/(1 − β1^t), ν̂ = ν/(1 − β2^t) if `bias_correction` (then `optax.adam`), else
    μ̂ = μ, ν̂ = ν. Its preconditioner: `adaptive_preconditioner(state, eps=eps,
    beta2=beta2 if bias_correction else None)`. **Raises:** `ValueError` naming `eta`,
    `beta1`, `beta2` (outside [0, 1)), `eps` (< 0) or `bias_correction` (not a bool).

    **Reference:** Kingma & Ba 2015, Algorithm 1; Cohen et al. 2022 (stable on a quadratic
    with ν frozen, no bias correction, iff ηλ_max(P⁻¹H) < (2 + 2β1)/(1 − β1))."""
    eta, eps = check_positive("eta", eta), check_eps(eps)
    beta1, beta2 = check_beta("beta1", beta1), check_beta("beta2", beta2)
    if check_flag("bias_correction", bias_correction):
        return optax.adam(eta, b1=beta1, b2=beta2, eps=eps)
    return optax.chain(_scale_by_adam_uncorrected(beta1, beta2, eps), optax.scale(-eta))


def _scale_by_adam_uncorrected(beta1: float, beta2: float, eps: float):
    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return optax.ScaleByAdamState(count=jnp.zeros([], jnp.int32), mu=zeros, nu=zeros)

    def update(grads, state, params=None):
        mu = jax.tree.map(lambda m, g: beta1 * m + (1 - beta1) * g, state.mu, grads)
        nu = jax.tree.map(lambda v, g: beta2 * v + (1 - beta2) * g * g, state.nu, grads)
        updates = jax.tree.map(lambda m, v: m / (jnp.sqrt(v) + eps), mu, nu)
        return updates, optax.ScaleByAdamState(count=state.count + 1, mu=mu, nu=nu)

    return optax.GradientTransformation(init, update)


class _CurvatureScaled(NamedTuple):
    kappa: float
    curvature: Callable

    def init(self, params):
        """Checks λ(θ_0) where it can be computed (not under a trace): a finite number > 0."""
        lam = _curvature(self.curvature, params)
        if not isinstance(lam, jax.core.Tracer) and not (np.isfinite(lam) and lam > 0):
            raise ValueError(
                f"curvature must return a finite number > 0 (the step is kappa/curvature), "
                f"got {float(lam)!r} at the initial parameters"
            )
        return optax.EmptyState()

    def update(self, grads, state, params=None):
        if params is None:
            raise ValueError("geometry_aware needs params: optimize passes them")
        lam = _curvature(self.curvature, params)
        # λ <= 0 later on: NaN, which optimize reports as the step where it became non-finite
        step = jnp.where(lam > 0, self.kappa / lam, jnp.nan)
        return jax.tree.map(lambda g: -step * g, grads), state


def _curvature(curvature, params):
    """λ(params) as a scalar; a result of several numbers (a vector λ(θ) was applied entry by
    entry to leaves of its shape, and changed the shape of scalar leaves) is one line naming
    `curvature`."""
    lam = jnp.asarray(curvature(params))
    if lam.size != 1:
        raise ValueError(
            f"curvature must return one number (e.g. flows.sharpness(loss, p)[0]), got shape "
            f"{lam.shape}"
        )
    return lam.reshape(())


def geometry_aware(kappa: float, curvature: Callable) -> optax.GradientTransformation:
    """Gradient descent with the step η_k = κ/λ(θ_k): every step at the same multiple κ of
    the local stability limit, 2 < κ < 4 being the catapult window of the uv model.

    This is our reading of the "geometry-aware learning rate schedule that is able to
    prolong the catapult phase indefinitely" of Terjék 2025 ("MLPs at the EOC: Dynamics of
    Feature Learning", arXiv 2502.13110), whose method is not public; it is not the
    authors' scheme.

    **Arguments:**
    - `kappa`: κ > 0 (ηλ per step); (2, 4) is the catapult window of Lewkowycz et al. 2020.
    - `curvature`: λ(params) > 0, a jittable function of the trainable parameters as
      `optimize` passes them to the optimizer (the trainable part of an equinox module,
      `models.partition(params)[0]`): the NTK's top eigenvalue or the sharpness
      (`flows.sharpness`).

    **Returns:** an optax `GradientTransformation` (use it with `optimize`, whose `eta` is
    then η₀ = κ/λ(θ_0), the time axis).

    **Raises:** `ValueError` naming `kappa` (not finite and > 0), or `curvature` when it
    returns more than one number or, at the initial parameters, one not finite and > 0 (a
    λ ≤ 0 later makes the step NaN, which `optimize` reports at its step); `TypeError`
    naming `curvature` (not callable).
    """
    kappa = check_positive("kappa", kappa)
    if not callable(curvature):
        raise TypeError(f"curvature must be a function of the parameters, got {curvature!r}")
    rule = _CurvatureScaled(kappa, curvature)
    return optax.GradientTransformation(rule.init, rule.update)
