"""The lazy pair for the squared loss as a semilinear field in the scaled gap d alone.

For R(y) = (c/2)‖y − y*‖² the linear branch is known in closed form (`linear_closed_form`):
with Σ = JJᵀ = U diag(μ) Uᵀ, J = Dh(w0), λ = c·μ and r₀ = Uᵀ(αh(w0) − y*),
  ȳ(t) = y* + U e^{−tλ} r₀,    ū(t) = −c·JᵀU (t·φ₁(−tλ) ⊙ r₀),
and the gap's equation d' = −(Q + JᵀG) splits into its constant stiff part −c·JᵀJ d (the same
for every α) and a remainder N(t, d) whose Jacobian in d is O(1/α):
  remainder form: N = −(Q + c·JᵀR₂), R₂ = ∫₀¹(1−s) D²h(w0 + sδ)[u, u] ds (Δ = Jd + R₂);
  direct form:    N = −α(Dh(w)ᵀ∇R(αh(w)) − Jᵀ∇R(ȳ)) + c·JᵀJd.
`ExpRK4` (exponential Runge–Kutta, `flows._solver._exprk`) treats −c·JᵀJ exactly through the
eigendecomposition of Σ: its steps are limited by N alone, not by λ_max(Σ).

Reference: Chizat, Oyallon & Bach 2019, §2 (the linearised flow); Hochbruck & Ostermann 2005
(exponential Runge–Kutta methods for semilinear problems).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._solver._exprk import AbstractSpectralSplit
from .._solver._krylov import phi


class _Jacobian(eqx.Module):
    """J = Dh(w0) on the training inputs, by its products (recomputed per use: the forward
    pass at w0 costs less than reading stored residuals)."""

    lazy: eqx.Module  # flows.lazy._comparison._Lazy

    def ops(self):
        f = self.lazy
        _, jvp = jax.linearize(lambda w: f.h(w, f.X), f.w0)
        return jvp, jax.linear_transpose(jvp, f.w0)


class LazySplit(AbstractSpectralSplit):
    """−c·JᵀJ as project(v) = UᵀJv, lift(a) = JᵀUa, rates λ = c·μ."""

    jac: _Jacobian
    U: jax.Array
    scale: jax.Array
    rates: jax.Array

    def project(self, v):
        return _project(self, v)

    def lift(self, a):
        return _lift(self, a)


class LazySemilinear(eqx.Module):
    """d' = −c·JᵀJ d + N(t, d) (module docstring), with the linear branch in closed form."""

    lazy: eqx.Module  # flows.lazy._comparison._Lazy (its `loss` a SquaredLoss)
    split: LazySplit
    r0: jax.Array  # Uᵀ(αh(w0) − y*), (m,)
    keep: jax.Array  # 1.0 on the modes with μ above the round-off cut, else 0.0
    symmetric_jacobian = False

    @classmethod
    def build(cls, lazy, scale, eig_tol: float = 1e-12):
        """The field of the pair `lazy` (a `_Lazy` of the squared loss with curvature
        `scale`): J = Dh(w0) by m transposed jvps, Σ = JJᵀ = U diag(μ) Uᵀ by `eigh`, the
        modes with μ at most `eig_tol`·max μ cut (their rates set to 0). One compiled
        program: every α of a sweep (a traced array in `lazy`) reuses it."""
        return _build(cls, lazy, jnp.asarray(scale, jnp.float64), eig_tol)

    def ubar(self, t):
        """ū(t) = α(w̄(t) − w0), flat `(p,)`."""
        lam = self.split.rates
        weights = -self.split.scale * t * phi(1, -t * lam) * self.r0 * self.keep
        return self.split.lift(weights)

    def ybar(self, t):
        """ȳ(t) on the training inputs, shape of Y."""
        res = self.split.U @ (jnp.exp(-t * self.split.rates) * self.r0)
        return self.lazy.Y + res.reshape(self.lazy.Y.shape)

    def nonlinear(self, t, d):
        """N(t, d) (module docstring)."""
        return _nonlinear(self, jnp.asarray(t, jnp.float64), d)

    def _nonlinear(self, t, d):
        f, c = self.lazy, self.split.scale
        alpha = f.alpha
        ubar = self.ubar(t)
        u = ubar + d / alpha
        ybar = self.ybar(t)
        jvp, jt = self.split.jac.ops()
        h_on_X = lambda w: f.h(w, f.X)  # noqa: E731
        if not f.remainder:
            ya = alpha * h_on_X(f.w0 + u / alpha)
            _, vjp = jax.vjp(h_on_X, f.w0 + u / alpha)
            (u_dot,) = vjp(jax.grad(f.R)(ya))
            (back,) = jt(alpha * jax.grad(f.R)(ybar) + c * jvp(d))
            return -alpha * u_dot + back
        s, wts = gauss_nodes(f.nodes)
        phi_u = lambda w: jax.jvp(h_on_X, (w,), (u,))[1]  # noqa: E731
        d2 = jax.vmap(lambda si: jax.jvp(phi_u, (f.w0 + si * u / alpha,), (u,))[1])(s)
        r2 = jnp.tensordot(wts * (1 - s), d2, axes=1)
        delta = jvp(d) + r2
        g = jax.grad(f.R)(ybar + delta / alpha)

        def q_node(si):
            def inner(w):
                return jnp.vdot(g, jax.jvp(h_on_X, (w,), (u,))[1])

            return jax.grad(inner)(f.w0 + si * u / alpha)

        Q = jnp.tensordot(wts, jax.vmap(q_node)(s), axes=1)
        (back,) = jt(c * r2)
        return -(Q + back)

    def __call__(self, t, d, args):
        return self.nonlinear(t, d) - self.split.scale * self.split.lift(self.split.project(d))


