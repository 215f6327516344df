"""rkc: the stabilized explicit Runge–Kutta–Chebyshev method of order 2 (Sommeijer, Shampine &
Verwer 1998), as a diffrax solver.

A step of length h from (tₙ, yₙ) takes s ≥ 2 stages, s chosen at each step from h and the
spectral radius ρ of the Jacobian ∂f/∂y so that hρ lies in the method's real stability
interval [−β(s), 0], β(s) ≈ 0.65 s² (Verwer, Hundsdorfer & Sommeijer 1990). With damping
ε = 2/13, w₀ = 1 + ε/s², w₁ = T_s'(w₀)/T_s''(w₀) (T_j the Chebyshev polynomials) and
b_j = T_j''(w₀)/T_j'(w₀)² (j ≥ 2; b₀ = b₁ = b₂), a_j = 1 − b_j T_j(w₀):

  Y₀ = yₙ,  Y₁ = yₙ + μ̃₁hF₀,  μ̃₁ = b₁w₁,
  Y_j = (1 − μ_j − ν_j)yₙ + μ_jY_{j−1} + ν_jY_{j−2} + μ̃_jhF_{j−1} + γ̃_jhF₀   (2 ≤ j ≤ s),
  μ_j = 2b_jw₀/b_{j−1},  ν_j = −b_j/b_{j−2},  μ̃_j = 2b_jw₁/b_{j−1},  γ̃_j = −a_{j−1}μ̃_j,

F_j = f(tₙ + c_jh, Y_j), yₙ₊₁ = Y_s; T_j, T_j', T_j'' (and the stage times c_j) by their
three-term recurrences inside a loop of dynamic length s. Its error estimate (RKC's, of the
local error, O(h³)) is
  err = 0.8(yₙ − yₙ₊₁) + 0.4h(f(yₙ) + f(yₙ₊₁)),
and f(yₙ₊₁) is the next step's F₀ (first same as last): a step costs s evaluations of f. Its
dense output is the cubic Hermite interpolant of yₙ, yₙ₊₁, f(yₙ), f(yₙ₊₁) (diffrax's
`ThirdOrderHermitePolynomialInterpolation`).

The number of stages is s = 1 + ⌊√(1 + 1.54hρ)⌋ (as the authors' code rkc.f), at most
`max_stages`; a step whose hρ needs more is rejected (its error set to +inf), so the controller
shortens it. ρ is the user's `rho(t, y, args)` at each step's start, or, without one, RKC's
nonlinear power iteration on f (differences f(yₙ + δv) − f(yₙ), warm-started from the last
direction; 1.2 × the converged estimate), repeated every `rho_every` accepted steps.

Reference: Sommeijer, Shampine & Verwer 1998, "RKC: an explicit solver for parabolic PDEs",
J. Comput. Appl. Math. 88, 315–326, §2 (the formulas above, eqs. 2.1–2.6), §3 (error
estimate, step and stage selection, spectral radius); Verwer, Hundsdorfer & Sommeijer 1990,
"Convergence properties of the Runge–Kutta–Chebyshev method", Numer. Math. 57, 157–178.
"""

from collections.abc import Callable
from typing import ClassVar

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

#: RKC's damping ε (Sommeijer, Shampine & Verwer 1998, §2): β(s) ≈ (2 − 4ε/3)s² ≈ 0.65 s².
DAMPING = 2.0 / 13.0
#: The spectral radius estimate is multiplied by this (rkc.f's safety factor).
RHO_SAFETY = 1.2


def stages(h, rho, max_stages):
    """The stage count s = 1 + ⌊√(1 + 1.54hρ)⌋ (≥ 2) of a step of length `h` for the
    spectral radius `rho`, and whether it is within `max_stages`."""
    s = 1 + jnp.floor(jnp.sqrt(1.0 + 1.54 * jnp.abs(h) * rho)).astype(jnp.int32)
    return jnp.clip(s, 2, max_stages), s <= max_stages


def stability_bound(s, eps=DAMPING):
    """β(s) = (w₀ + 1)T_s''(w₀)/T_s'(w₀): the length of RKC's real stability interval with
    s stages and damping `eps` (for tests and diagnostics; ≈ 0.653 s² at ε = 2/13)."""
    w0 = 1.0 + eps / s**2
    t, dt, d2t = (1.0, w0), (0.0, 1.0), (0.0, 0.0)
    for _ in range(2, s + 1):
        t = (t[1], 2 * w0 * t[1] - t[0])
        d2t = (d2t[1], 2 * w0 * d2t[1] - d2t[0] + 4 * dt[1])
        dt = (dt[1], 2 * w0 * dt[1] - dt[0] + 2 * t[0])
    return (w0 + 1.0) * d2t[1] / dt[1]


