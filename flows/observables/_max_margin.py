"""The hard-margin SVM direction through the origin, and a separability check.

Both use maintained solvers: scipy's NNLS (Lawson–Hanson) for the SVM's quadratic program,
scipy's HiGHS for the feasibility linear program. A linear network has no bias, so both work
through the origin.
"""

import dataclasses

import numpy as np
from jaxtyping import ArrayLike, Float

from .._checks import check_finite


@dataclasses.dataclass(frozen=True)
class MaxMargin:
    """The hard-margin SVM solution without intercept.

    - `direction`: unit vector ŵ = w*/‖w*‖, shape `(d,)`.
    - `margin`: γ = min_i y_i⟨ŵ, x_i⟩ = 1/‖w*‖.
    - `support`: indices of the training points on the margin (y_i⟨w*, x_i⟩ ≤ 1 + 1e-6).
    - `solver`: how it was computed, with its settings.
    """

    direction: np.ndarray
    margin: float
    support: np.ndarray
    solver: dict


def signed_inputs(X, y) -> np.ndarray:
    """Rows y_i x_i, after checking shapes, finiteness and labels ±1 (both present)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, d) and y (n,), got shapes {X.shape} and {y.shape}")
    check_finite("X", X)
    check_finite("y", y)
    if not np.all(np.abs(y) == 1):
        raise ValueError("y must hold labels -1 and +1")
    if len(np.unique(y)) < 2:
        raise ValueError("y must contain both classes, -1 and +1")
    return y[:, None] * X


def _unit_scale(Z: np.ndarray) -> tuple[np.ndarray, float]:
    """`(Z / s, s)` with s = max |Z_ij| (1 when Z = 0): separability, the direction and the
    support do not change under Z → Z/s and the margin scales by s, while the solvers'
    absolute tolerances (HiGHS's 1e-7 feasibility, the NNLS residual) assume entries of order
    one (X·1e-8 was called separable only below float64's resolution, X·1e20 and X·1e-20
    not separable)."""
    s = float(np.max(np.abs(Z), initial=0.0))
    return (Z / s, s) if s > 0 else (Z, 1.0)


def is_linearly_separable(X: Float[ArrayLike, "n d"], y: Float[ArrayLike, " n"]) -> bool:
    """Whether some w satisfies y_i⟨w, x_i⟩ > 0 for all i (a hyperplane through the origin).

    Solved as the feasibility linear program y_i⟨w, x_i⟩ ≥ 1 (equivalent by scaling) with
    scipy's HiGHS.

    **Arguments:** `X` of shape `(n, d)`, `y` of shape `(n,)` with entries ±1, both present.

    **Returns:** `True` if separable through the origin.

    **Raises:** `ValueError` for bad shapes, non-finite values or labels other than ±1;
    `RuntimeError` if the LP solver reports neither a solution nor infeasibility.
    """
    from scipy.optimize import linprog

    Z, _ = _unit_scale(signed_inputs(X, y))
    d = Z.shape[1]
    res = linprog(
        np.zeros(d), A_ub=-Z, b_ub=-np.ones(len(Z)), bounds=[(None, None)] * d, method="highs"
    )
    if res.status == 0:
        return True
    if res.status == 2:
        return False
    raise RuntimeError(f"the separability LP did not finish: {res.message}")


def _least_distance(Z: np.ndarray):
    """min ‖w‖ s.t. Zw ≥ 1 by Lawson & Hanson's least-distance method: u ≥ 0 minimising
    ‖Eu − f‖ with E = [Zᵀ; 1ᵀ], f = (0, …, 0, 1) (NNLS), then w = −r₁..d / r_{d+1} for the
    residual r = Eu − f; r = 0 means the constraints are infeasible. Returns `(w, u, r_{d+1})`
    (u is the dual vector α up to the factor 1 + ‖w‖²)."""
    from scipy.optimize import nnls

    n, d = Z.shape
    E = np.vstack([Z.T, np.ones((1, n))])
    f = np.zeros(d + 1)
    f[-1] = 1.0
    u, _ = nnls(E, f, maxiter=50 * (n + d))
    r = E @ u - f
    return -r[:d] / r[d], u, float(r[d])


def max_margin(X: Float[ArrayLike, "n d"], y: Float[ArrayLike, " n"]) -> MaxMargin:
    """The hard-margin SVM direction without intercept: w* = argmin ‖w‖ s.t. y_i⟨w, x_i⟩ ≥ 1.

    Solved as what it is, a convex quadratic program, exactly: in the least-distance form
    of Lawson & Hanson, one non-negative least-squares problem (`scipy.optimize.nnls`, an
    active-set method that ends at the exact optimum up to round-off). It is solved twice,
    the second time on the inputs divided by the first margin, so that ‖w*‖ = 1 there and
    the division by the last residual loses nothing; the result is then polished on its
    support S (w = the minimum-norm solution of y_i⟨w, x_i⟩ = 1, i ∈ S, kept if its dual
    multipliers are ≥ 0 and every margin holds). No penalty C, tolerance or iteration
    budget: features on any scale (one multiplied by 1000) give the same optimum as
    SLSQP to ~1e-12.

    **Arguments:** `X`: inputs, shape `(n, d)`; `y`: labels ±1 (both present), shape `(n,)`.

    **Returns:** a `MaxMargin`; `margin` γ = 1/‖w*‖ in the units of `X`.

    **Raises:** `ValueError` for bad shapes or labels, or when the data are not linearly
    separable through the origin (the feasibility LP of `is_linearly_separable`, checked
    first; then no hyperplane through 0 has every y_i⟨w, x_i⟩ > 0, and there is no margin).

    **Reference:** Lawson & Hanson 1974, "Solving Least Squares Problems", ch. 23 (the
    least-distance program via NNLS); Soudry, Hoffer, Nacson, Gunasekar & Srebro 2018,
    eq. (4) (the direction gradient descent on separable data converges to).
    """
    Z, unit = _unit_scale(signed_inputs(X, y))
    if not is_linearly_separable(X, y):
        raise ValueError(
            f"X, y: the {len(Z)} points are not linearly separable through the origin (no w "
            "has y_i<w, x_i> > 0 for every i: the feasibility LP is infeasible), so there is "
            "no hard margin; a network without bias cannot separate them either"
        )
    w, _, last = _least_distance(Z)
    gamma = 1.0 / float(np.linalg.norm(w))
    if not (np.isfinite(gamma) and last < 0):
        raise ValueError(
            "X, y: the points are separable only with a margin below float64's resolution"
        )
    w, u, _ = _least_distance(Z / gamma)  # margin 1 there: ‖w‖ = 1, r_{d+1} = −1/2
    w = w / gamma
    active = np.flatnonzero(u > 0)
    polished = np.linalg.lstsq(Z[active], np.ones(len(active)), rcond=None)[0]
    dual = np.linalg.lstsq(Z[active].T, polished, rcond=None)[0]
    if np.all(dual >= 0) and np.min(Z @ polished) >= np.min(Z @ w):
        w = polished
    margins = Z @ w
    norm = float(np.linalg.norm(w))
    return MaxMargin(
        direction=w / norm,
        margin=float(margins.min() / norm) * unit,
        support=np.flatnonzero(margins <= 1 + 1e-6),
        solver={
            "name": "scipy.optimize.nnls",
            "form": "least-distance program (Lawson & Hanson 1974, ch. 23), polished on "
            "its support",
            "min_constraint": float(margins.min()),
        },
    )
