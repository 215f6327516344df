"""The central flow's event seeks λ_(m+1) only to its sign far below 2/η (`top_eigenpairs`'
`below`): there the sign is right with fewer products; near the level the pairs are those of
the full solve."""

import jax
import jax.numpy as jnp
import numpy as np

from flows.large_steps._sharpness import top_eigenpairs

# H = diag(d): eigenvalues 1 and λ₂, then a spread below 0.45
_REST = np.linspace(0.05, 0.45, 38)


def _quadratic(d, w):
    return 0.5 * jnp.sum(d * w * w)


def _solve(second, level=-np.inf):
    """(level −inf: never certain, the full solve; one compiled program for all)"""
    d = jnp.asarray(np.concatenate([[1.0, second], _REST]))
    start = np.ones((2, 40)) + np.arange(80).reshape(2, 40) % 7  # fixed, not an eigenvector
    return top_eigenpairs(jax.tree_util.Partial(_quadratic, d), jnp.zeros(40), 2, start,
                          tol=1e-10, max_iters=60, below=(1, np.asarray(level), 1e-3))  # fmt: skip


def test_far_below_the_level_only_the_sign_with_fewer_products():
    full, early = _solve(0.5), _solve(0.5, 0.999)
    # measured: 28 products instead of 40 (= p); λ₂ within 4e-5 (its residual), λ₁ to 1e-15
    assert int(early.products) <= int(full.products) - 8
    assert float(early.values[1]) < 0.999
    assert float(early.values[1]) + float(early.residuals[1]) >= 0.5 - 1e-12
    assert abs(float(early.values[0]) - 1.0) < 1e-9  # the pairs before it to tol
    np.testing.assert_allclose(full.values, [1.0, 0.5], rtol=1e-9)


def test_near_the_level_the_full_solve():
    # λ₂ within the margin of the level (above it): no certificate, the same solve
    full, near = _solve(0.9995), _solve(0.9995, 0.999)
    assert int(near.products) == int(full.products)
    np.testing.assert_allclose(near.values, full.values, rtol=1e-12)
    np.testing.assert_allclose(near.values, [1.0, 0.9995], rtol=1e-9)
