"""exprk4: Krogstad's exponential Runge–Kutta method of order 4 for a semilinear field
y' = Ay + N(t, y) with a constant, symmetric, negative semidefinite A known through its
spectrum, with an embedded order-3 estimate, as a diffrax solver.

The field supplies A as a `SpectralSplit`: A = −c·lift(project(v)) with `project(v) = SVᵀv`
(shape `(m,)`) and `lift(a) = VSa` for an orthonormal V `(dim y, m)` and S = diag(s) ≥ 0,
`scale` c > 0 and `rates` λ = c·s². For the lazy pair, A = −c·JᵀJ with the SVD J = USVᵀ:
project(v) = UᵀJv and lift(a) = JᵀUa, one Jacobian-vector product each. Then, exactly,
  φₖ(zA)v = v/k! − z·c·lift(φₖ₊₁(−zλ) ⊙ project(v))      (φₖ(x) − 1/k! = x·φₖ₊₁(x)),
so every φ-product costs one `project` and one `lift`, and a step is exact for a linear
field whatever h: only N limits the steps, not λ_max.

With φₖ,ᵢ = φₖ(cᵢhA), nodes c = (0, ½, ½, 1), Nᵢ = N(tₙ + cᵢh, Uᵢ) (Krogstad 2005):
  U₂ = φ₀,₂yₙ + h·½φ₁,₂N₁
  U₃ = φ₀,₃yₙ + h[(½φ₁,₃ − φ₂,₃)N₁ + φ₂,₃N₂]
  U₄ = φ₀yₙ + h[(φ₁ − 2φ₂)N₁ + 2φ₂N₃]
  yₙ₊₁ = φ₀yₙ + h[(φ₁ − 3φ₂ + 4φ₃)N₁ + (2φ₂ − 4φ₃)(N₂ + N₃) + (4φ₃ − φ₂)N₄].
Embedded: the same weights with N₄ replaced by N₅ = N(tₙ + h, yₙ₊₁) (order 3: with A = 0 it is
Simpson's rule on the stages, whose order-3 conditions it meets), so the error estimate is
h(4φ₃ − φ₂)(N₄ − N₅); N₅ is the next step's N₁ (first same as last): 4 evaluations of N a step.
Dense output (order 3): the weights at θ ∈ [0, 1] with φₖ(θhA),
  b₁ = φ₁ − 3θφ₂ + 4θ²φ₃, b₂ = b₃ = 2θφ₂ − 4θ²φ₃, b₄ = −θφ₂ + 4θ²φ₃ (times θh).

Reference: Krogstad 2005, "Generalized integrating factor methods for stiff PDEs", J. Comput.
Phys. 203 (ETDRK4-B); Hochbruck & Ostermann 2005, "Explicit exponential Runge–Kutta methods for
semilinear parabolic problems", SIAM J. Numer. Anal. 43; Hochbruck & Ostermann 2010, Acta
Numerica 19, §2.3 (the tableau and its order conditions).
"""

import abc
from typing import ClassVar

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._krylov import phi

# φₖ behind one jit per k: a step and its dense output take 22 of them, each a 24-term Horner
# series to trace; JAX's trace cache gives every later use of a (k, shape) the first jaxpr.
_phi = jax.jit(phi, static_argnums=0)


def semilinear_field(terms):
    """The user's field inside diffrax's term wrappers (and gradflows' counting wrapper):
    the object with a `split` (`SpectralSplit`) and `nonlinear(t, y)`."""
    obj = terms
    for _ in range(16):
        if hasattr(obj, "split") and hasattr(obj, "nonlinear"):
            return obj
        obj = next(
            (getattr(obj, a) for a in ("term", "vector_field", "field") if hasattr(obj, a)),
            None,
        )
        if obj is None:
            break
    raise ValueError(
        "solver 'exprk4' needs a semilinear field y' = Ay + N(t, y) with a `split` "
        "(flows._solver.SpectralSplit) and `nonlinear(t, y)`, such as the lazy pair of "
        "flows.lazy.lazy_comparison with the squared loss; use another solver here"
    )