def _step_flat(f, t0, h, y0, f0, s, eps):
    """`(y₁, f(t₀ + h, y₁))` of one RKC step (flat arrays), `f(t, y)` the field, `f0` =
    f(t0, y0). The loop runs one iteration past stage s, whose evaluation is f(y₁): the
    program holds the field once for the stages and the end."""
    s_float = s.astype(y0.dtype)
    w0 = 1.0 + eps / s_float**2
    # w₁ = T_s'(w₀)/T_s''(w₀), with T_s(cosh θ) = cosh(sθ)
    temp1 = w0**2 - 1.0
    temp2 = jnp.sqrt(temp1)
    arg = s_float * jnp.log(w0 + temp2)
    w1 = jnp.sinh(arg) * temp1 / (jnp.cosh(arg) * s_float * temp2 - w0 * jnp.sinh(arg))
    b1 = 1.0 / (2.0 * w0) ** 2  # b₀ = b₁ = b₂ = T₂''/T₂'² = 1/(4w₀²)
    mus = w1 * b1
    y1 = y0 + h * mus * f0
    one, zero = jnp.ones_like(w0), jnp.zeros_like(w0)
    # carry: Y_{j−1}, Y_{j−2}, c_{j−1}, c_{j−2}, (T, T', T'')_{j−1}, (…)_{j−2}, b_{j−1}, b_{j−2},
    # and the last evaluation F_{j−1}
    init = (y1, y0, mus, zero, w0, one, one, zero, zero, zero, b1, b1, f0)

    def stage(j, carry):
        yjm1, yjm2, cjm1, cjm2, zjm1, zjm2, dzjm1, dzjm2, d2zjm1, d2zjm2, bjm1, bjm2, _ = carry
        # F_{j−1}; at j = s + 1 that is f(y₁), at t₀ + h exactly
        fjm1 = f(jnp.where(j > s, t0 + h, t0 + h * cjm1), yjm1)
        zj = 2 * w0 * zjm1 - zjm2
        dzj = 2 * w0 * dzjm1 - dzjm2 + 2 * zjm1
        d2zj = 2 * w0 * d2zjm1 - d2zjm2 + 4 * dzjm1
        bj = d2zj / dzj**2
        ajm1 = 1.0 - zjm1 * bjm1
        mu = 2 * w0 * bj / bjm1
        nu = -bj / bjm2
        mus = mu * w1 / w0
        yj = mu * yjm1 + nu * yjm2 + (1.0 - mu - nu) * y0 + h * mus * (fjm1 - ajm1 * f0)
        cj = mu * cjm1 + nu * cjm2 + mus * (1.0 - ajm1)
        return (yj, yjm1, cj, cjm1, zj, zjm1, dzj, dzjm1, d2zj, d2zjm1, bj, bjm1, fjm1)

    out = jax.lax.fori_loop(2, s + 2, stage, init)
    return out[1], out[-1]


def _power_rho(f, t0, y0, f0, v, max_iters=50, rel_tol=0.01):
    """RKC's nonlinear power iteration for the spectral radius of ∂f/∂y at y0 (flat):
    `(ρ, direction)`, ρ the last |f(y0 + δv) − f0|/δ (without the safety factor), the
    direction to warm-start the next estimate; `v` the last direction (or f0 at the start)."""
    tiny = jnp.finfo(y0.dtype).eps
    ynrm, vnrm = jnp.linalg.norm(y0), jnp.linalg.norm(v)
    delta = jnp.where(ynrm > 0, ynrm * jnp.sqrt(tiny), tiny)
    e0 = jnp.zeros_like(y0).at[0].set(1.0)
    v = jnp.where(vnrm > 0, v / jnp.where(vnrm > 0, vnrm, 1.0), e0)

    def body(carry):
        i, v, rho, _ = carry
        df = f(t0, y0 + delta * v) - f0
        norm = jnp.linalg.norm(df)
        new = norm / delta
        v = jnp.where(norm > 0, df / jnp.where(norm > 0, norm, 1.0), jnp.roll(v, 1))
        done = (i >= 1) & (jnp.abs(new - rho) <= rel_tol * jnp.maximum(new, tiny))
        return i + 1, v, new, done

    def cond(carry):
        i, _, _, done = carry
        return (i < max_iters) & ~done

    zero = jnp.zeros((), y0.dtype)
    _, v, rho, _ = jax.lax.while_loop(cond, body, (0, v, zero, jnp.asarray(False)))
    return rho, v


