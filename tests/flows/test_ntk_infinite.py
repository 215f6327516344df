"""flows.ntk.ntk_infinite against the arc-cosine kernels of Cho & Saul 2009, recursions done by
hand, and bad input."""

import math

import numpy as np
import pytest

import flows


def _inputs(n=6, d=5, seed=0):
    X = np.random.default_rng(seed).standard_normal((n, d))
    return X * np.linspace(0.5, 2.0, n)[:, None]  # unequal norms: q1 ≠ q2


def _arccos(order, Z, sign=1.0):
    """Cho & Saul 2009, eqs. 6–7, between the rows x of Z and the rows sign·y of Z:
    k_0 = 1 − θ/π, k_1 = (1/π)‖x‖‖y‖(sin θ + (π − θ) cos θ), θ the angle."""
    norms = np.linalg.norm(Z, axis=1)
    cos = np.clip(sign * (Z @ Z.T) / np.outer(norms, norms), -1, 1)
    np.fill_diagonal(cos, sign)
    theta = np.arccos(cos)
    if order == 0:
        return 1 - theta / np.pi
    return np.outer(norms, norms) / np.pi * (np.sin(theta) + (np.pi - theta) * np.cos(theta))


@pytest.mark.parametrize("a, b", [(0.5, 0.5), (0.0, 1.0), (0.6, 0.4), (-0.3, 1.7)])
@pytest.mark.parametrize("weight_std", [None, 0.7])
def test_depth_one_equals_the_arc_cosine_kernels(a, b, weight_std):
    # φ = p·relu(s) − m·relu(−s) with p = a + b, m = a − b; for relu, E[r(u)r(v)] = k_1(x, y)/2
    # and E[H(u)H(v)] = k_0(x, y)/2 (Cho & Saul 2009), r(−u) pairs with −x, and φ' = p·H(u) +
    # m·H(−u). (u, v) has the covariance Σ¹ = σ_w²·XXᵀ/d: the Gram of Z = σ_w·X/√d.
    X = _inputs()
    sw2 = 1 / (a * a + b * b) if weight_std is None else weight_std**2
    Z = math.sqrt(sw2 / X.shape[1]) * X
    p, m = a + b, a - b
    phiphi = (p * p + m * m) * _arccos(1, Z) / 2 - p * m * _arccos(1, Z, -1.0)
    dphidphi = (p * p + m * m) * _arccos(0, Z) / 2 + p * m * _arccos(0, Z, -1.0)
    nngp, ntk = flows.ntk.ntk_infinite(X, depth=1, a=a, b=b, weight_std=weight_std)
    # measured: largest error 7e-16 of the largest entry
    scale = np.abs(ntk).max()
    np.testing.assert_allclose(nngp, sw2 * phiphi, rtol=1e-12, atol=1e-12 * scale)
    expected = sw2 * phiphi + sw2 * dphidphi * (Z @ Z.T)
    np.testing.assert_allclose(ntk, expected, rtol=1e-12, atol=1e-12 * scale)


@pytest.mark.parametrize("depth", [1, 2, 5, 30])
def test_relu_diagonal_at_sigma_w_squared_two_is_q_two_and_theta_two_l_plus_one(depth):
    # ‖x‖² = d: Σ¹ = 2·‖x‖²/d = 2. ReLU: E[φ²] = q/2, E[φ'²] = ½. So q = 2·(2/2) = 2 at every
    # layer, Θ^{l+1} = 2 + 2·½·Θ^l = 2 + Θ^l, Θ¹ = 2: Θ^{L+1} = 2(L + 1) with L hidden layers.
    X = _inputs(5, 7)
    X *= np.sqrt(X.shape[1]) / np.linalg.norm(X, axis=1, keepdims=True)
    nngp, ntk = flows.ntk.ntk_infinite(X, depth=depth, a=0.5, b=0.5, weight_std=math.sqrt(2))
    # measured: 1.4e-14 at depth 30, since math.sqrt(2)**2 = 2(1 + 2.2e-16) enters 31 times
    np.testing.assert_allclose(np.diag(nngp), 2.0, rtol=1e-12)
    np.testing.assert_allclose(np.diag(ntk), 2.0 * (depth + 1), rtol=1e-12)


def test_diagonal_with_bias_and_off_the_edge_of_chaos_by_hand():
    # abs: E[φ²] = q, E[φ'²] = 1. σ_w² = 0.5, σ_b² = 0.09, ‖x‖² = d:
    # q1 = 0.5 + 0.09 = 0.59, q2 = 0.5·0.59 + 0.09 = 0.385, q3 = 0.5·0.385 + 0.09 = 0.2825;
    # Θ1 = 0.59, Θ2 = 0.385 + 0.5·0.59 = 0.68, Θ3 = 0.2825 + 0.5·0.68 = 0.6225.
    X = _inputs(4, 3)
    X *= np.sqrt(X.shape[1]) / np.linalg.norm(X, axis=1, keepdims=True)
    nngp, ntk = flows.ntk.ntk_infinite(X, depth=2, a=0.0, b=1.0, weight_std=math.sqrt(0.5),
                                   bias_std=0.3)  # fmt: skip
    np.testing.assert_allclose(np.diag(nngp), 0.2825, rtol=1e-14)
    np.testing.assert_allclose(np.diag(ntk), 0.6225, rtol=1e-14)


