"""Choices for a lazy-training run that belong to the physics, not to a CLI: which form of
`lazy_comparison` an α uses, the horizon that lets the loss fall by D decades, and save times
that resolve both the fastest and the slowest mode."""

import math

import numpy as np

from .._checks import check_positive
from .._solver._stiffness import STABILITY_BOUNDARY
from .._times import log_times

#: α at and above which `lazy_comparison` uses the Taylor-remainder form (see
#: `lazy_remainder_rule`).
LAZY_REMAINDER_ALPHA = 30.0
#: Gauss–Legendre nodes of the remainder integrals.
LAZY_NODES = 3


def lazy_remainder_rule(alpha: float) -> bool:
    """Whether `lazy_comparison` integrates α in the Taylor-remainder form (True) or the direct
    form (False): True exactly when α ≥ `LAZY_REMAINDER_ALPHA` = 30.

    **Why.** The direct form computes the scaled gap's derivative as α(u' − ū'), a difference
    of two O(1) terms: its round-off is α·eps relative, harmless at small α but a floor that
    breaks the gaps' α⁻² slopes (and makes the step-size controller reject steps) as α grows.
    The remainder form computes the same derivative from Gauss–Legendre integrals of the
    second-order Taylor remainder of h at w0, whose round-off is relative to the gap itself;
    its quadrature error on the path w0 + s·u/α falls like ‖u/α‖^(2·nodes − 1), so it needs
    ‖u‖/α small. At α = 30 both errors are far below any tolerance a float64 solve can ask
    for (direct: 30·eps ≈ 7e-15; the two forms' agreement there, and the direct form's lower
    cost per step: docs/performance.md), so the direct form is kept below.

    **Arguments:** `alpha`: the scale α > 0.

    **Returns:** `bool`.

    **Raises:** `ValueError` naming `alpha` if it is not finite and > 0.
    """
    return check_positive("alpha", alpha) >= LAZY_REMAINDER_ALPHA


def lazy_horizon(lambda_min: float, decades: float) -> float:
    """Flow time t1 = D·ln(10)/(2λ_min) in which the squared loss of the linearised flow falls
    by 10^D.

    For R(y) = ½‖y − y*‖² the linear branch's residual obeys r(t) = e^{−tΣ}r(0), so its slowest
    mode decays like e^{−λ_min t} and the loss like e^{−2λ_min t}.

    **Arguments:**
    - `lambda_min`: smallest eigenvalue of the NTK Gram matrix Σ = JJᵀ (1 / flow time), > 0.
    - `decades`: D > 0.

    **Returns:** t1 (flow time), a float.

    **Raises:** `ValueError` naming the argument if it is not finite and > 0 (a singular Σ has
    no such horizon: give t1 yourself).

    **Reference:** Chizat, Oyallon & Bach 2019, §2 (the linearised flow ȳ' = −Σ∇R(ȳ)).
    """
    lambda_min = check_positive("lambda_min", lambda_min)
    decades = check_positive("decades", decades)
    return decades * math.log(10) / (2 * lambda_min)


def lazy_save_times(t1: float, lambda_max: float, n: int = 100) -> np.ndarray:
    """Save times for a lazy run: `log_times(t1, n)` from t_min = min(10⁻³t1, 10⁻²/λ_max) (a
    hundredth of the fastest mode's time scale), joined with 20 evenly spaced times, so that
    both the early fall and the late exponential tail are resolved.

    **Arguments:**
    - `t1`: final flow time, > 0.
    - `lambda_max`: largest eigenvalue of the NTK Gram matrix (1 / flow time), ≥ 0 (0 or
      smaller gives t_min = 10⁻³t1).
    - `n`: number of log-spaced times, ≥ 2.

    **Returns:** float64 array `(T,)`, strictly increasing, from 0 to exactly `t1`.

    **Raises:** `ValueError` naming `t1` or `n`.
    """
    t1 = check_positive("t1", t1)
    lambda_max = float(lambda_max)
    t_min = min(1e-3 * t1, 1e-2 / lambda_max) if lambda_max > 0 else 1e-3 * t1
    return np.union1d(log_times(t1, n, t_min=t_min), np.linspace(0.0, t1, 21)[1:])


def explicit_steps(t1: float, lambda_max: float, solver: str = "tsit5") -> float:
    """The fewest steps an explicit solver can take to t1 on a lazy run's flow: λ_max·t1/b.

    In displacement coordinates u = α(w − w0) the Jacobian of the flow is −Jᵀ∇²R J + O(1/α),
    whose largest eigenvalue for R(y) = ½‖y − y*‖² is λ_max(Σ), Σ = JJᵀ; an explicit
    Runge–Kutta method is stable only for steps h ≤ b/λ_max, b its stability boundary on
    the negative real axis (`flows.STABILITY_BOUNDARY`: Tsit5 3.5, Dopri5 3.3, Dopri8 6.0).
    Once the fast modes have decayed the step is held there, so a run needs at least this
    many steps (the default lazy run: 558 by this bound, 820 taken).

    **Arguments:** `t1`: final flow time, > 0; `lambda_max`: largest eigenvalue of Σ (1 / flow
    time), ≥ 0; `solver`: one of "tsit5", "dopri5", "dopri8".

    **Returns:** the number of steps, a float (0 when λ_max = 0).

    **Raises:** `ValueError` naming `t1`, `lambda_max` or `solver`.

    **Reference:** Hairer & Wanner, Solving ODEs II, §IV.2 (stability domains of explicit
    Runge–Kutta methods).
    """
    t1 = check_positive("t1", t1)
    lambda_max = float(lambda_max)
    if not math.isfinite(lambda_max) or lambda_max < 0:
        raise ValueError(f"lambda_max must be finite and >= 0, got {lambda_max}")
    if solver not in STABILITY_BOUNDARY:
        raise ValueError(f"solver must be one of {tuple(STABILITY_BOUNDARY)}, got {solver!r}")
    return lambda_max * t1 / STABILITY_BOUNDARY[solver]