# N, project and lift behind module-level jits: a solve program uses each many times (the
# Runge–Kutta stages, diffrax's traces of its step for shapes, the initial step, the saves),
# and JAX's trace cache gives every use with the same shapes the one jaxpr, traced once per
# process instead of once per use (nested jvps of the model are slow to trace). t is a float64
# array at every call, so that a Python 0.0 and a traced time share the trace.
@eqx.filter_jit
def _nonlinear(field, t, d):
    return field._nonlinear(t, d)


@eqx.filter_jit
def _project(split, v):
    jvp, _ = split.jac.ops()
    return split.U.T @ jnp.ravel(jvp(v))


@eqx.filter_jit
def _lift(split, a):
    jvp, jt = split.jac.ops()
    shape = jax.eval_shape(jvp, split.jac.lazy.w0).shape
    (out,) = jt((split.U @ a).reshape(shape))
    return out


@eqx.filter_jit
def _build(cls, lazy, scale, eig_tol):
    jac = _Jacobian(lazy)
    jvp, jt = jac.ops()
    shape = jax.eval_shape(jvp, lazy.w0).shape
    m = int(np.prod(shape))
    basis = jnp.eye(m).reshape((m,) + shape)
    J = jax.vmap(lambda e: jt(e)[0])(basis)  # (m, p): rows are Jᵀe_i
    mu, U = jnp.linalg.eigh(J @ J.T)
    keep = mu > eig_tol * jnp.max(jnp.abs(mu))
    mu = jnp.where(keep, mu, 0.0)
    h0 = lazy.h(lazy.w0, lazy.X)
    r0 = U.T @ jnp.ravel(lazy.alpha * h0 - lazy.Y)
    split = LazySplit(jac, U, scale, scale * mu)
    return cls(lazy, split, r0, keep.astype(jnp.float64))


def gauss_nodes(nodes: int):
    """Gauss–Legendre nodes and weights on [0, 1]."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    return jnp.asarray((x + 1) / 2), jnp.asarray(w / 2)


class SemilinearMeasure(eqx.Module):
    """The pair's measurements (`_Measure`) at (ū(t), d)."""

    measure: eqx.Module
    field: LazySemilinear

    def __call__(self, t, d, args):
        return self.measure(t, (self.field.ubar(t), d), args)
