"""Band (block) Lanczos on a symmetric operator, full reorthogonalisation, restarted on
breakdown: the k largest eigenpairs, repeated eigenvalues included, to a residual tolerance,
under `jit` (one `lax.while_loop`).

A Krylov space grown from one vector holds one direction of each eigenspace, so single-vector
Lanczos cannot see a repeated eigenvalue: it returns the next distinct value instead. Grown
from a block of b vectors it holds b directions of each eigenspace, so every multiplicity up
to b is seen; with b = k all k largest eigenvalues are found with their multiplicities. The
block is grown one vector at a time (Ruhe's band form: v_{j+b} ∝ (I − VVᵀ)Hv_j), so the
number of Hessian-vector products need not be a multiple of b. Every inner product vᵢ·Hv_j
with the basis is kept, so the projected matrix is VᵀHV itself and not a model of it. Full
reorthogonalisation (twice, "twice is enough") keeps the basis orthonormal to round-off; a
breakdown (an invariant subspace reached, as from a warm start inside one) restarts from a
pseudo-random vector orthogonal to the basis, so that Lanczos goes on outside what it found.

Reference: Golub & Van Loan, Matrix Computations (4th ed.), §10.3.6 (block Lanczos), §10.1
(the Ritz residual); Ruhe 1979, "Implementation aspects of band Lanczos algorithms for
computation of eigenvalues of large sparse symmetric matrices", Math. Comp. 33; Parlett, The
Symmetric Eigenvalue Problem, ch. 13.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp


def _orthogonalise(V, w, live):
    for _ in range(2):
        w = w - jnp.where(live, V @ w, 0.0) @ V
    return w


def _unit(w):
    norm = jnp.linalg.norm(w)
    return w / jnp.where(norm > 0, norm, 1.0), norm


def start_block(v0, key, mix: bool = True):
    """Orthonormal start rows `(b, p)` from `v0` `(b, p)`: each nonzero row (a warm start)
    is normalised and, with `mix`, mixed with an equal part of a pseudo-random unit vector,
    so that the Krylov space reaches, as from a cold start, modes outside the warm start's
    span (without it a warm start near the eigenvectors converges in fewer products); zero
    rows are pseudo-random."""
    b, p = v0.shape
    norms = jnp.linalg.norm(v0, axis=1, keepdims=True)
    noise = jax.random.normal(key, (b, p), v0.dtype)
    noise = noise / jnp.linalg.norm(noise, axis=1, keepdims=True)
    warm = v0 / jnp.where(norms > 0, norms, 1.0) + (noise if mix else 0.0)
    rows = jnp.where(norms > 0, warm, noise)
    q, _ = jnp.linalg.qr(rows.T)
    return q.T


def band_lanczos_top(
    matvec: Callable, V0, k: int, n_max: int, tol, key, check_every: int = 4, need=None,
    below=None,
):  # fmt: skip
    """The k largest eigenpairs of the symmetric operator `matvec` on R^p, descending.

    `V0` `(b, p)` orthonormal start rows (b ≥ 1; b ≥ k to see every multiplicity in the top
    k). At most `n_max` ≤ p products; stops once the top `need` (default k) Ritz pairs
    (θ, y) have relative residual ‖Hy − θy‖/max|θ| ≤ `tol`, tested every `check_every`
    products (each test is an eigendecomposition of an n_max-square matrix).

    `below` `(i, level, loose)` (i may be traced, level in `matvec`'s units): only the sign
    of θ_i − level is sought. Pair i also stops once its relative residual is ≤ `loose` and
    θ_i + ‖Hy − θ_iy‖ < level: an eigenvalue lies within the residual of θ_i, and once the
    pair has converged that far it is λ_i's (θ_i + the residual alone is no bound on λ_i:
    on the peer MLP at S = 2/η, after 2 products from the central flow's warm start mixed
    with a random part, θ₁ was 0.495·2/η, with a residual below 0.504·2/η, its eigenvalue
    λ₂ = 0.494·2/η; the central flow's event came 0.19 late). Its value is then only as
    accurate as that residual; the pairs after i are not sought, those before as before.

    Returns `(theta (k,), vectors (k, p), products, residual)`: `residual` the largest
    relative Ritz residual of the top `need` pairs (≤ tol when converged).
    """
    need = k if need is None else need
    b, p = V0.shape
    size = n_max + b
    V = jnp.zeros((size, p), V0.dtype).at[:b].set(V0)
    valid = jnp.arange(size) < b
    T = jnp.zeros((size, n_max), V0.dtype)  # T[i, j] = v_i · H v_j, i ≤ j + b
    idx = jnp.arange(size)

    def ritz(T, valid, n):
        live = (idx[:n_max] < n) & valid[:n_max]
        upper = jnp.triu(T[:n_max])
        A = upper + jnp.triu(upper, 1).T
        A = jnp.where(live[:, None] & live[None, :], A, 0.0)
        pad = -(1.0 + jnp.sum(jnp.abs(A)))  # below every Ritz value: decoupled padding
        theta, S = jnp.linalg.eigh(A + jnp.diag(jnp.where(live, 0.0, pad)))
        theta, S = theta[::-1][:k], jnp.where(live[:, None], S[:, ::-1][:, :k], 0.0)
        # Hy − θy lies in the span of the vectors not yet multiplied (i ≥ n)
        outside = jnp.where((idx >= n)[:, None], T, 0.0) @ S
        residual = jnp.linalg.norm(outside, axis=0) / jnp.maximum(jnp.max(jnp.abs(theta)), 1e-300)
        return theta, S, residual, jnp.sum(live) >= k

    def largest(residual):
        return jnp.max(residual[:need])

    def sought(theta, residual):
        """Whether each pair is found (to `tol`, or certainly below `below`'s level)."""
        done = jnp.arange(k) >= need
        done = done | (residual <= tol)
        if below is not None:
            i, level, loose = below
            scale = jnp.maximum(jnp.max(jnp.abs(theta)), 1e-300)
            certain = (residual <= loose) & (theta + residual * scale < level)
            done = done | (jnp.arange(k) > i) | ((jnp.arange(k) == i) & certain)
        return done

    def cond(carry):
        return jnp.logical_and(carry[3] < n_max, jnp.logical_not(carry[4]))

    def body(carry):
        V, valid, T, j, _, _ = carry
        w = matvec(V[j])
        live = idx < j + b
        c = jnp.where(live & valid, V @ w, 0.0)
        w = _orthogonalise(V, w - c @ V, live & valid)
        nxt, beta = _unit(w)
        # a breakdown (an invariant subspace): restart orthogonally to the basis
        scale = jnp.max(jnp.abs(c)) + jnp.linalg.norm(w)
        breakdown = beta <= 1e-13 * jnp.maximum(scale, 1e-300)

        def restart(_):
            r = jax.random.normal(jax.random.fold_in(key, j + 1), (p,), w.dtype)
            r, norm = _unit(_orthogonalise(V, _unit(r)[0], live & valid))
            return jnp.where(norm > 1e-8, r, 0.0)  # round-off only: the basis spans R^p

        nxt = jax.lax.cond(breakdown, restart, lambda _: nxt, None)
        # in a basis that already spans R^p nothing is left: the new vector is not valid
        ok_new = jnp.linalg.norm(nxt) > 0.5
        nxt = jnp.where(ok_new, nxt, 0.0)
        V, valid = V.at[j + b].set(nxt), valid.at[j + b].set(ok_new)
        T = T.at[:, j].set(jnp.where(live & valid, c, 0.0).at[j + b].set(nxt @ w))
        test = jnp.logical_or((j + 1) % check_every == 0, j + 1 >= n_max)

        def check(T, valid):
            theta, _, residual, enough = ritz(T, valid, j + 1)
            return jnp.logical_and(enough, jnp.all(sought(theta, residual))), largest(residual)

        done, worst = jax.lax.cond(
            test, check, lambda *_: (jnp.asarray(False), jnp.asarray(jnp.inf, w.dtype)),
            T, valid,
        )  # fmt: skip
        return V, valid, T, j + 1, done, worst

    init = (V, valid, T, jnp.asarray(0), jnp.asarray(False), jnp.asarray(jnp.inf, V0.dtype))
    V, valid, T, n, _, _ = jax.lax.while_loop(cond, body, init)
    theta, S, residual, _ = ritz(T, valid, n)
    vectors = S.T @ V[:n_max]
    vectors = vectors / jnp.linalg.norm(vectors, axis=1, keepdims=True)
    return theta, vectors, n, largest(residual)
