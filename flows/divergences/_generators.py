"""The f-divergence generators, normalised to f(1) = f′(1) = 0, with their convex conjugates.

D_f(P‖Q) = E_Q f(dP/dQ). Adding a(t − 1) to f changes no divergence between probability
measures, so each generator is shifted to f′(1) = 0; then f*(0) = 0 and (f*)′(0) = 1. The
conjugate f*(s) = sup_{t ≥ 0} st − f(t) is finite for s < f′(∞) (and at it when the sup stays
finite), and (f*)′ = (f′)⁻¹ vanishes identically below f′(0): those f give sparse plans.

Every method takes and returns float64 arrays of any shape, elementwise: f is +∞ for t < 0,
f* and (f*)′ are +∞ above the domain of f*, and no NaN is produced (the branches are guarded
so that `jax.grad` through them stays finite as well).

Reference: Terjék & González-Sánchez, "Optimal transport with f-divergence regularization
and generalized Sinkhorn algorithm", AISTATS 2022 (arXiv 2105.14337), Table 1.
"""

import math
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.special import xlogy

from ._lambertw import wright_omega

_INF = jnp.inf


@jax.custom_jvp
def expm1(x):
    """eˣ − 1 whose derivative is eˣ: JAX differentiates `jnp.expm1` as expm1(x) + 1, which
    loses eˣ's digits below x ≈ −20 and is 0 below −38 (the f-GAN KL field, and
    `games.dirac_period("kl", r)`, 12 % off at r = 8.5 and a ZeroDivisionError at r = 9)."""
    return jnp.expm1(x)


@expm1.defjvp
def _expm1_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return jnp.expm1(x), jnp.exp(x) * dx


def _nonneg(t):
    """(0 ≤ t < ∞, t with the rest replaced by 1): the argument of f and where its formula
    holds. Every f grows without bound, so f(+∞) = +∞ like f(t < 0); the formulas gave
    ∞ − ∞ = NaN at t = +∞ (KL, reverse KL, Neyman χ², JS, triangular)."""
    t = jnp.asarray(t, dtype=float)  # a Python list or a number: the `>=` below needs an array
    valid = (t >= 0) & (t < _INF)
    return valid, jnp.where(valid, t, 1.0)


def _positive(t):
    t = jnp.asarray(t, dtype=float)
    valid = (t > 0) & (t < _INF)
    return valid, jnp.where(valid, t, 1.0)


def _below(s, top, closed=False):
    """(s in the domain, s with the rest replaced by 0)."""
    valid = s <= top if closed else s < top
    return valid, jnp.where(valid, s, 0.0)


