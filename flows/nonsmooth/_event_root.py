"""The root finders that locate a kink event on the solver's dense output, `optimistix` root
finders on a bracket: secant steps from beyond the root (`BeyondSecant`, Dekker 1969), which
`filippov_flow` uses, and regula falsi with the Anderson–Björck modification
(`AndersonBjorck`, Anderson & Björck 1973), the finder it replaced, kept as the tests'
reference.

The event function (the smallest distance to a kink, or the smallest slope margin) is smooth
near its root, where one entry reaches zero, so secant steps converge superlinearly: a
handful of evaluations where bisection needs ~50 to shrink a step to 1e-15·(1 + t). Each
evaluation costs one product X̃Bᵀ (and the sliding solve), which makes the root finder most
of an event's cost.
"""

from collections.abc import Callable
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array, Bool, Float, Scalar


def _ends(fn, args, options, f_struct):
    """The bracket of both finders from `options` "lower"/"upper": (lower, upper, f(lower),
    f(upper), sign, done, widths), f normalised by `sign` so that f(lower) >= 0.
    fn(lower) = 0: the root is `lower`; no sign change: nothing to refine, keep `upper`."""
    lower = jnp.asarray(options["lower"], f_struct.dtype)
    upper = jnp.asarray(options["upper"], f_struct.dtype)
    f_lo, _ = fn(lower, args)
    f_up, _ = fn(upper, args)
    sign = jnp.where(f_lo >= 0, 1.0, -1.0).astype(f_struct.dtype)
    f_lo, f_up = sign * f_lo, sign * f_up
    at_lower = f_lo == 0
    upper = jnp.where(at_lower, lower, upper)
    lower = jnp.where(f_up >= 0, upper, lower)
    widths = jnp.full(3, jnp.inf, f_struct.dtype)
    return lower, upper, f_lo, f_up, sign, at_lower | (f_up >= 0), widths


def _shrink(state, c, f_c):
    """The bracket after an evaluation f_c (sign-normalised) at c: (lower, upper, beyond,
    done, widths), `beyond` where the root lies in [lower, c]; an exact zero closes it on c,
    a bracket settled in `init` stays as it is."""
    beyond = f_c < 0
    lower = jnp.where(beyond, state.lower, c)
    upper = jnp.where(beyond, c, state.upper)
    exact = f_c == 0
    lower, upper = jnp.where(exact, c, lower), jnp.where(exact, c, upper)
    lower = jnp.where(state.done, state.lower, lower)
    upper = jnp.where(state.done, state.upper, upper)
    widths = jnp.concatenate([state.widths[1:], jnp.abs(state.upper - state.lower)[None]])
    return lower, upper, beyond, exact | state.done, widths


class _Bracketing(optx.AbstractRootFinder):
    """What both finders share: the tolerances, the stopping test (the bracket settled or
    narrower than `atol + rtol·|upper|`) and the answer (the final bracket's midpoint)."""

    rtol: float
    atol: float
    norm: ClassVar[Callable] = jnp.abs

    def terminate(self, fn, y, args, options, state, tags):
        width = jnp.abs(state.upper - state.lower)
        narrow = width < self.atol + self.rtol * jnp.abs(state.upper)
        return narrow | state.done, optx.RESULTS.successful

    def postprocess(self, fn, y, aux, args, options, state, tags, result):
        return state.lower + 0.5 * (state.upper - state.lower), aux, {}


class _BracketState(eqx.Module):
    lower: Scalar  # the end where the (sign-normalised) function is >= 0
    upper: Scalar  # the end where it is < 0
    f_lower: Scalar  # the function there, times `sign` (scaled by the Anderson–Björck rule)
    f_upper: Scalar
    sign: Float[Array, ""]  # +1 if fn(lower) >= 0 at the start, else -1
    kept: Float[Array, ""]  # +1: the last step kept `lower`; -1: kept `upper`; 0: none yet
    done: Bool[Array, ""]  # an evaluation was exactly 0, or there was no sign change
    widths: Float[Array, " 3"]  # the bracket's width before each of the last three steps