def test_duplicate_inputs_give_equal_rows_and_kernels_are_positive_definite():
    X = _inputs(5, 6)
    X[3] = X[1]
    nngp, ntk = flows.ntk.ntk_infinite(X, depth=3, a=0.5, b=0.5)
    # a correlation 1 − O(eps) off the diagonal would cost √eps ≈ 1e-8 in arcsin; measured 0
    np.testing.assert_allclose(ntk[3], ntk[1], rtol=1e-7)
    assert np.allclose(ntk, ntk.T, rtol=0, atol=0)
    X = _inputs(6, 8, seed=2)
    assert np.linalg.eigvalsh(flows.ntk.ntk_infinite(X, depth=3, a=0.0, b=1.0)[1])[0] > 0


def test_scaling_inputs_and_homogeneity():
    # With no bias every entry is homogeneous of degree 1 in σ_w²·‖x‖‖y‖ per layer: doubling X
    # multiplies both kernels by 4; σ_w → c·σ_w multiplies Σ^{L+1} by c^{2(L+1)}.
    X = _inputs()
    n1, t1 = flows.ntk.ntk_infinite(X, depth=2, a=0.2, b=0.9)
    n2, t2 = flows.ntk.ntk_infinite(2 * X, depth=2, a=0.2, b=0.9)
    np.testing.assert_allclose(n2, 4 * n1, rtol=1e-13)
    np.testing.assert_allclose(t2, 4 * t1, rtol=1e-13)
    w = 1 / math.sqrt(0.04 + 0.81)
    n3, _ = flows.ntk.ntk_infinite(X, depth=2, a=0.2, b=0.9, weight_std=1.1 * w)
    np.testing.assert_allclose(n3, 1.1**6 * n1, rtol=1e-13)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(a=0.0, b=0.0), r"\(a, b\) = \(0, 0\)"),
        (dict(a=0.5, b=0.5, weight_std=-1.0), "weight_std must be > 0"),
        (dict(a=0.5, b=0.5, weight_std=0.0), "weight_std must be > 0"),
        (dict(a=0.5, b=0.5, bias_std=-0.1), "bias_std must be >= 0"),
        (dict(a=float("nan"), b=0.5), "a must be a finite number"),
        (dict(a=0.5, b=0.5, depth=0), "depth must be an integer >= 1"),
        (dict(a=0.5, b=0.5, depth=2.0), "depth must be an integer >= 1"),
        (dict(a=0.5, b=0.5, depth=True), "depth must be an integer >= 1"),
        (dict(a=0.5, b=0.5, weight_std=1e3), "lower depth"),  # 1e6 per layer → 1e150 at 25
        (dict(a=0.5, b=0.5, weight_std=1e-3), "safe range"),  # underflow
        (dict(a=0.5, b=0.5, weight_std=1.2, depth=5000), r"layer \d+ of 5001"),
    ],
)
def test_bad_arguments_raise_naming_them(kwargs, match):
    kwargs = {"depth": 30, **kwargs}
    with pytest.raises(ValueError, match=match):
        flows.ntk.ntk_infinite(_inputs(), **kwargs)


def test_large_but_representable_kernels_are_returned_exactly():
    # σ_w² = 100 for ReLU: q is multiplied by 50 per layer, ≈ 1e35 at depth 20, inside the safe
    # range. Θ^{l+1} = q^{l+1} + 50·Θ^l and q^{l+1} = 50·q^l give Θ^{l+1}/q^{l+1} = 1 + Θ^l/q^l:
    # the diagonal ratio is L + 1 = 21 (measured 4e-16 off).
    X = _inputs()
    nngp, ntk = flows.ntk.ntk_infinite(X, depth=20, a=0.5, b=0.5, weight_std=10.0)
    assert np.all(np.isfinite(ntk)) and np.abs(ntk).max() > 1e30
    np.testing.assert_allclose(np.diag(ntk), 21 * np.diag(nngp), rtol=1e-13)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.zeros((3, 2)) + [[1, 0], [0, 0], [1, 1]], r"rows of norm 0 \(rows \[1\]\)"),
        (np.ones(3), r"shape \(n, d\)"),
        (np.array([[1.0, np.nan]]), r"^X: non-finite values \(NaN or inf\)$"),
        (np.array([["a", "b"]]), "numeric"),
        (np.full((2, 2), 1e200), "inputs' variances"),
    ],
)
def test_bad_inputs_raise(X, match):
    with pytest.raises(ValueError, match=match):
        flows.ntk.ntk_infinite(X, depth=2, a=0.5, b=0.5)


def test_a_zero_row_is_allowed_with_a_bias():
    X = np.array([[1.0, 0.0], [0.0, 0.0]])
    nngp, _ = flows.ntk.ntk_infinite(X, depth=1, a=0.5, b=0.5, bias_std=1.0)
    # the zero row: q¹ = σ_b² = 1, then q² = σ_w²·E[relu(u)²] + σ_b² = 2·(1/2)·1 + 1 = 2
    assert nngp[1, 1] == pytest.approx(2.0, rel=1e-14)
