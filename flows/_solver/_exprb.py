"""exprb32: an exponential Rosenbrock method of order 3 with an embedded order-2 estimate,
matrix-free (Jacobian-vector products, Krylov φ-functions), as a diffrax solver.

For y' = F(y), with J = F'(yₙ) and the remainder Nₙ(y) = F(y) − F(yₙ) − J(y − yₙ):
  U = yₙ + hφ₁(hJ)F(yₙ)                      (exponential Rosenbrock–Euler, order 2)
  yₙ₊₁ = U + 2hφ₃(hJ)Nₙ(U)                    (order 3)
and the error estimate is the difference, 2hφ₃(hJ)Nₙ(U). For a linear field N ≡ 0: every step
is exact up to the Krylov tolerance, whatever h. A gradient flow's Jacobian is −∇²F, symmetric,
so the Krylov spaces are built by Lanczos (with full re-orthogonalisation).

Dense output (the same variation-of-constants formula at θ ∈ [0, 1], N interpolated as
θ²Nₙ(U), which it is to second order since Nₙ and its derivative vanish at yₙ):
  y(tₙ + θh) = yₙ + θhφ₁(θhJ)F(yₙ) + 2θ³hφ₃(θhJ)Nₙ(U),
evaluated on the step's Krylov bases without new Jacobian products.

The field must not depend on t (gradient flows do not): t is frozen at the step's start.

Reference: Hochbruck, Ostermann & Schweitzer 2009, "Exponential Rosenbrock-type methods",
SIAM J. Numer. Anal. 47, §5 (exprb32); Hochbruck & Ostermann 2010, Acta Numerica 19, §2.5.
"""

from typing import ClassVar

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ._krylov import KrylovBasis, krylov_phi


class _ExpRosenbrockInterpolation(dfx.AbstractLocalInterpolation):
    t0: jax.Array
    t1: jax.Array
    y0: object
    first: KrylovBasis  # of (J, F(yₙ)), for φ₁
    third: KrylovBasis  # of (J, Nₙ(U)), for φ₃

    def _at(self, t):
        h = self.t1 - self.t0
        theta = (t - self.t0) / jnp.where(h == 0, 1.0, h)
        flat, unravel = ravel_pytree(self.y0)
        step = self.first.apply(1, theta * h) + 2 * theta**2 * self.third.apply(3, theta * h)
        return unravel(flat + step)

    def evaluate(self, t0, t1=None, left=True):
        del left
        if t1 is None:
            return self._at(t0)
        return jax.tree.map(jnp.subtract, self._at(t1), self._at(t0))


def _report_jvps(terms, n) -> None:
    """Tell a counting vector field (`flows._counting.CountedField.add_jvps`) that the step
    made `n` Jacobian-vector products; diffrax wraps the term (`WrapTerm`) inside its solve."""
    term = terms
    while hasattr(term, "term"):
        term = term.term
    add_jvps = getattr(getattr(term, "vector_field", None), "add_jvps", None)
    if add_jvps is not None:
        add_jvps(n)


class ExpRosenbrock32(dfx.AbstractAdaptiveSolver):
    """exprb32 (Hochbruck, Ostermann & Schweitzer 2009): exponential Rosenbrock, order 3,
    embedded order 2, Krylov φ-functions through Jacobian-vector products.

    - `rtol`, `atol`: the step tolerances; each Krylov projection is resolved to
      `krylov_fraction`·‖atol + rtol·|y|‖ in the 2-norm, and any unresolved remainder
      is added to the error estimate (so the controller shortens the step).
    - `max_krylov`: the largest Krylov basis (memory `max_krylov`·p per projection); by
      default `default_max_krylov(p)`: p vectors up to p = 512, else 32, so that a small
      state can build the (nearly) invariant space that makes a
      long step on a stiff, nearly linear field exact (polynomial Krylov needs about
      √(h‖J‖) vectors, Hochbruck & Lubich 1997, Theorem 2).
    - `symmetric`: the Jacobian is symmetric (Lanczos, eigendecomposition of the projected
      tridiagonal matrix); otherwise Arnoldi with an exponential of the augmented matrix.
    """

    rtol: jax.Array
    atol: jax.Array
    max_krylov: int | None = eqx.field(static=True, default=None)
    symmetric: bool = eqx.field(static=True, default=True)
    krylov_fraction: float = eqx.field(static=True, default=0.01)

    term_structure: ClassVar = dfx.AbstractTerm
    interpolation_cls: ClassVar = _ExpRosenbrockInterpolation

    def order(self, terms):
        return 3

    def init(self, terms, t0, t1, y0, args):
        return None

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        del solver_state, made_jump
        h = t1 - t0
        flat0, unravel = ravel_pytree(y0)

        def field(x):
            return ravel_pytree(terms.vf(t0, unravel(x), args))[0]

        f0, jvp = jax.linearize(field, flat0)
        scale = self.atol + self.rtol * jnp.abs(flat0)  # the controller's error scale
        tol = self.krylov_fraction * jnp.linalg.norm(scale)
        m_max = self.max_krylov or default_max_krylov(flat0.size)
        kw = dict(tol=tol, m_max=m_max, symmetric=self.symmetric)
        first = krylov_phi(jvp, f0, h, 1, **kw)
        u = flat0 + first.apply(1, h)
        remainder = field(u) - f0 - jvp(u - flat0)
        third = krylov_phi(jvp, remainder, h, 3, **kw)
        correction = 2 * third.apply(3, h)
        # The products made: one per Krylov vector of each basis, and the remainder's jvp.
        _report_jvps(terms, first.size + third.size + 1)
        y1 = u + correction
        # Unresolved Krylov error counts as step error, spread like the error scale, so that
        # it adds its own size relative to the tolerance to the controller's rms norm.
        unresolved = (first.error + 2 * third.error) / jnp.linalg.norm(scale) * scale
        y_error = jnp.abs(correction) + unresolved
        dense_info = dict(y0=y0, first=first, third=third)
        return unravel(y1), unravel(y_error), dense_info, None, dfx.RESULTS.successful


#: States up to this size get a Krylov basis of up to p vectors by default (memory p² per
#: basis), larger ones 32 vectors. The bases travel in every step's dense output, and an
#: allocation of 512 vectors at p = 10³ made each exprb32 step cost 7–10× the CPU of a
#: 32-vector one with the same bases used (issue 21's case 11: 5.4 s against 0.52–0.74 s,
#: 540 steps, 4,260 products either way).
FULL_KRYLOV_MAX = 512


def default_max_krylov(p: int) -> int:
    """The default largest Krylov basis for a state of `p` entries: p vectors up to
    `FULL_KRYLOV_MAX` entries (p orthonormal vectors span everything, so a stiff, nearly
    linear field is resolved at any step), else 32."""
    return max(1, p) if p <= FULL_KRYLOV_MAX else 32


def krylov_sizes(solver: ExpRosenbrock32, field, y0, h):
    """Sizes of the two Krylov bases one exprb32 step of length `h` from `y0` builds (for
    diagnostics and tests): `(first, third)`."""
    term = dfx.ODETerm(field)
    _, _, info, _, _ = solver.step(term, 0.0, h, y0, None, None, False)
    return int(info["first"].size), int(info["third"].size)