class AndersonBjorck(_Bracketing):
    """Anderson–Björck regula falsi on `[lower, upper]` (options, as for `optimistix.Bisection`),
    stopping when the bracket is narrower than `atol + rtol·|upper|` (the event function's
    value at the root is as small as its slope allows, which no tolerance on it can express).

    Each step takes the secant point of the bracket (the midpoint where that point falls
    outside it by round-off) and keeps the half that changes sign; when the same end is kept
    twice in a row its function value is scaled by m = 1 − f(c)/f(replaced end) (½ when
    m <= 0, the Illinois rule), so both ends converge. Where three steps in a row have not
    halved the bracket (the event function is not smooth there: the smallest entry changes,
    or a sliding slope jumps), the step bisects, so it never takes more than about three
    times bisection's steps. Two evaluations in `init` (the ends) and one per step. Returns
    the midpoint of the final bracket.

    **Reference:** Anderson & Björck 1973, "A new high order method of regula falsi type for
    computing a root of an equation", BIT 13, 253–264.
    """

    def init(self, fn, y, args, options, f_struct, aux_struct, tags):
        lower, upper, f_lo, f_up, sign, done, widths = _ends(fn, args, options, f_struct)
        zero = jnp.zeros((), f_struct.dtype)
        return _BracketState(lower, upper, f_lo, f_up, sign, zero, done, widths)

    @staticmethod
    def _candidate(state):
        lo, up, f_lo, f_up = state.lower, state.upper, state.f_lower, state.f_upper
        secant = up - f_up * (up - lo) / (f_up - f_lo)
        inside = (secant > jnp.minimum(lo, up)) & (secant < jnp.maximum(lo, up))
        # safeguard: where three steps did not halve the bracket (the function is not smooth
        # there, e.g. where the smallest entry changes), bisect
        slow = jnp.abs(up - lo) > 0.5 * state.widths[0]
        secant_ok = inside & jnp.isfinite(secant) & ~slow
        return jnp.where(secant_ok, secant, lo + 0.5 * (up - lo))

    def step(self, fn, y, args, options, state, tags):
        c = self._candidate(state)
        f_c, aux = fn(c, args)
        f_c = state.sign * f_c
        lower, upper, keep_lower, done, widths = _shrink(state, c, f_c)
        scale_lower = keep_lower & (state.kept > 0)
        scale_upper = ~keep_lower & (state.kept < 0)
        # Anderson–Björck: the end kept twice in a row has its value scaled by
        # m = 1 − f(c)/f(replaced end) (½, the Illinois factor, when m <= 0)
        replaced = jnp.where(keep_lower, state.f_upper, state.f_lower)
        m = 1.0 - f_c / jnp.where(replaced == 0, 1.0, replaced)
        m = jnp.where((m > 0) & jnp.isfinite(m), m, 0.5)
        f_lower = jnp.where(keep_lower, jnp.where(scale_lower, m, 1.0) * state.f_lower, f_c)
        f_upper = jnp.where(keep_lower, f_c, jnp.where(scale_upper, m, 1.0) * state.f_upper)
        kept = jnp.where(keep_lower, 1.0, -1.0).astype(state.kept.dtype)
        new = _BracketState(lower, upper, f_lower, f_upper, state.sign, kept, done, widths)
        return lower + 0.5 * (upper - lower), new, aux


class _SecantState(eqx.Module):
    lower: Scalar  # the end where the (sign-normalised) function is >= 0
    upper: Scalar  # the end where it is < 0
    sign: Float[Array, ""]  # +1 if fn(lower) >= 0 at the start, else -1
    a: Scalar  # the secant's older point and its (normalised) value
    f_a: Scalar
    b: Scalar  # the secant's newer point
    f_b: Scalar
    paired: Bool[Array, ""]  # (a, b) are usable: two points beyond the root were found
    done: Bool[Array, ""]
    widths: Float[Array, " 3"]  # the bracket's width before each of the last three steps


class BeyondSecant(_Bracketing):
    """Secant steps from beyond the root, inside a bracket `[lower, upper]` (options, as for
    `optimistix.Bisection`), stopping when the bracket is narrower than `atol + rtol·|upper|`.

    The event function g = min over entries is smooth beyond its root (the entry that
    crossed is the smallest there) but has kinks before it, where another entry becomes the
    smallest; regula falsi with the far end of the step keeps that end's kinked value for
    many steps. This finder bisects until a second point lies beyond the root (where g < 0),
    then takes secant steps through the latest two points (Dekker 1969), which converge
    superlinearly on the smooth side. A step closer than tol/2 to the latest point is moved
    to tol/2 from it, so that the bracket closes around the root; where three steps in a row
    have not halved the bracket, or the secant point falls outside it, the step bisects (as
    `AndersonBjorck`). Two evaluations in `init` (the ends) and one per step. Returns the
    midpoint of the final bracket.

    **Reference:** Dekker 1969, "Finding a zero by means of successive linear interpolation",
    in Dejon & Henrici (eds.), Constructive Aspects of the Fundamental Theorem of Algebra.
    """

    def init(self, fn, y, args, options, f_struct, aux_struct, tags):
        lower, upper, _, f_up, sign, done, widths = _ends(fn, args, options, f_struct)
        false = jnp.asarray(False)
        return _SecantState(lower, upper, sign, upper, f_up, upper, f_up, false, done, widths)

    def _candidate(self, state):
        lo, up = state.lower, state.upper
        a, b, f_a, f_b = state.a, state.b, state.f_a, state.f_b
        secant = b - f_b * (b - a) / jnp.where(f_b == f_a, jnp.inf, f_b - f_a)
        lo_, hi_ = jnp.minimum(lo, up), jnp.maximum(lo, up)
        slow = jnp.abs(up - lo) > 0.5 * state.widths[0]
        ok = state.paired & jnp.isfinite(secant) & (secant > lo_) & (secant < hi_) & ~slow
        c = jnp.where(ok, secant, lo + 0.5 * (up - lo))
        # at least tol/2 from the latest point, towards the secant point: the next
        # evaluation then closes the bracket around the root
        half = 0.5 * (self.atol + self.rtol * jnp.abs(up))
        step = c - b
        toward = jnp.where(step == 0, jnp.sign(lo - b), jnp.sign(step))
        c = jnp.where(ok & (jnp.abs(step) < half), b + toward * half, c)
        inside = (c > lo_) & (c < hi_)
        return jnp.where(inside, c, lo + 0.5 * (up - lo))

    def step(self, fn, y, args, options, state, tags):
        c = self._candidate(state)
        f_c, aux = fn(c, args)
        f_c = state.sign * f_c
        lower, upper, beyond, done, widths = _shrink(state, c, f_c)
        # the secant pair: once two points lie beyond the root, always the latest two; before
        # that, the latest point beyond it (bisection steps short of the root are not kept)
        shift = state.paired | beyond
        a = jnp.where(shift, state.b, state.a)
        f_a = jnp.where(shift, state.f_b, state.f_a)
        b = jnp.where(shift, c, state.b)
        f_b = jnp.where(shift, f_c, state.f_b)
        new = _SecantState(lower, upper, state.sign, a, f_a, b, f_b, shift, done, widths)
        return lower + 0.5 * (upper - lower), new, aux
