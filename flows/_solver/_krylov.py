"""φ-functions of a Jacobian applied to a vector, by Krylov projection (Lanczos or Arnoldi).

φ₀(z) = eᶻ, φₖ₊₁(z) = (φₖ(z) − 1/k!)/z. With an orthonormal basis V_m of the Krylov space
K_m(A, v) and H_m = V_mᵀ A V_m (tridiagonal when A is symmetric),
  φₖ(τA)v ≈ ‖v‖ V_m φₖ(τH_m) e₁,
exact once the space is invariant (at most as many vectors as A has distinct eigenvalues on v).
The basis is built once per vector and reused for every τ (dense output).

Reference: Saad 1992, "Analysis of some Krylov subspace approximations to the matrix exponential
operator", SIAM J. Numer. Anal. 29; Hochbruck & Lubich 1997, SIAM J. Numer. Anal. 34 (error
estimate); Niesen & Wright 2012, ACM TOMS 38 (φ-functions).
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp


def phi(k: int, z):
    """φₖ(z) elementwise, accurate for all real z (Taylor series near 0, recursion away)."""
    z = jnp.asarray(z)
    small = jnp.abs(z) < 1.0
    zs = jnp.where(small, z, 0.0)
    # Σ_j z^j/(j+k)!, 24 terms by Horner: truncation below 1e-17·φₖ for |z| < 1.
    series = jnp.zeros_like(zs)
    for j in reversed(range(24)):
        series = series * zs + 1.0 / _factorial(j + k)
    zl = jnp.where(small, 1.0, z)
    big = jnp.expm1(zl) / zl if k >= 1 else jnp.exp(zl)
    for j in range(1, k):
        big = (big - 1.0 / _factorial(j)) / zl
    return jnp.where(small, series, big) if k >= 1 else jnp.exp(z)


def _factorial(n: int) -> float:
    out = 1.0
    for i in range(2, n + 1):
        out *= i
    return out


class KrylovBasis(eqx.Module):
    """The Krylov projection of (A, v): basis `V` `(m_max, p)` (rows beyond the used size are
    zero), projected matrix `H` `(m_max, m_max)` (zero outside the used block), `norm` = ‖v‖,
    `size` = vectors used, and `error` = the a-posteriori estimate of ‖τφₖ(τA)v − approx‖ at
    τ = `tau` for the φ index it was built for."""

    V: jax.Array
    H: jax.Array
    norm: jax.Array
    size: jax.Array
    error: jax.Array
    symmetric: bool = eqx.field(static=True)

    def coefficients(self, k: int, tau):
        """φₖ(τH)e₁, shape `(m_max,)`."""
        return _on_block(lambda Hb: _phi_e1(Hb, k, tau, self.symmetric), self.H, self.size)

    def apply(self, k: int, tau):
        """τ·φₖ(τA)v, flat `(p,)`."""
        return tau * self.norm * (self.coefficients(k, tau) @ self.V)


def _on_block(fn, H, size):
    """`fn` of the leading b×b block of `H` (zero outside `size`), b the least power of two
    ≥ `size` (at least 8), zero-padded to `H.shape[0]`: a basis of a few vectors in a large
    allocation costs a small eigendecomposition, not one of the allocation's size."""
    m = H.shape[0]
    sizes = sorted({min(m, 2**e) for e in range(3, max(3, (m - 1).bit_length()) + 1)} | {m})

    def branch(b):
        return lambda H: jnp.zeros(m, H.dtype).at[:b].set(fn(H[:b, :b]))

    index = jnp.searchsorted(jnp.asarray(sizes), size)
    return jax.lax.switch(jnp.clip(index, 0, len(sizes) - 1), [branch(b) for b in sizes], H)


def _phi_e1(H, k: int, tau, symmetric: bool):
    m = H.shape[0]
    if symmetric:
        lam, Q = jnp.linalg.eigh((H + H.T) / 2)
        return Q @ (phi(k, tau * lam) * Q[0])
    # φₖ(τH)e₁ is the top-right column block of exp of the augmented matrix (Saad 1992, Sidje).
    aug = jnp.zeros((m + k, m + k), H.dtype)
    aug = aug.at[:m, :m].set(tau * H).at[0, m].set(1.0)
    aug = aug.at[m : m + k - 1, m + 1 : m + k].set(jnp.eye(k - 1, dtype=H.dtype))
    # Up to 2⁶⁰ scaling: steps far beyond the stiff time scale (‖τH‖ ~ 1e7 and more).
    E = jax.scipy.linalg.expm(aug, max_squarings=60)
    return E[:m, m + k - 1] if k >= 1 else E[:m, 0]