class AbstractDivergence(eqx.Module):
    """An f-divergence generator f, normalised to f(1) = f′(1) = 0, with its convex
    conjugate f* and the first two derivatives of f*.

    Class attributes: `name` (the registry name), `f_prime_0` = f′(0⁺) (−∞ when the plan is
    always dense; finite: (f*)′ = 0 below it), `f_prime_inf` = f′(∞) = sup dom f* (+∞ when f*
    is finite everywhere), `gamma_power` (the power q that makes F(γ)^q, F(γ) =
    Σ_j w_j (f*)′(h_j − γ), close to linear in γ, for the Newton solve of Γ: 0 means log F,
    the exact choice for KL; −1/p for a pole (1 − s)^(−p) of (f*)′; 1 for χ², whose F is
    piecewise linear), `legendre` (whether f is of Legendre type, strictly convex and
    differentiable, which the generalised Sinkhorn algorithm needs; only "tv" is not).

    Methods, elementwise on float64 arrays: `f(t)`, `f_conj(s)` = f*(s), `f_conj_grad(s)`
    = (f*)′(s) = (f′)⁻¹(s), `f_conj_hess(s)` = (f*)″(s) = 1/f″((f*)′(s)),
    `f_conj_grad_hess(s)` = the last two at once, `f_conj_value_grad(s)` = f* and (f*)′,
    `f_conj_value_grad_hess(s)` = all three; `f_grad_hess(t)` = (f′(t), f″(t)) for t ≥ 0
    (f′(0) = `f_prime_0`; f″(0) = +∞ where f′(0) = −∞), the primal side that the
    primal–dual Newton steps of `flows.transport.sinkhorn` linearise.
    """

    name: eqx.AbstractClassVar[str]
    f_prime_0: eqx.AbstractClassVar[float]
    f_prime_inf: eqx.AbstractClassVar[float]
    legendre: eqx.AbstractClassVar[bool]
    gamma_power: eqx.AbstractClassVar[float]

    def f(self, t):
        raise NotImplementedError

    def f_conj(self, s):
        raise NotImplementedError

    def f_conj_grad(self, s):
        raise NotImplementedError

    def f_conj_hess(self, s):
        raise NotImplementedError

    def f_conj_grad_hess(self, s):
        """((f*)′(s), (f*)″(s)) together: one pass where they share work (Jeffreys' ω)."""
        return self.f_conj_grad(s), self.f_conj_hess(s)

    def f_conj_value_grad(self, s):
        """(f*(s), (f*)′(s)) together, sharing work likewise."""
        return self.f_conj(s), self.f_conj_grad(s)

    def f_conj_value_grad_hess(self, s):
        """(f*(s), (f*)′(s), (f*)″(s)) together, sharing work likewise (the Newton iterations
        of the generalised Sinkhorn algorithm take all three at each candidate)."""
        return self.f_conj(s), *self.f_conj_grad_hess(s)

    def f_grad_hess(self, t):
        """(f′(t), f″(t)) elementwise for t ≥ 0 (every Legendre generator has a closed
        form; this default differentiates `f`)."""
        t = jnp.asarray(t, dtype=float)
        ones = jnp.ones_like(t)
        first = lambda x: jax.jvp(self.f, (x,), (ones,))[1]  # noqa: E731
        return jax.jvp(first, (t,), (ones,))

    @property
    def sparse(self) -> bool:
        """Whether (f*)′ has a hard zero (f′(0) finite): plans with exact zeros."""
        return self.f_prime_0 > -math.inf


class KL(AbstractDivergence):
    """Kullback–Leibler: f(t) = t log t − t + 1, f*(s) = eˢ − 1, (f*)′(s) = eˢ."""

    name: ClassVar[str] = "kl"
    f_prime_0: ClassVar[float] = -math.inf
    f_prime_inf: ClassVar[float] = math.inf
    legendre: ClassVar[bool] = True
    gamma_power: ClassVar[float] = 0.0

    def f(self, t):
        valid, t = _nonneg(t)
        return jnp.where(valid, xlogy(t, t) - t + 1.0, _INF)

    def f_conj(self, s):
        return expm1(s)

    def f_conj_grad(self, s):
        return jnp.exp(s)

    def f_conj_hess(self, s):
        return jnp.exp(s)

    def f_grad_hess(self, t):
        return jnp.log(t), 1.0 / t


class ReverseKL(AbstractDivergence):
    """Reverse Kullback–Leibler: f(t) = t − 1 − log t, f*(s) = −log(1 − s), (f*)′(s) =
    1/(1 − s) for s < 1."""

    name: ClassVar[str] = "reverse_kl"
    f_prime_0: ClassVar[float] = -math.inf
    f_prime_inf: ClassVar[float] = 1.0
    legendre: ClassVar[bool] = True
    gamma_power: ClassVar[float] = -1.0

    def f(self, t):
        valid, t = _positive(t)
        return jnp.where(valid, t - 1.0 - jnp.log(t), _INF)

    def f_conj(self, s):
        valid, s = _below(s, 1.0)
        return jnp.where(valid, -jnp.log1p(-s), _INF)

    def f_conj_grad(self, s):
        valid, s = _below(s, 1.0)
        return jnp.where(valid, 1.0 / (1.0 - s), _INF)

    def f_conj_hess(self, s):
        valid, s = _below(s, 1.0)
        return jnp.where(valid, 1.0 / (1.0 - s) ** 2, _INF)

    def f_conj_grad_hess(self, s):
        valid, s = _below(s, 1.0)
        grad = 1.0 / (1.0 - s)
        return jnp.where(valid, grad, _INF), jnp.where(valid, grad * grad, _INF)

    def f_conj_value_grad_hess(self, s):
        valid, s = _below(s, 1.0)
        grad = 1.0 / (1.0 - s)
        value, grad, hess = -jnp.log1p(-s), grad, grad * grad
        return tuple(jnp.where(valid, x, _INF) for x in (value, grad, hess))

    def f_grad_hess(self, t):
        inverse = 1.0 / t
        return 1.0 - inverse, inverse * inverse


