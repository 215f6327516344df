"""The infinite-width NNGP and NTK of an MLP with φ(s) = a·s + b·|s|, in closed form.

Conventions are those of neural-tangents: `stax.Dense(W_std, b_std, parameterization="ntk")`
after every hidden layer's `stax.ABRelu(a − b, a + b)` (which is a·s + b·|s|), read-out
included, inputs entering as XXᵀ/d. With σ_w = `weight_std`, σ_b = `bias_std`:

    Σ¹ = σ_w²·XXᵀ/d + σ_b²,                    Θ¹ = Σ¹,
    Σ^{l+1} = σ_w²·E[φ(u)φ(v)] + σ_b²,          Θ^{l+1} = Σ^{l+1} + σ_w²·E[φ'(u)φ'(v)]·Θ^l,

(u, v) centred Gaussian with covariance Σ^l on each pair of inputs, for l = 1, …, depth; the
network's kernels are Σ^{depth+1} (NNGP) and Θ^{depth+1} (NTK). With variances q1, q2 and
correlation ρ (the cross terms a·b vanish by the symmetry (u, v) → (−u, −v)):

    E[φ(u)φ(v)]   = a²·ρ√(q1q2) + b²·(2/π)·√(q1q2)·(√(1−ρ²) + ρ·arcsin ρ),
    E[φ'(u)φ'(v)] = a² + b²·(2/π)·arcsin ρ,

the arc-cosine kernels of orders 1 and 0 (Cho & Saul 2009, eqs. 6–7) written for |s| and s.
"""

import math

import numpy as np
from jaxtyping import Float

from .._checks import check_finite

# Kernel entries are kept in [1e-150, 1e150]: products of two entries (Σ·Θ, q1·q2) then stay
# far inside float64, whose range is [2.2e-308, 1.8e308].
_SAFE = 1e150


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def _checked(X, depth, a, b, weight_std, bias_std):
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1 (hidden layers), got {depth!r}")
    a, b = _number("a", a), _number("b", b)
    if a == 0 and b == 0:
        raise ValueError("(a, b) = (0, 0) is the zero activation: its kernels vanish")
    if weight_std is None:
        weight_std = 1.0 / math.sqrt(a * a + b * b)  # the edge of chaos
    weight_std = _number("weight_std", weight_std)
    if weight_std <= 0:
        raise ValueError(f"weight_std must be > 0 (a standard deviation), got {weight_std}")
    bias_std = _number("bias_std", 0.0 if bias_std is None else bias_std)
    if bias_std < 0:
        raise ValueError(f"bias_std must be >= 0 (a standard deviation), got {bias_std}")
    X = np.asarray(X)
    if not np.issubdtype(X.dtype, np.number) or np.iscomplexobj(X):
        raise ValueError(f"X must be a real numeric array, got dtype {X.dtype}")
    X = X.astype(np.float64)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must have shape (n, d) with n, d >= 1, got {X.shape}")
    check_finite("X", X)
    return X, int(depth), a, b, weight_std, bias_std


def _diagonal_scales(q1, depth, slope2, sw2, sb2):
    """The diagonals of Σ^l and Θ^l for l = 1, …, depth + 1 (rows of shape (n,)), from
    E[φ(u)²] = (a² + b²)q and E[φ'(u)²] = a² + b²; slope2 = a² + b²."""
    q, theta = q1, q1
    out = [(q, theta)]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for _ in range(depth):
            q_next = sw2 * slope2 * q + sb2
            theta = q_next + sw2 * slope2 * theta
            q = q_next
            out.append((q, theta))
    return out


