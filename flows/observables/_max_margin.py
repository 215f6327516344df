"""The hard-margin SVM direction through the origin, and a separability check.

Both use maintained solvers: scikit-learn's liblinear for the SVM and scipy's HiGHS for the
feasibility linear program. A linear network has no bias, so both work through the origin.
"""

import dataclasses
import warnings

import numpy as np
from jaxtyping import ArrayLike, Float


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
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite")
    if not np.all(np.abs(y) == 1):
        raise ValueError("y must hold labels -1 and +1")
    if len(np.unique(y)) < 2:
        raise ValueError("y must contain both classes, -1 and +1")
    return y[:, None] * X


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

    Z = signed_inputs(X, y)
    d = Z.shape[1]
    res = linprog(
        np.zeros(d), A_ub=-Z, b_ub=-np.ones(len(Z)), bounds=[(None, None)] * d, method="highs"
    )
    if res.status == 0:
        return True
    if res.status == 2:
        return False
    raise RuntimeError(f"the separability LP did not finish: {res.message}")


def max_margin(
    X: Float[ArrayLike, "n d"],
    y: Float[ArrayLike, " n"],
    *,
    C: float = 1e6,
    tol: float = 1e-10,
    max_iter: int = 100_000,
) -> MaxMargin:
    """The hard-margin SVM direction without intercept: w* = argmin ‖w‖ s.t. y_i⟨w, x_i⟩ ≥ 1.

    Computed with scikit-learn's `LinearSVC(loss="hinge", fit_intercept=False, C=C)` (liblinear
    dual coordinate descent); for separable data and C above the largest dual multiplier this
    is the hard-margin solution. The result is checked: every margin y_i⟨w, x_i⟩ ≥ 1 − 1e-6.

    **Arguments:**
    - `X`: inputs, shape `(n, d)`; `y`: labels ±1 (both present), shape `(n,)`.
    - `C`: the soft-margin penalty, large (hard margin).
    - `tol`, `max_iter`: liblinear's stopping tolerance and iteration budget.

    **Returns:** a `MaxMargin`.

    **Raises:**
    - `ValueError` for bad shapes or labels, or when the data are not linearly separable
      through the origin (checked first with `is_linearly_separable`).
    - `RuntimeError` when liblinear does not converge or the result violates the hard margin
      (raise `C` or `max_iter`).

    **Reference:** Soudry, Hoffer, Nacson, Gunasekar & Srebro 2018, eq. (4) (the direction
    gradient descent on separable data converges to).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    Z = signed_inputs(X, y)
    if not is_linearly_separable(X, y):
        raise ValueError("the data are not linearly separable through the origin: no max margin")
    svc = LinearSVC(loss="hinge", fit_intercept=False, C=C, tol=tol, max_iter=max_iter, dual=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        try:
            svc.fit(np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64))
        except ConvergenceWarning:
            raise RuntimeError(
                f"LinearSVC did not converge in max_iter={max_iter} iterations (tol={tol})"
            ) from None
    w = svc.coef_[0].astype(np.float64)
    margins = Z @ w
    if margins.min() < 1 - 1e-6:
        raise RuntimeError(
            f"the SVM solution violates the hard margin (min y_i<w,x_i> = {margins.min():.3g}); "
            f"raise C (got {C})"
        )
    norm = float(np.linalg.norm(w))
    return MaxMargin(
        direction=w / norm,
        margin=float(margins.min() / norm),
        support=np.flatnonzero(margins <= 1 + 1e-6),
        solver={"name": "sklearn.svm.LinearSVC", "loss": "hinge", "C": C, "tol": tol},
    )