class AbstractSpectralSplit(eqx.Module):
    """The constant linear part A = −c·lift∘project of a semilinear field (module docstring):
    `project(v)` `(m,)`, `lift(a)` (shape of y), `scale` c and `rates` λ = c·s² `(m,)`.
    Subclasses implement `project` and `lift` (linear maps)."""

    scale: eqx.AbstractVar[jax.Array]
    rates: eqx.AbstractVar[jax.Array]

    @abc.abstractmethod
    def project(self, v):
        """SVᵀv, shape `(m,)`."""

    @abc.abstractmethod
    def lift(self, a):
        """VSa, shape of y."""

    def apply(self, z, vs, ps):
        """(Σₖ φₖ(zA)vₖ, its projection) for `vs` = (v₀, v₁, ...) with projections `ps`
        (None entries skipped). project(φₖ(zA)v) = φₖ(−zλ)·project(v): no new products."""
        out, modes, proj = None, None, None
        for k, (v, p) in enumerate(zip(vs, ps)):
            if v is None:
                continue
            inv = 1.0 / _fact(k)
            term = jax.tree.map(lambda x, inv=inv: inv * x, v)
            out = term if out is None else jax.tree.map(jnp.add, out, term)
            a, b = _phi(k + 1, -z * self.rates) * p, _phi(k, -z * self.rates) * p
            modes, proj = (a, b) if modes is None else (modes + a, proj + b)
        return jax.tree.map(jnp.add, out, self.lift(-z * self.scale * modes)), proj


def _fact(k):
    out = 1
    for i in range(2, k + 1):
        out *= i
    return out