def ntk_infinite(
    X: Float[np.ndarray, "n d"],
    *,
    depth: int,
    a: float,
    b: float,
    weight_std: float | None = None,
    bias_std: float | None = None,
) -> tuple[Float[np.ndarray, "n n"], Float[np.ndarray, "n n"]]:
    """The infinite-width NNGP and NTK kernels of an MLP with φ(s) = a·s + b·|s|.

    The MLP has `depth` hidden layers, each `Dense` then φ, and a `Dense` read-out with one
    output, in the NTK parameterisation: a layer of fan-in n computes (σ_w/√n)·W x + σ_b·β
    with W, β standard normal, and the NTK is the Gram matrix of the gradient in (W, β).
    This is what neural-tangents computes for `stax.serial(*[Dense(1, W_std, b_std,
    parameterization="ntk"), ABRelu(a − b, a + b)] * depth, Dense(1, W_std, b_std,
    parameterization="ntk"))`, and what `flows.ntk.ntk_gram` of a
    `models.MLP(..., parameterization="ntk", activation=models.abs_family(a, b))` estimates
    at initialisation. Kernels are not divided by n.

    On the diagonal ρ = 1 is used exactly: the arcsin of a correlation computed as 1 − 1e-16
    would be off by √eps ≈ 1e-8.

    **Arguments:**
    - `X`: inputs, shape `(n, d)`, finite; a row of norm 0 is allowed only with
      `bias_std` > 0 (its variance would be 0 and its correlations undefined).
    - `depth`: number of hidden layers, an integer ≥ 1.
    - `a`, `b`: the activation's coefficients, finite, not both 0. ReLU is (½, ½), the
      absolute value (0, 1).
    - `weight_std`: σ_w > 0 on every layer, read-out included. Default: the edge of chaos
      σ_w² = 1/(a² + b²), where E[φ(u)²] = q/σ_w² keeps the variances q of the layers equal.
    - `bias_std`: σ_b ≥ 0. Default 0 (no bias).

    **Returns:** `(nngp, ntk)`: Σ^{depth+1} and Θ^{depth+1}, each of shape `(n, n)`, float64,
    symmetric.

    **Raises:** `ValueError` naming the argument: `depth` < 1 or not an integer; `a`, `b`,
    `weight_std`, `bias_std` not finite; (a, b) = (0, 0); `weight_std` ≤ 0 or `bias_std` < 0;
    `X` not of shape (n, d), not finite, or with a zero row and no bias; and kernels that would
    leave [1e-150, 1e150] (σ_w²(a² + b²) far from 1 over many layers, or huge inputs), which
    is reported with the layer where it happens, never returned as inf, NaN or a huge number.

    **Reference:** Cho & Saul 2009, "Kernel methods for deep learning", eqs. 6–7 (arc-cosine
    kernels); Jacot, Gabriel & Hongler 2018, Thm 1 (the NTK recursion); Novak et al. 2020,
    "Neural Tangents" (`stax.Dense`, `stax.ABRelu`); Terjék & González-Sánchez 2025 (the
    family a·s + b·|s| at the edge of chaos).
    """
    X, depth, a, b, weight_std, bias_std = _checked(X, depth, a, b, weight_std, bias_std)
    n, d = X.shape
    sw2, sb2, a2, b2 = weight_std**2, bias_std**2, a * a, b * b
    with np.errstate(over="ignore", invalid="ignore"):
        S = sw2 * (X @ X.T) / d + sb2
    S = 0.5 * (S + S.T)
    q1 = np.diagonal(S).copy()
    zero = np.flatnonzero(q1 == 0)
    if zero.size:
        raise ValueError(
            f"X has rows of norm 0 (rows {zero[:5].tolist()}): with bias_std = 0 their "
            "variance is 0 and their correlations are undefined"
        )
    for layer, (q, theta) in enumerate(_diagonal_scales(q1, depth, a2 + b2, sw2, sb2), 1):
        worst = max(np.max(q), np.max(theta))
        if not (np.isfinite(worst) and worst <= _SAFE and np.min(q) >= 1 / _SAFE):
            where = "the inputs' variances" if layer == 1 else f"layer {layer} of {depth + 1}"
            raise ValueError(
                f"the kernels leave float64's safe range [1e-150, 1e150] at {where} (largest "
                f"diagonal {worst:.3g}, smallest {np.min(q):.3g}): weight_std²·(a² + b²) = "
                f"{sw2 * (a2 + b2):.6g} multiplies them per layer; lower depth ({depth}) or "
                f"bring weight_std ({weight_std:.6g}) towards the edge of chaos "
                f"{1 / math.sqrt(a2 + b2):.6g}, or rescale X"
            )
    T = S.copy()
    eye = np.eye(n, dtype=bool)
    for _ in range(depth):
        q = np.diagonal(S).copy()
        root = np.sqrt(np.outer(q, q))
        rho = np.clip(S / root, -1.0, 1.0)
        rho[eye] = 1.0
        sine, arc = np.sqrt(1.0 - rho * rho), np.arcsin(rho)
        phi_phi = a2 * S + b2 * (2 / np.pi) * root * (sine + rho * arc)
        dphi_dphi = a2 + b2 * (2 / np.pi) * arc
        phi_phi[eye] = (a2 + b2) * q  # ρ = 1 exactly: √(1−ρ²) = 0, arcsin ρ = π/2
        dphi_dphi[eye] = a2 + b2
        S = sw2 * phi_phi + sb2
        T = S + sw2 * dphi_dphi * T
    return 0.5 * (S + S.T), 0.5 * (T + T.T)
