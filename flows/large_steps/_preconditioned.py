"""The preconditioned sharpness λ_max(P⁻¹H) of an adaptive optimizer, with the diagonal
preconditioner P = √ν̂ + ε read from its optax state (Cohen et al. 2022)."""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from models import partition

from .._checks import check_number
from ._sharpness import sharpness


def check_beta(name: str, beta) -> float:
    """A decay rate β in [0, 1), else one line naming `name`."""
    beta = check_number(name, beta)
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"{name} must lie in [0, 1), got {beta!r}")
    return beta


def check_eps(eps) -> float:
    """ε ≥ 0, else one line naming eps."""
    eps = check_number("eps", eps)
    if eps < 0.0:
        raise ValueError(f"eps must be >= 0, got {eps!r}")
    return eps


def _second_moment(opt_state):
    """The first state in `opt_state` holding `nu` (optax's `scale_by_adam` /
    `scale_by_rms` states), or a `ValueError` naming opt_state."""
    nodes = jax.tree.leaves(opt_state, is_leaf=lambda x: hasattr(x, "nu"))
    found = [x for x in nodes if hasattr(x, "nu")]
    if not found:
        raise ValueError(
            "opt_state holds no second-moment estimate nu (the state of optax's adam, "
            "rmsprop, scale_by_adam or scale_by_rms)"
        )
    return found[0]


def adaptive_preconditioner(
    opt_state, *, eps: float, beta2: float | None = None, eps_in_sqrt: bool = False
):
    """The diagonal preconditioner P = √ν̂ + ε of RMSProp or Adam, read from an optax state.

    **Arguments:**
    - `opt_state`: the optimizer's state (`optimize` passes it to `state_observables`);
      its first node with a `nu` field (optax's `ScaleByAdamState`, `ScaleByRmsState`) is
      used.
    - `eps`: the optimizer's ε ≥ 0.
    - `beta2`: None for no bias correction (ν̂ = ν: RMSProp); β2 in [0, 1) to use
      ν̂ = ν/(1 − β2^t) with the state's step count t (Adam; the state must have `count`).
    - `eps_in_sqrt`: P = √(ν̂ + ε) instead (optax's `rmsprop` default, `eps_in_sqrt=True`).

    **Returns:** P, a pytree of the shape of ν (the trainable parameters), every entry > 0
    when ε > 0. With `beta2`, before the first step (count 0) ν̂ = 0/0 is NaN: P is not
    defined there, and an observable of it is reported undefined at t = 0
    (`Trajectory.undefined`), not recorded as a number.

    **Raises:** `ValueError` naming `eps` (< 0 or not finite), `beta2` (outside [0, 1)) or
    `opt_state` (no ν; no step count for `beta2`).

    **Reference:** Cohen et al. 2022, "Adaptive gradient methods at the edge of stability",
    §2 (P_t = diag(√ν̂_t + ε); Adam is stable on a quadratic iff λ_max(P⁻¹H) < (2 + 2β1) /
    ((1 − β1)η), 38/η at β1 = 0.9).
    """
    eps = check_eps(eps)
    state = _second_moment(opt_state)
    nu = state.nu
    if beta2 is not None:
        beta2 = check_beta("beta2", beta2)
        if not hasattr(state, "count"):
            raise ValueError(
                "opt_state has no step count for bias correction (beta2 given): use "
                "beta2=None for an optimizer without it"
            )
        correction = 1.0 - beta2 ** jnp.asarray(state.count, jnp.float64)
        nu = jax.tree.map(lambda v: v / correction, nu)
    if eps_in_sqrt:
        return jax.tree.map(lambda v: jnp.sqrt(v + eps), nu)
    return jax.tree.map(lambda v: jnp.sqrt(v) + eps, nu)


def preconditioned_sharpness(
    loss: Callable, params: Any, preconditioner: Any, k: int = 1, **options
) -> jnp.ndarray:
    """The k largest eigenvalues of P⁻¹H, H = ∇²loss(params), for a diagonal P > 0.

    They are those of the symmetric P^{-1/2}HP^{-1/2}, the Hessian of u ↦ loss(P^{-1/2}u) at
    u = P^{1/2}θ, computed by `flows.sharpness` (Lanczos on Hessian-vector products, float64,
    works under `jit`). An optimizer whose step is θ ← θ − ηP⁻¹g is stable on a quadratic iff
    η·λ_max(P⁻¹H) < 2 (RMSProp with frozen ν); with heavy-ball or EMA momentum β1 the limit
    is 2 + 2β1, or (2 + 2β1)/(1 − β1) for Adam's EMA.

    **Arguments:**
    - `loss`, `params`, `k`, `**options` (`tol`, `max_iters`, `v0`, `eigenvectors`): as in
      `flows.sharpness`.
    - `preconditioner`: P, a pytree of the structure of the trainable parameters (as
      `adaptive_preconditioner` returns it from an optax state), entries finite and > 0.

    **Returns:** the values `(k,)`, descending, in the loss's units per parameter² divided
    by P's units.

    **Raises:** `ValueError` naming `preconditioner` (another structure or shapes, an entry
    not finite and > 0, outside `jit`) and what `flows.sharpness` raises.

    **Reference:** Cohen et al. 2022, "Adaptive gradient methods at the edge of stability",
    §2 (preconditioned sharpness λ_max(P_t⁻¹H_t)).
    """
    trainable, static = partition(params)
    try:
        root = jax.tree.map(lambda a, p: jnp.sqrt(jnp.broadcast_to(p, jnp.shape(a))), trainable,
                            preconditioner)  # fmt: skip
    except (ValueError, TypeError):
        shapes = lambda tree: [jnp.shape(x) for x in jax.tree.leaves(tree)]  # noqa: E731
        raise ValueError(  # the shapes too: a (3,) P for (2,) weights printed two equal trees
            "preconditioner must have the structure and shapes of the trainable parameters "
            f"(got {jax.tree.structure(preconditioner)}, shapes {shapes(preconditioner)}, for "
            f"{jax.tree.structure(trainable)}, shapes {shapes(trainable)})"
        ) from None
    leaves = jax.tree.leaves(preconditioner)
    if not any(isinstance(x, jax.core.Tracer) for x in leaves):
        values = np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in leaves] or [[]])
        if not np.all(np.isfinite(values) & (values > 0)):
            raise ValueError("preconditioner must be finite and > 0 everywhere")
    scaled = eqx.combine(jax.tree.map(lambda a, r: a * r, trainable, root), static)

    def scaled_loss(model):
        u, rest = partition(model)
        return loss(eqx.combine(jax.tree.map(lambda a, r: a / r, u, root), rest))

    return sharpness(scaled_loss, scaled, k, **options)