# Stage i = 2, 3, 4 and 5 (= yₙ₊₁): node cᵢ and, for k = 1, 2, 3, the coefficients of
# N₁..N₄ in vₖ = h·Σⱼ T[i, k, j]Nⱼ, with Uᵢ = φ₀(cᵢhA)yₙ + Σₖ φₖ(cᵢhA)vₖ (module docstring).
_NODES = np.array([0.5, 0.5, 1.0, 1.0])
_TABLE = np.array(
    [
        [[0.5, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
        [[0.5, 0, 0, 0], [-1, 1, 0, 0], [0, 0, 0, 0]],
        [[1, 0, 0, 0], [-2, 0, 2, 0], [0, 0, 0, 0]],
        [[1, 0, 0, 0], [-3, 2, 2, -1], [4, -4, -4, 4]],
    ],
    dtype=np.float64,
)


def _stage(split, z, y0, p0, ns, ps, coefs):
    """φ₀(zA)y₀ + Σₖ φₖ(zA)(Σⱼ coefs[k−1, j]·Nⱼ) and its projection; `ns` has the Nⱼ stacked
    on a leading axis (leaves), `ps` their projections `(4, m)`."""
    vs = [y0] + [jax.tree.map(lambda n, c=c: jnp.tensordot(c, n, axes=1), ns) for c in coefs]
    qs = [p0] + [c @ ps for c in coefs]
    return split.apply(z, vs, qs)


class _ExpRKInterpolation(dfx.AbstractLocalInterpolation):
    t0: jax.Array
    t1: jax.Array
    y0: object
    p0: jax.Array
    ns: object  # N₁..N₄, stacked
    ps: jax.Array  # their projections (4, m)
    split: AbstractSpectralSplit

    def _at(self, t):
        return _dense_at(self, t)

    def _dense(self, t):
        h = self.t1 - self.t0
        th = (t - self.t0) / jnp.where(h == 0, 1.0, h)
        # the weights at θ (module docstring), relative to θh
        coefs = jnp.stack(
            [
                jnp.array([1.0, 0.0, 0.0, 0.0]),
                th * jnp.array([-3.0, 2.0, 2.0, -1.0]),
                th**2 * jnp.array([4.0, -4.0, -4.0, 4.0]),
            ]
        ) * (th * h)
        y, _ = _stage(self.split, th * h, self.y0, self.p0, self.ns, self.ps, coefs)
        return y

    def evaluate(self, t0, t1=None, left=True):
        del left
        if t1 is None:
            return self._at(t0)
        return jax.tree.map(jnp.subtract, self._at(t1), self._at(t0))


class ExpRK4(dfx.AbstractAdaptiveSolver):
    """Krogstad's ETDRK4-B with an embedded order-3 estimate (module docstring), for a field
    that carries its constant linear part as an `AbstractSpectralSplit` (`field.split`) and
    its remainder as `field.nonlinear(t, y)`; `field(t, y, args)` must be the whole right-hand
    side Ay + N(t, y) (diffrax's initial step uses it). Solver state (first same as last):
    N(tₙ, yₙ), its projection and yₙ's projection. The stages run in one `lax.fori_loop`,
    so N is traced once per step (compilation time). N must be continuous in t: the state
    carried across steps assumes no jumps (`made_jump` is not used)."""

    term_structure: ClassVar = dfx.AbstractTerm
    interpolation_cls: ClassVar = _ExpRKInterpolation

    def order(self, terms):
        return 4

    def error_order(self, terms):
        return 4  # local error of the order-3 estimate: O(h⁴)

    def init(self, terms, t0, t1, y0, args):
        field = semilinear_field(terms)
        n = field.nonlinear(t0, y0)
        return n, field.split.project(n), field.split.project(y0)

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        del made_jump
        field = semilinear_field(terms)
        y1, y_error, head, ps, state = _step(field, t0, t1, y0, solver_state)
        dense_info = dict(y0=y0, p0=solver_state[2], ns=head, ps=ps, split=field.split)
        return y1, y_error, dense_info, state, dfx.RESULTS.successful


# A step and the dense output behind module-level jits: diffrax traces a solver's step three
# times per solve program (twice for the shapes of its loop state, once in the loop) and the
# interpolation once per trace of the step; JAX's trace cache gives each later use the first
# trace's jaxpr (compiled the same: XLA inlines the calls).
@eqx.filter_jit
def _step(field, t0, t1, y0, solver_state):
    """(y₁, its error estimate, N₁..N₄ and their projections, the next solver state) of one
    step from (t0, y0) to t1 (module docstring)."""
    split = field.split
    n1, p1, p0 = solver_state
    h = t1 - t0
    nodes, table = jnp.asarray(_NODES), jnp.asarray(_TABLE)
    ns = jax.tree.map(lambda n: jnp.zeros((5,) + n.shape, n.dtype).at[0].set(n), n1)
    ps = jnp.zeros((5,) + p1.shape, p1.dtype).at[0].set(p1)

    def body(i, carry):
        ns, ps, _, _ = carry
        z = nodes[i] * h
        head = jax.tree.map(lambda n: n[:4], ns)
        u, q = _stage(split, z, y0, p0, head, ps[:4], h * table[i])
        n = field.nonlinear(t0 + z, u)
        ns = jax.tree.map(lambda a, b: a.at[i + 1].set(b), ns, n)
        return ns, ps.at[i + 1].set(split.project(n)), u, q

    ns, ps, y1, q1 = jax.lax.fori_loop(0, 4, body, (ns, ps, y0, p0))
    diff = jax.tree.map(lambda n: n[3] - n[4], ns)
    pd = ps[3] - ps[4]
    y_error, _ = split.apply(
        h,
        (
            None,
            None,
            jax.tree.map(lambda x: -h * x, diff),
            jax.tree.map(lambda x: 4 * h * x, diff),
        ),
        (None, None, -h * pd, 4 * h * pd),
    )
    head = jax.tree.map(lambda n: n[:4], ns)
    n5 = jax.tree.map(lambda n: n[4], ns)
    return y1, y_error, head, ps[:4], (n5, ps[4], q1)


@eqx.filter_jit
def _dense_at(interpolation, t):
    return interpolation._dense(t)