class Chi2(AbstractDivergence):
    """Pearson χ²: f(t) = (t − 1)², f*(s) = s²/4 + s for s ≥ −2 and −1 below, (f*)′(s) =
    max(s/2 + 1, 0) (sparse: zero below f′(0) = −2)."""

    name: ClassVar[str] = "chi2"
    f_prime_0: ClassVar[float] = -2.0
    f_prime_inf: ClassVar[float] = math.inf
    legendre: ClassVar[bool] = True
    gamma_power: ClassVar[float] = 1.0

    def f(self, t):
        valid, t = _nonneg(t)
        return jnp.where(valid, (t - 1.0) ** 2, _INF)

    def f_conj(self, s):
        return jnp.where(s >= -2.0, s**2 / 4.0 + s, -1.0)

    def f_conj_grad(self, s):
        return jnp.maximum(s / 2.0 + 1.0, 0.0)

    def f_conj_hess(self, s):
        return jnp.where(s > -2.0, 0.5, 0.0)

    def f_grad_hess(self, t):
        return 2.0 * (t - 1.0), jnp.full_like(t, 2.0)


class ReverseChi2(AbstractDivergence):
    """Neyman χ²: f(t) = (t − 1)²/t, f*(s) = 2 − 2√(1 − s) for s ≤ 1, (f*)′(s) =
    (1 − s)^(−1/2)."""

    name: ClassVar[str] = "reverse_chi2"
    f_prime_0: ClassVar[float] = -math.inf
    f_prime_inf: ClassVar[float] = 1.0
    legendre: ClassVar[bool] = True
    gamma_power: ClassVar[float] = -2.0

    def f(self, t):
        valid, t = _positive(t)
        return jnp.where(valid, (t - 1.0) ** 2 / t, _INF)

    def f_conj(self, s):
        valid, s = _below(s, 1.0, closed=True)
        return jnp.where(valid, 2.0 - 2.0 * jnp.sqrt(1.0 - s), _INF)

    def f_conj_grad(self, s):
        valid, s = _below(s, 1.0)
        return jnp.where(valid, 1.0 / jnp.sqrt(1.0 - s), _INF)

    def f_conj_hess(self, s):
        return self.f_conj_grad_hess(s)[1]

    def f_conj_grad_hess(self, s):
        # (1 − s)^(−3/2) as a cube of 1/√(1 − s): the power x**−1.5 was a scalar pow call,
        # 15× a vectorised exp per entry, in every Newton step of Γ
        valid, s = _below(s, 1.0)
        grad = 1.0 / jnp.sqrt(1.0 - s)
        return jnp.where(valid, grad, _INF), jnp.where(valid, 0.5 * grad * grad * grad, _INF)

    def f_conj_value_grad_hess(self, s):
        # one √(1 − s) for the three (f* is finite at s = 1, its derivatives are not)
        closed, open_, root = _root_below_1(s)
        grad = 1.0 / root
        value = jnp.where(closed, 2.0 - 2.0 * jnp.where(open_, root, 0.0), _INF)
        hess = 0.5 * grad * grad * grad
        return value, jnp.where(open_, grad, _INF), jnp.where(open_, hess, _INF)

    def f_grad_hess(self, t):
        inverse = 1.0 / t
        return 1.0 - inverse * inverse, 2.0 * inverse * inverse * inverse


