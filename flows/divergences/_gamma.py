"""Γ_w(h): the normaliser of the generalised c-transform, the unique γ with
Σ_j w_j (f*)′(h_j − γ) = 1.

KL has the closed form log Σ_j w_j e^{h_j} (logsumexp); Pearson χ² is exact by sorting (the
root is the largest of the candidate roots of the top-k sets); every other f uses Newton's
method on F(γ) = Σ_j w_j (f*)′(h_j − γ) = 1 inside a bracket [lo, hi] that always holds the root,
with the residual F^q − 1 for a power q per f that makes it nearly linear (log F for KL-like
f), falling back to bisection whenever a Newton step leaves it or is not finite, to 1e-14
relative, inside `lax.while_loop`.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_float64
from ._generators import KL, AbstractDivergence, Chi2, get

TOL = 1e-14  # relative step (and bracket width) at which the Newton iteration stops
MAX_STEPS = 200  # a bisection alone reaches 1e-14 relative from any bracket in < 110
#: A Newton step at most QUADRATIC × the last one (the quadratic regime), whose predicted
#: successor step³/last² is below PREDICTED × TOL (both strict: a linear rate of QUADRATIC leaves
#: QUADRATIC × PREDICTED × 64 ≈ 1e-4 × TOL), ends the iteration without a further pass.
QUADRATIC = 1.0 / 64
PREDICTED = 1e-4
TOWARD_LO = 1.0 / 32  # the fraction of γ − lo kept by a Newton step that left the bracket at lo
#: How far Σ w may lie from 1 (n weights 1/n sum to 1 within n·eps: 1e-8 allows n ~ 1e7).
WEIGHT_SUM_TOL = 1e-8


def _sums(div, h, w, gamma):
    """Σ w (f*)′(h − γ) and Σ w (f*)″(h − γ) over the entries with w > 0."""
    grad, hess = div.f_conj_grad_hess(h - gamma)
    used = w > 0
    first = jnp.sum(jnp.where(used, w * grad, 0.0), axis=-1)
    second = jnp.sum(jnp.where(used, w * hess, 0.0), axis=-1)
    return first, second


def bracket(div, h, w):
    """[lo, hi] holding the root: at γ = max h every argument is ≤ 0, so the sum is ≤ 1; at
    γ = min h every argument is ≥ 0, so the sum is ≥ 1, and at γ = max h − f′(∞) it is +∞."""
    used = w > 0
    hi = jnp.max(jnp.where(used, h, -jnp.inf), axis=-1)
    low = jnp.min(jnp.where(used, h, jnp.inf), axis=-1)
    return jnp.maximum(low, hi - div.f_prime_inf), hi


def newton_gamma(div, h, w, guess=None):
    """(γ, steps) for one row h (n,), weights w (n,), from `guess` (or the weighted mean,
    where the sum is ≥ 1 by Jensen's inequality, (f*)′ being convex)."""
    lo, hi = bracket(div, h, w)
    if guess is None:
        guess = jnp.sum(jnp.where(w > 0, w * h, 0.0))
    start = jnp.where((guess > lo) & (guess < hi), guess, 0.5 * (lo + hi))

    def cond(state):
        _, _, _, steps, done, _ = state
        return ~done & (steps < MAX_STEPS)

    def body(state):
        gamma, lo, hi, steps, _, last = state
        first, second = _sums(div, h, w, gamma)
        residual = jnp.log(first)  # > 0: the root lies to the right
        lo = jnp.where(residual > 0, gamma, lo)
        hi = jnp.where(residual < 0, gamma, hi)
        newton = _increment(div.gamma_power, first, second, residual)
        scale = TOL * jnp.maximum(1.0, jnp.abs(gamma))
        # a step below the tolerance ends it (round-off may put it a hair outside the bracket)
        size = jnp.abs(newton)
        done = (residual == 0) | (size <= scale) | (hi - lo <= scale)
        candidate = gamma + jnp.where(residual == 0, 0.0, newton)
        inside = jnp.isfinite(candidate) & (candidate > lo) & (candidate < hi)
        # so does a step inside the bracket whose successor, predicted from the curvature the
        # last two steps show (quadratic convergence: ≈ step² × step/last²), is below the
        # tolerance: the pass that would only confirm it is saved
        quadratic = jnp.isfinite(last) & (size < QUADRATIC * last)
        done = done | (inside & quadratic & (size**3 <= PREDICTED * scale * last**2))
        # a step past lo (the pole of (f*)′, for most f) goes most of the way to lo instead:
        # left of the root Newton on the concave F^q is monotone, and near the pole F^q is
        # nearly linear
        left = jnp.isfinite(candidate) & (candidate <= lo)
        fallback = jnp.where(left, lo + TOWARD_LO * (gamma - lo), 0.5 * (lo + hi))
        candidate = jnp.where(inside | done, candidate, fallback)
        candidate = jnp.where(jnp.isfinite(candidate), candidate, gamma)
        last = jnp.where(inside, size, jnp.inf)  # after a fallback, no curvature is known
        return candidate, lo, hi, steps + 1, done, last

    state = (start, lo, hi, jnp.asarray(0), jnp.asarray(False), jnp.asarray(jnp.inf))
    gamma, _, _, steps, _, _ = jax.lax.while_loop(cond, body, state)
    return gamma, steps


def _increment(power, first, second, log_first):
    """The Newton step in γ on F^q = 1 (on log F = 1 for q = 0), F = Σ w (f*)′(h − γ),
    F′ = −Σ w (f*)″(h − γ): F (1 − F^(−q)) / (q Σ w (f*)″), which tends to F log F / Σ w (f*)″
    as q → 0. With q chosen per f (`gamma_power`) F^q is nearly linear in γ: from a warm
    start two or three steps reach round-off, where Newton on log F near the pole of
    (f*)′ overshot out of the bracket into bisection."""
    if power == 0:
        return log_first * first / second
    return first * -jnp.expm1(-power * log_first) / (power * second)


def _chi2_sorted(h, w):
    """Pearson χ², exact: (f*)′(s) = max(s/2 + 1, 0), so with the k largest h active the
    root is γ_k = S_wh/S_w + 2 − 2/S_w (cumulative sums in decreasing order of h), each
    γ_k ≤ γ (the k-term sum is below the full one), and γ = max_k γ_k."""
    order = jnp.argsort(-jnp.where(w > 0, h, -jnp.inf))
    hs, ws = h[order], w[order]
    sw = jnp.cumsum(ws)
    swh = jnp.cumsum(jnp.where(ws > 0, ws * hs, 0.0))
    candidates = jnp.where(
        sw > 0, swh / jnp.where(sw > 0, sw, 1.0) + 2.0 - 2.0 / jnp.where(sw > 0, sw, 1.0), -jnp.inf
    )
    return jnp.max(candidates)


def solve_gamma(div: AbstractDivergence, h, w, guess=None):
    """(Γ_w(h), Newton steps) for one row h (n,) and weights w (n,), without the implicit
    derivative (for callers that stop gradients, like the Sinkhorn iterations); KL and χ²
    report 0 steps."""
    if isinstance(div, KL):
        used = w > 0
        return jax.nn.logsumexp(
            jnp.where(used, h, -jnp.inf), b=jnp.where(used, w, 1.0)
        ), jnp.asarray(0)
    if isinstance(div, Chi2):
        return _chi2_sorted(h, w), jnp.asarray(0)
    return newton_gamma(div, h, w, guess)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _gamma_row(div, h, w):
    return solve_gamma(div, h, w)[0]


@_gamma_row.defjvp
def _gamma_row_jvp(div, primals, tangents):
    """Implicit derivative of Σ_j w_j (f*)′(h_j − γ) = 1:
    dγ = (Σ_j w_j (f*)″(h_j − γ) dh_j + Σ_j (f*)′(h_j − γ) dw_j) / Σ_k w_k (f*)″(h_k − γ)."""
    h, w = primals
    dh, dw = tangents
    gamma = _gamma_row(div, h, w)
    s = h - gamma
    used = w > 0
    weight = jnp.where(used, w * div.f_conj_hess(jnp.where(used, s, 0.0)), 0.0)
    slope = jnp.where(used, div.f_conj_grad(jnp.where(used, s, 0.0)), 0.0)
    return gamma, (jnp.sum(weight * dh) + jnp.sum(slope * dw)) / jnp.sum(weight)


def gamma(h, w, divergence="kl"):
    """Γ_w(h), the unique γ with Σ_j w_j (f*)′(h_j − γ) = 1: the normaliser of the
    generalised c-transform u_i = −ε Γ_b((v − c_i·)/ε).

    Translation-equivariant, Γ(h + c) = Γ(h) + c. KL: logsumexp(h, b=w). Pearson χ²: exact
    by sorting. The others: bracketed Newton to 1e-14 relative. Differentiable in h and w by
    the implicit derivative ∂Γ/∂h_j = w_j (f*)″(h_j − γ) / Σ_k w_k (f*)″(h_k − γ)
    (`jax.custom_jvp`); works under `jit` and `vmap`.

    **Arguments:**
    - `h`: float64 array `(..., n)`; the last axis is reduced (leading axes are batched).
    - `w`: float64 array `(n,)`, weights ≥ 0 summing to 1 (entries with w_j = 0 are ignored).
    - `divergence`: a name in `DIVERGENCES` or an `AbstractDivergence` of Legendre type.

    **Returns:** float64 array of shape `h.shape[:-1]`.

    **Raises:** `ValueError` naming `divergence` if it is unknown or not of Legendre type
    ("tv"), naming `h` and `w` if their last axes differ, and outside `jit` naming `w` if it
    holds a negative or non-finite entry or does not sum to 1 (within `WEIGHT_SUM_TOL`), or
    naming `h` if it holds NaN or ±∞; naming `h` or `w` if it is float32.

    **Reference:** Terjék & González-Sánchez, AISTATS 2022 (arXiv 2105.14337), Sec. 3."""
    div = get(divergence, legendre=True)
    check_float64("h", h)  # as `sinkhorn`: a float32 h was cast, Γ off by 1e-9 relative
    check_float64("w", w)
    h = jnp.asarray(h, dtype=float)
    w = jnp.asarray(w, dtype=float)
    if w.ndim != 1 or h.ndim < 1 or h.shape[-1] != w.shape[0]:
        raise ValueError(
            f"h of shape {h.shape} and w of shape {w.shape} do not match: "
            "w must be (n,) and h (..., n)"
        )
    _check_weights(h, w)
    row = functools.partial(_gamma_row, div)
    return jnp.vectorize(row, signature="(n),(n)->()")(h, w)


def _check_weights(h, w) -> None:
    """Outside `jit`: w ≥ 0, finite, Σ w = 1, and h finite. A weight vector summing to
    2 returned Γ + log 2 for KL (a silently different number), a negative or NaN weight was
    dropped as if it were 0, all-zero weights gave -inf or NaN, a NaN in h gave NaN, and
    +∞ gave ∞ or NaN (−∞ gave −∞ for Jeffreys)."""
    if isinstance(w, jax.core.Tracer):
        return
    weights = np.asarray(w)
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError(f"w must hold finite weights >= 0, got {weights!r}")
    total = float(np.sum(weights))
    if abs(total - 1.0) > WEIGHT_SUM_TOL:
        raise ValueError(
            f"w must sum to 1 (a probability vector), got sum {total!r}; divide w by its sum"
        )
    if not isinstance(h, jax.core.Tracer):
        values = np.asarray(h)
        if not np.all(np.isfinite(values)):  # +∞ gave Γ = ∞ or NaN, −∞ −∞ for Jeffreys
            count = int(np.sum(~np.isfinite(values)))
            raise ValueError(f"h holds {count} non-finite entries (NaN or inf)")
