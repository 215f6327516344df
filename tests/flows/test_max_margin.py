"""The hard-margin SVM as a convex QP solved exactly, on any feature scale (issue #24, part 2)."""

import numpy as np
import pytest
from scipy.optimize import minimize, nnls
from sklearn.svm import LinearSVC

import flows


def _slsqp(Z, start):
    """The primal QP min ½‖w‖² s.t. Zw ≥ 1 by scipy's SLSQP, started near the optimum (from
    0 it stops early on badly scaled features: "positive directional derivative")."""
    return minimize(
        lambda w: 0.5 * w @ w,
        start,
        jac=lambda w: w,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda w: Z @ w - 1, "jac": lambda w: Z}],
        options={"ftol": 1e-16, "maxiter": 1000},
    ).x


def test_max_margin_is_exact_when_one_feature_is_a_thousand_times_the_others():
    # 60 separable points in R^5, the first feature ×1000: liblinear (the former solver)
    # raised RuntimeError here at every C and max_iter tried.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    y = np.sign(X @ rng.standard_normal(5))
    X[:, 0] *= 1000
    Z = y[:, None] * X
    mm = flows.observables.max_margin(X, y)
    w_star = mm.direction / mm.margin
    w_qp = _slsqp(Z, 1.01 * w_star)
    # Measured: margin 0.0739841611936 against SLSQP's, relative 2.5e-11; direction 7.9e-12.
    np.testing.assert_allclose(mm.margin, 1 / np.linalg.norm(w_qp), rtol=1e-9)
    np.testing.assert_allclose(mm.direction, w_qp / np.linalg.norm(w_qp), atol=1e-9)
    # KKT: every margin ≥ 1 (measured min 1 − 3.3e-13), the support's at 1, and
    # w* = Σ_S α_i z_i with α ≥ 0 (NNLS residual measured 0 to round-off).
    margins = Z @ w_star
    assert margins.min() >= 1 - 1e-10
    np.testing.assert_allclose(margins[mm.support], 1.0, atol=1e-10)
    assert np.all(margins[np.setdiff1d(np.arange(60), mm.support)] > 1 + 1e-6)
    _, residual = nnls(Z[mm.support].T, w_star)
    assert residual <= 1e-10 * np.linalg.norm(w_star)
    # The margin is in the units of X: scaling every input by 10 scales it by 10.
    np.testing.assert_allclose(flows.observables.max_margin(10 * X, y).margin, 10 * mm.margin,
                               rtol=1e-10)  # fmt: skip


def test_max_margin_agrees_with_scikit_learn_where_liblinear_converges(digits_3_8):
    X, y = digits_3_8
    mm = flows.observables.max_margin(X, y)
    svc = LinearSVC(loss="hinge", fit_intercept=False, C=1e6, tol=1e-10, max_iter=100_000)
    w = svc.fit(X, y).coef_[0]
    gamma = np.min(y * (X @ w)) / np.linalg.norm(w)
    # Measured on digits 3/8 (100 points, 64 features): margin 1.57087 both, relative 3e-11;
    # directions 3.0e-11 apart.
    np.testing.assert_allclose(mm.margin, gamma, rtol=1e-8)
    np.testing.assert_allclose(mm.direction, w / np.linalg.norm(w), atol=1e-8)
    assert mm.solver["name"] == "scipy.optimize.nnls"


@pytest.mark.parametrize("name", ["X", "y"])
def test_max_margin_refuses_non_finite_data_naming_it(name):
    X = np.array([[1.0, 2.0], [-1.0, -2.0], [3.0, 1.0]])
    y = np.array([1.0, -1.0, 1.0])
    if name == "X":
        X[1, 0] = np.nan
    else:
        y[2] = np.inf
    with pytest.raises(ValueError, match=rf"^{name}: non-finite values \(NaN or inf\)$"):
        flows.observables.max_margin(X, y)


def test_max_margin_says_in_one_line_that_the_data_are_not_separable():
    X = np.array([[1.0, 2.0], [-1.0, -2.0], [3.0, 1.0]])
    y = np.array([1.0, 1.0, -1.0])  # x and −x with one label: no hyperplane through 0
    with pytest.raises(ValueError, match=r"^X, y: the 3 points are not linearly separable"):
        flows.observables.max_margin(X, y)


@pytest.mark.parametrize("unit", [1e-300, 1e-20, 1e-8, 1e20, 1e300])
def test_max_margin_is_equivariant_under_the_units_of_X(unit):
    # X·1e-8 was "separable only with a margin below float64's resolution", X·1e±20 and
    # X·1e±300 "not linearly separable": the solvers' absolute tolerances assumed entries ~1.
    # The margin scales by the unit exactly; at unit 1 it is 1/√2 (support: all three points).
    X = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.5]])
    y = np.array([1.0, 1.0, -1.0])
    assert flows.observables.is_linearly_separable(X * unit, y)
    result = flows.observables.max_margin(X * unit, y)
    assert result.margin / unit == pytest.approx(2**-0.5, rel=1e-13)
    np.testing.assert_allclose(result.direction, [2**-0.5, 2**-0.5, 0.0], atol=1e-13)
    np.testing.assert_array_equal(result.support, [0, 1, 2])