class Hellinger2(AbstractDivergence):
    """Squared Hellinger: f(t) = (√t − 1)², f*(s) = s/(1 − s), (f*)′(s) = (1 − s)^(−2) for
    s < 1."""

    name: ClassVar[str] = "hellinger2"
    f_prime_0: ClassVar[float] = -math.inf
    f_prime_inf: ClassVar[float] = 1.0
    legendre: ClassVar[bool] = True
    gamma_power: ClassVar[float] = -0.5

    def f(self, t):
        valid, t = _nonneg(t)
        return jnp.where(valid, (jnp.sqrt(t) - 1.0) ** 2, _INF)

    def f_conj(self, s):
        valid, s = _below(s, 1.0)
        return jnp.where(valid, 1.0 / (1.0 - s) - 1.0, _INF)  # s/(1 − s): NaN at s = −∞

    def f_conj_grad(self, s):
        valid, s = _below(s, 1.0)
        return jnp.where(valid, (1.0 - s) ** -2, _INF)

    def f_conj_hess(self, s):
        valid, s = _below(s, 1.0)
        return jnp.where(valid, 2.0 * (1.0 - s) ** -3, _INF)

    def f_conj_grad_hess(self, s):
        valid, s = _below(s, 1.0)
        r = 1.0 / (1.0 - s)
        return jnp.where(valid, r * r, _INF), jnp.where(valid, 2.0 * r * r * r, _INF)

    def f_conj_value_grad_hess(self, s):
        valid, s = _below(s, 1.0)
        r = 1.0 / (1.0 - s)
        return tuple(jnp.where(valid, x, _INF) for x in (r - 1.0, r * r, 2.0 * r * r * r))

    def f_grad_hess(self, t):
        inverse = 1.0 / jnp.sqrt(t)
        return 1.0 - inverse, 0.5 * inverse * inverse * inverse


class JS(AbstractDivergence):
    """Jensen–Shannon (times 2): f(t) = t log t − (t + 1) log((t + 1)/2), f*(s) =
    −log(2 − eˢ), (f*)′(s) = 1/(2e^(−s) − 1) for s < log 2."""

    name: ClassVar[str] = "js"
    f_prime_0: ClassVar[float] = -math.inf
    f_prime_inf: ClassVar[float] = math.log(2.0)
    legendre: ClassVar[bool] = True
    gamma_power: ClassVar[float] = -1.0

    def f(self, t):
        valid, t = _nonneg(t)
        return jnp.where(valid, xlogy(t, t) - xlogy(t + 1.0, (t + 1.0) / 2.0), _INF)

    def f_conj(self, s):
        valid, s = _below(s, math.log(2.0))
        return jnp.where(valid, -jnp.log(_two_minus_exp(s)), _INF)

    def f_conj_grad(self, s):
        valid, s = _below(s, math.log(2.0))
        return jnp.where(valid, jnp.exp(s) / _two_minus_exp(s), _INF)

    def f_conj_hess(self, s):
        valid, s = _below(s, math.log(2.0))
        return jnp.where(valid, 2.0 * jnp.exp(s) / _two_minus_exp(s) ** 2, _INF)

    def f_conj_grad_hess(self, s):
        valid, s = _below(s, math.log(2.0))
        rest = _two_minus_exp(s)
        grad = jnp.exp(s) / rest
        return jnp.where(valid, grad, _INF), jnp.where(valid, 2.0 * grad / rest, _INF)

    def f_conj_value_grad_hess(self, s):
        valid, s = _below(s, math.log(2.0))
        rest = _two_minus_exp(s)
        grad = jnp.exp(s) / rest
        value, hess = -jnp.log(rest), 2.0 * grad / rest
        return tuple(jnp.where(valid, x, _INF) for x in (value, grad, hess))

    def f_grad_hess(self, t):
        return jnp.log(2.0 * t / (t + 1.0)), 1.0 / (t * (t + 1.0))


def _root_below_1(s):
    """(s ≤ 1, s < 1, √(1 − s) where s < 1 and 1 elsewhere): the one root that Neyman χ²'s
    and the triangular f*, (f*)′, (f*)″ share; the caller puts f* = its value at s = 1 there
    (√(1 − s) = 0) and ∞ above, and ∞ for the derivatives at s ≥ 1."""
    closed, open_ = s <= 1.0, s < 1.0
    return closed, open_, jnp.where(open_, jnp.sqrt(1.0 - jnp.where(open_, s, 0.0)), 1.0)


