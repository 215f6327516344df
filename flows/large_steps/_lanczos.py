"""Lanczos on a symmetric operator, full reorthogonalisation, restarted on breakdown: the k
largest eigenpairs to a residual tolerance, under `jit` (one `lax.while_loop`).

Full reorthogonalisation (twice, "twice is enough") keeps the basis orthonormal to round-off,
so no spurious copies of converged Ritz values appear; a breakdown (an invariant subspace, as
on small problems) restarts from a fixed pseudo-random vector orthogonal to the basis, so that
every eigenvalue, repeated ones included, is reached once the basis spans the space.

Reference: Golub & Van Loan, Matrix Computations (4th ed.), §10.1–10.3 (Lanczos, its Ritz
residual β_m|e_mᵀs_i|, full reorthogonalisation); Parlett, The Symmetric Eigenvalue Problem,
ch. 13.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp


def _orthogonalise(V, w, live):
    for _ in range(2):
        c = jnp.where(live, V @ w, 0.0)
        w = w - c @ V
    return w


def _ritz(alpha, beta, j, m):
    """Eigenpairs of the leading (j+1)×(j+1) block of the tridiagonal T, padded to m×m with a
    decoupled diagonal below every Ritz value; ascending."""
    idx = jnp.arange(m)
    live = idx <= j
    a = jnp.where(live, alpha, 0.0)
    b = jnp.where(idx < j, beta, 0.0)
    radius = jnp.abs(b) + jnp.abs(jnp.concatenate([jnp.zeros(1, b.dtype), b[:-1]]))
    low = jnp.min(jnp.where(live, a - radius, jnp.inf))
    pad = low - 1.0 - jnp.max(jnp.where(live, jnp.abs(a) + radius, 0.0))
    T = jnp.diag(jnp.where(live, a, pad)) + jnp.diag(b[:-1], 1) + jnp.diag(b[:-1], -1)
    return jnp.linalg.eigh(T)


def lanczos_top(matvec: Callable, v0, k: int, m_max: int, tol, key=None, check_every: int = 4):
    """The k largest eigenvalues of the symmetric operator `matvec` on R^p, descending.

    `v0` `(p,)`: start vector (a warm start: the sum of the previous eigenvectors); zero is
    replaced by a fixed pseudo-random vector. Stops once the top k Ritz residuals
    β_j|s_ji| ≤ `tol`·max|θ| (then |θ − λ| ≤ that too), or after `m_max` ≤ p products;
    tested every `check_every` products (each test is an eigendecomposition of m_max×m_max).

    Returns `(theta (k,), vectors (k, p), products, residual)`: `residual` the largest
    relative Ritz residual of the k pairs (≤ tol when converged).
    """
    p = v0.shape[0]
    if key is None:
        key = jax.random.PRNGKey(0)
    norm0 = jnp.linalg.norm(v0)
    start = jnp.where(norm0 > 0, v0 / jnp.where(norm0 > 0, norm0, 1.0), 0.0)
    fallback = jax.random.normal(key, (p,), v0.dtype)
    start = jnp.where(norm0 > 0, start, fallback / jnp.linalg.norm(fallback))
    V = jnp.zeros((m_max + 1, p), v0.dtype).at[0].set(start)
    alpha = jnp.zeros(m_max, v0.dtype)
    beta = jnp.zeros(m_max, v0.dtype)
    idx = jnp.arange(m_max + 1)

    def residuals(alpha, beta, j):
        theta, S = _ritz(alpha, beta, j, m_max)
        top = S[:, ::-1][:, :k]
        res = jnp.abs(beta[j] * top[j]) / jnp.maximum(jnp.max(jnp.abs(theta[::-1][:k])), 1e-300)
        ok = jnp.logical_and(j + 1 >= k, jnp.max(res) <= tol)
        return ok, jnp.max(res)

    def cond(carry):
        return jnp.logical_and(carry[3] < m_max, jnp.logical_not(carry[4]))

    def body(carry):
        V, alpha, beta, j, _, _ = carry
        w = matvec(V[j])
        scale = jnp.linalg.norm(w)
        a = V[j] @ w
        w = _orthogonalise(V, w, idx <= j)
        b = jnp.linalg.norm(w)
        breakdown = b <= 1e-12 * jnp.maximum(scale, 1e-300)

        def restart(_):  # only on a breakdown: a random vector orthogonal to the basis
            r = jax.random.normal(jax.random.fold_in(key, j + 1), (p,), w.dtype)
            r = _orthogonalise(V, r, idx <= j)
            r_norm = jnp.linalg.norm(r)
            return r / jnp.where(r_norm > 0, r_norm, 1.0)

        nxt = jax.lax.cond(breakdown, restart, lambda _: w / jnp.where(b > 0, b, 1.0), None)
        alpha, beta = alpha.at[j].set(a), beta.at[j].set(jnp.where(breakdown, 0.0, b))
        V = V.at[j + 1].set(nxt)
        test = jnp.logical_or((j + 1) % check_every == 0, j + 1 >= m_max)
        ok, res = jax.lax.cond(
            test, residuals, lambda *_: (jnp.asarray(False), jnp.asarray(jnp.inf, w.dtype)),
            alpha, beta, j,
        )  # fmt: skip
        return V, alpha, beta, j + 1, ok, res

    init = (V, alpha, beta, jnp.asarray(0), jnp.asarray(False), jnp.asarray(jnp.inf, v0.dtype))
    V, alpha, beta, n, _, res = jax.lax.while_loop(cond, body, init)
    theta, S = _ritz(alpha, beta, n - 1, m_max)
    theta, S = theta[::-1][:k], S[:, ::-1][:, :k]
    vectors = S.T @ V[:m_max]
    vectors = vectors / jnp.linalg.norm(vectors, axis=1, keepdims=True)
    return theta, vectors, n, res