def krylov_phi(
    matvec: Callable,
    v,
    tau,
    k: int,
    *,
    tol,
    m_max: int,
    symmetric: bool,
    check_every: int = 2,
) -> KrylovBasis:
    """Build the Krylov basis of (A = `matvec`, `v`) until τφₖ(τA)v is resolved to `tol`
    (2-norm, estimated by ‖v‖·τ·h_{m+1,m}·|e_mᵀ φₖ₊₁(τH_m)e₁|, Saad 1992 eq. 5.3) or
    `m_max` vectors (checked every `check_every` vectors up to 16, then 4 times per doubling
    of the basis). Beyond 32 vectors the
    basis is re-orthogonalised in full (twice) also when A is symmetric, so that a large
    basis stays orthonormal."""
    p = v.shape[0]
    m_max = min(m_max, p)  # p orthonormal vectors span everything
    norm = jnp.linalg.norm(v)
    safe = jnp.where(norm > 0, norm, 1.0)
    V = jnp.zeros((m_max + 1, p), v.dtype).at[0].set(v / safe)
    H = jnp.zeros((m_max + 1, m_max), v.dtype)
    idx = jnp.arange(m_max + 1)

    def estimate(H, j):
        # Leading (j+1)×(j+1) block; zero padding decouples the rest.
        mask = (idx[:m_max, None] <= j) & (idx[None, :m_max] <= j)
        Hj = jnp.where(mask, H[:m_max], 0.0)
        c = _on_block(lambda Hb: _phi_e1(Hb, k + 1, tau, symmetric), Hj, j + 1)
        return norm * tau * jnp.abs(H[j + 1, j]) * jnp.abs(c[j])

    def cond(carry):
        _, _, j, err, done = carry
        return jnp.logical_and(j < m_max, jnp.logical_not(done))

    def orthogonalise(V, w, j):
        if symmetric and m_max <= 32:
            # Lanczos: A symmetric, so w needs only the two latest vectors (three-term
            # recurrence, O(p) per step). Lost orthogonality shows as repeated Ritz values,
            # which leaves φ-function approximations accurate (Druskin & Knizhnerman 1991).
            near = jnp.stack([V[jnp.maximum(j - 1, 0)], V[j]])
            c = near @ w
            c = c.at[0].multiply(j > 0)
            w = w - c @ near
            c2 = near @ w
            c2 = c2.at[0].multiply(j > 0)
            w = w - c2 @ near
            col = jnp.zeros(m_max + 1, w.dtype).at[jnp.maximum(j - 1, 0)].add(c[0] + c2[0])
            return w, col.at[j].add(c[1] + c2[1])
        live = idx <= j  # Arnoldi: full Gram–Schmidt, twice
        c1 = jnp.where(live, V @ w, 0.0)
        w = w - c1 @ V
        c2 = jnp.where(live, V @ w, 0.0)
        return w - c2 @ V, c1 + c2

    def body(carry):
        V, H, j, err, _ = carry
        w = matvec(V[j])
        scale = jnp.linalg.norm(w)
        w, col = orthogonalise(V, w, j)
        beta = jnp.linalg.norm(w)
        col = col.at[j + 1].set(beta)
        H = H.at[:, j].set(col)
        # Happy breakdown: the space is invariant, the projection exact.
        breakdown = beta <= 1e-12 * scale
        V = V.at[j + 1].set(jnp.where(breakdown, 0.0, w / jnp.where(breakdown, 1.0, beta)))
        # The estimate costs an eigendecomposition: made every `check_every` vectors.
        n = j + 1
        every = jnp.maximum(check_every, 2 ** jnp.floor(jnp.log2(n)).astype(n.dtype) // 4)
        check = jnp.logical_or(n % every == 0, n == m_max)
        err = jnp.where(
            breakdown,
            0.0,
            jax.lax.cond(check, lambda: estimate(H, j), lambda: jnp.asarray(jnp.inf, v.dtype)),
        )
        done = jnp.logical_or(breakdown, err <= tol)
        return V, H, j + 1, err, done

    zero = jnp.asarray(0.0, v.dtype)
    init = (V, H, jnp.asarray(0), zero, norm == 0)
    V, H, size, err, _ = jax.lax.while_loop(cond, body, init)
    mask = (idx[:m_max, None] < size) & (idx[None, :m_max] < size)
    return KrylovBasis(
        V=V[:m_max],
        H=jnp.where(mask, H[:m_max], 0.0),
        norm=norm,
        size=size,
        error=err,
        symmetric=symmetric,
    )