def _two_minus_exp(s):
    """2 − eˢ = −2 expm1(s − log 2), without the cancellation near s = log 2."""
    return -2.0 * expm1(s - math.log(2.0))


class Jeffreys(AbstractDivergence):
    """Jeffreys (symmetrised KL): f(t) = (t − 1) log t, (f*)′(s) = 1/W(e^(1−s)) with W the
    Lambert W function (`wright_omega`), f*(s) = ω + 1/ω + s − 2 with ω = W(e^(1−s))."""

    name: ClassVar[str] = "jeffreys"
    f_prime_0: ClassVar[float] = -math.inf
    f_prime_inf: ClassVar[float] = math.inf
    legendre: ClassVar[bool] = True
    gamma_power: ClassVar[float] = 0.0

    def f(self, t):
        valid, t = _positive(t)
        return jnp.where(valid, (t - 1.0) * jnp.log(t), _INF)

    def f_conj(self, s):
        # ω + 1/ω + s − 2 with ω + s − 1 = −log ω (ω + log ω = 1 − s): no ∞ − ∞ at s = −∞,
        # where f* → −f(0) = −∞, and no cancellation of ω against s before it
        omega = wright_omega(1.0 - s)
        return 1.0 / omega - jnp.log(omega) - 1.0

    def f_conj_grad(self, s):
        return 1.0 / wright_omega(1.0 - s)

    def f_conj_hess(self, s):
        omega = wright_omega(1.0 - s)  # t = 1/ω; (f*)″ = 1/f″(t) = t²/(t + 1) = 1/(ω(1 + ω))
        return 1.0 / (omega * (1.0 + omega))

    def f_conj_grad_hess(self, s):
        omega = wright_omega(1.0 - s)  # one ω for both
        return 1.0 / omega, 1.0 / (omega * (1.0 + omega))

    def f_conj_value_grad(self, s):
        omega = wright_omega(1.0 - s)
        return 1.0 / omega - jnp.log(omega) - 1.0, 1.0 / omega

    def f_conj_value_grad_hess(self, s):
        omega = wright_omega(1.0 - s)  # one ω for the three
        grad = 1.0 / omega
        return grad - jnp.log(omega) - 1.0, grad, 1.0 / (omega * (1.0 + omega))

    def f_grad_hess(self, t):
        inverse = 1.0 / t
        return jnp.log(t) + 1.0 - inverse, inverse + inverse * inverse


class Triangular(AbstractDivergence):
    """Triangular discrimination (Vincze–Le Cam): f(t) = (t − 1)²/(t + 1), f*(s) =
    4 − s − 4√(1 − s) for −3 ≤ s ≤ 1 and −1 below, (f*)′(s) = 2/√(1 − s) − 1 (sparse: zero
    below f′(0) = −3)."""

    name: ClassVar[str] = "triangular"
    f_prime_0: ClassVar[float] = -3.0
    f_prime_inf: ClassVar[float] = 1.0
    legendre: ClassVar[bool] = True
    gamma_power: ClassVar[float] = -2.0

    def f(self, t):
        valid, t = _nonneg(t)
        return jnp.where(valid, (t - 1.0) ** 2 / (t + 1.0), _INF)

    def f_conj(self, s):
        valid, s = _below(s, 1.0, closed=True)
        value = jnp.where(s >= -3.0, 4.0 - s - 4.0 * jnp.sqrt(1.0 - s), -1.0)
        return jnp.where(valid, value, _INF)

    def f_conj_grad(self, s):
        valid, s = _below(s, 1.0)
        value = jnp.where(s >= -3.0, 2.0 / jnp.sqrt(1.0 - s) - 1.0, 0.0)
        return jnp.where(valid, value, _INF)

    def f_conj_hess(self, s):
        return self.f_conj_grad_hess(s)[1]

    def f_conj_grad_hess(self, s):
        # (1 − s)^(−3/2) as a cube of 1/√(1 − s), not a scalar pow call (as for Neyman χ²)
        valid, s = _below(s, 1.0)
        root = 1.0 / jnp.sqrt(1.0 - s)
        grad = jnp.where(s >= -3.0, 2.0 * root - 1.0, 0.0)
        hess = jnp.where(s > -3.0, root * root * root, 0.0)
        return jnp.where(valid, grad, _INF), jnp.where(valid, hess, _INF)

    def f_conj_value_grad_hess(self, s):
        closed, open_, root = _root_below_1(s)  # one √(1 − s) for the three
        inverse = 1.0 / root
        value = jnp.where(s >= -3.0, 4.0 - s - 4.0 * jnp.where(open_, root, 0.0), -1.0)
        grad = jnp.where(s >= -3.0, 2.0 * inverse - 1.0, 0.0)
        hess = jnp.where(s > -3.0, inverse * inverse * inverse, 0.0)
        value = jnp.where(closed, value, _INF)
        return value, jnp.where(open_, grad, _INF), jnp.where(open_, hess, _INF)

    def f_grad_hess(self, t):
        inverse = 1.0 / (t + 1.0)
        return 1.0 - 4.0 * inverse * inverse, 8.0 * inverse * inverse * inverse