class _RKCState(eqx.Module):
    f0: jax.Array  # f(tₙ, yₙ), flat (first same as last)
    direction: jax.Array  # the power iteration's last direction, flat
    rho: jax.Array  # the spectral radius in use (safety factor included)
    age: jax.Array  # accepted steps since ρ was estimated (−1: estimate at the next step)


class RKC(dfx.AbstractAdaptiveSolver):
    """RKC (Sommeijer, Shampine & Verwer 1998): explicit Runge–Kutta–Chebyshev, order 2,
    s stages per step chosen from hρ (stability interval ≈ 0.65 s² on the negative real
    axis), s evaluations of f per step, for stiff fields whose Jacobian has its eigenvalues
    near the negative real axis (diffusion-like; a gradient flow's −∇²F is symmetric).

    - `rho`: the spectral radius of ∂f/∂y, `rho(t, y, args) -> float` at each step's start
      (state shape as y, t in the flow's time units, ρ in 1/time); None: RKC's nonlinear
      power iteration on f, every `rho_every` accepted steps and at the start (a few
      evaluations each, counted as the field's). An underestimated ρ gives too few stages:
      the stiff components grow, the error estimate sees them and the controller rejects
      and shortens the step, so the solve stays correct but costs more (a ρ far too low
      can let a slow instability through below the tolerance: give a bound).
    - `max_stages`: the most stages of a step; a step whose hρ needs more is rejected.
    - `damping`: ε of the Chebyshev shift w₀ = 1 + ε/s² (2/13, the authors').
    """

    rho: Callable | None = None
    rho_every: int = eqx.field(static=True, default=25)
    max_stages: int = eqx.field(static=True, default=200)
    damping: float = eqx.field(static=True, default=DAMPING)

    term_structure: ClassVar = dfx.AbstractTerm
    interpolation_cls: ClassVar = dfx.ThirdOrderHermitePolynomialInterpolation.from_k

    def __check_init__(self):
        if not (isinstance(self.max_stages, int) and self.max_stages >= 2):
            raise ValueError(f"max_stages must be an integer >= 2, got {self.max_stages!r}")
        if not (isinstance(self.rho_every, int) and self.rho_every >= 1):
            raise ValueError(f"rho_every must be an integer >= 1, got {self.rho_every!r}")
        if not 0 <= self.damping < 1:
            raise ValueError(f"damping must be in [0, 1), got {self.damping!r}")
        if self.rho is not None and not callable(self.rho):
            raise ValueError(f"rho must be None or a callable rho(t, y, args), got {self.rho!r}")

    def order(self, terms):
        return 2

    def init(self, terms, t0, t1, y0, args):
        f0 = ravel_pytree(terms.vf(t0, y0, args))[0]
        zero = jnp.zeros((), f0.dtype)
        return _RKCState(f0, f0, zero, jnp.asarray(-1, jnp.int32))

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        h = t1 - t0
        flat0, unravel = ravel_pytree(y0)

        def f(t, x):
            return ravel_pytree(terms.vf(t, unravel(x), args))[0]

        st = solver_state
        f0 = jax.lax.cond(made_jump, lambda: f(t0, flat0), lambda: st.f0)
        if self.rho is None:
            fresh = (st.age < 0) | (st.age >= self.rho_every)

            def estimate():
                rho, direction = _power_rho(f, t0, flat0, f0, st.direction)
                return RHO_SAFETY * rho, direction, jnp.zeros((), jnp.int32)

            rho, direction, age = jax.lax.cond(
                fresh, estimate, lambda: (st.rho, st.direction, st.age)
            )
        else:
            rho = jnp.asarray(self.rho(t0, y0, args), flat0.dtype)
            direction, age = st.direction, st.age
        s, within = stages(h, rho, self.max_stages)
        y1, f1 = _step_flat(f, t0, h, flat0, f0, s, self.damping)
        err = 0.8 * (flat0 - y1) + 0.4 * h * (f0 + f1)
        err = jnp.where(within, err, jnp.inf)
        state = _RKCState(f1, direction, rho, age + 1)
        dense_info = dict(y0=y0, y1=unravel(y1), k=jax.vmap(unravel)(jnp.stack([h * f0, h * f1])))
        return unravel(y1), unravel(err), dense_info, state, dfx.RESULTS.successful