class TV(AbstractDivergence):
    """Total variation: f(t) = |t − 1|/2, f*(s) = max(s, −1/2) for s ≤ 1/2. Not of Legendre
    type (f is not strictly convex nor differentiable at 1): for variational bounds (f-GANs)
    only; `f_conj_grad` is the subgradient 1[s > −1/2] and `f_conj_hess` is 0."""

    name: ClassVar[str] = "tv"
    f_prime_0: ClassVar[float] = -0.5
    f_prime_inf: ClassVar[float] = 0.5
    legendre: ClassVar[bool] = False
    gamma_power: ClassVar[float] = 1.0

    def f(self, t):
        valid, t = _nonneg(t)
        return jnp.where(valid, 0.5 * jnp.abs(t - 1.0), _INF)

    def f_conj(self, s):
        valid, s = _below(s, 0.5, closed=True)
        return jnp.where(valid, jnp.maximum(s, -0.5), _INF)

    def f_conj_grad(self, s):
        valid, s = _below(s, 0.5, closed=True)
        return jnp.where(valid, jnp.where(s > -0.5, 1.0, 0.0), _INF)

    def f_conj_hess(self, s):
        valid, s = _below(s, 0.5, closed=True)
        return jnp.where(valid, 0.0, _INF)


_REGISTRY = {
    cls.name: cls
    for cls in (KL, ReverseKL, Chi2, ReverseChi2, Hellinger2, JS, Jeffreys, Triangular, TV)
}
DIVERGENCES = tuple(_REGISTRY)


def get(divergence, *, legendre: bool = False, where: str = "divergence") -> AbstractDivergence:
    """The generator object for a name in `DIVERGENCES`, or `divergence` itself if it is one.

    **Arguments:** `divergence`: a name ("kl", "reverse_kl", "chi2", "reverse_chi2",
    "hellinger2", "js", "jeffreys", "triangular", "tv") or an `AbstractDivergence`;
    `legendre`: refuse generators not of Legendre type (needed by the generalised Sinkhorn
    algorithm and Γ); `where`: the argument's name in the errors.

    **Raises:** `ValueError` naming `where` for an unknown name (listing the known ones) or,
    with `legendre=True`, a non-Legendre generator ("tv")."""
    if isinstance(divergence, AbstractDivergence):
        found = divergence
    elif isinstance(divergence, str) and divergence in _REGISTRY:
        found = _REGISTRY[divergence]()
    else:
        raise ValueError(
            f"{where} must be one of {DIVERGENCES} or a divergence object, got {divergence!r}"
        )
    if legendre and not found.legendre:
        names = tuple(n for n in DIVERGENCES if _REGISTRY[n].legendre)
        raise ValueError(
            f"{where}={found.name!r} is not of Legendre type (not strictly convex and "
            f"differentiable), which this needs; use one of {names}"
        )
    return found
