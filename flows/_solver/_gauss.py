"""Gauss–Legendre collocation (implicit midpoint, Gauss4, Gauss6) as a diffrax solver.

These Runge–Kutta methods satisfy b_i·a_ij + b_j·a_ji = b_i·b_j, so they conserve every
quadratic invariant of any ODE at any step size (Cooper 1987; Hairer, Lubich & Wanner,
"Geometric Numerical Integration", Thm IV.2.2): the balancedness C_k of a deep linear net and
the per-neuron ‖b_j‖² − a_j² of a two-layer homogeneous net then stay constant to the accuracy
of the stage equations' solve, not to the step-size tolerance.
"""

import math
from typing import ClassVar

import diffrax as dfx
import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx

# Host-side note of the latest step whose Newton iteration failed: (t0, dt, residual).
# `integrate` reads it when a solve stops, to name the residual that stopped it.
_LATEST = {}


def _note_step(t0, dt, residual, converged):
    if not converged:
        _LATEST.update(t=float(t0), dt=float(dt), residual=float(residual))


def newton_failure(t_reached: float) -> str | None:
    """A sentence naming the time and the residual, if a step of a Gauss–Legendre solve from
    the time reached was rejected because its Newton iteration failed; else None."""
    jax.effects_barrier()
    if not _LATEST or abs(_LATEST["t"] - t_reached) > 1e-12 * max(1.0, abs(t_reached)):
        return None
    return (
        f"Newton's iteration on the implicit stages did not converge at t={_LATEST['t']:.6g} "
        f"(step {_LATEST['dt']:.3g}): relative residual {_LATEST['residual']:.3g}, and smaller "
        "steps did not help (is the objective finite and differentiable beyond this point?)"
    )


def forget_newton_failure() -> None:
    jax.effects_barrier()
    _LATEST.clear()


def gauss_legendre_tableau(stages: int):
    """(c, A, b) of the s-stage Gauss–Legendre collocation method, order 2s.

    c are the zeros of the shifted Legendre polynomial on [0, 1]; a_ij = ∫_0^{c_i} ℓ_j, ℓ_j the
    Lagrange basis on c (the collocation conditions Σ_j a_ij c_j^(k−1) = c_i^k / k, k = 1…s);
    b are the Gauss quadrature weights. Returns numpy arrays c (s,), A (s, s), b (s,) for
    `stages` = s ≥ 1 (Butcher 1964).

    ℓ_j is expanded in Legendre polynomials, exactly by the s-point quadrature:
    ℓ_j(x) = b_j Σ_{k<s} (2k+1) P_k(u_j) P_k(u), u = 2x − 1, and ∫_{−1}^{u} P_k =
    (P_{k+1}(u) − P_{k−1}(u))/(2k+1) for k ≥ 1, so A is exact to round-off at any s (the
    monomial Vandermonde solve was off by 7.6e-12 at s = 10, 2e-4 at s = 20 and gave
    entries of 1e2 at s = 30 where |a_ij| < 1).
    """
    x, w = np.polynomial.legendre.leggauss(stages)
    c, b = (x + 1) / 2, w / 2
    P = np.polynomial.legendre.legvander(x, stages).T  # P[k, i] = P_k(x_i), k = 0…s
    inner = c[:, None] + sum(
        (P[k + 1] - P[k - 1])[:, None] * P[k][None, :] / 2 for k in range(1, stages)
    )  # inner[i, j] = ∫_0^{c_i} ℓ_j / b_j
    return c, b[None, :] * inner, b


def _divided_difference_weights(nodes):
    """d_i = 1/Π_{j≠i}(x_i − x_j): Σ d_i g(x_i) is the divided difference g[x_0, …, x_m]."""
    return np.array(
        [
            1.0 / math.prod(xi - xj for j, xj in enumerate(nodes) if j != i)
            for i, xi in enumerate(nodes)
        ]
    )


class GaussLegendre(dfx.AbstractImplicitSolver, dfx.AbstractAdaptiveSolver):
    """The s-stage Gauss–Legendre Runge–Kutta method (s = 1: implicit midpoint), order 2s,
    for ODEs y' = f(t, y).

    **Stage equations.** The increments Z_i = Y_i − y0 (shape `(s, p)`) solve
    G(Z) = Z − h(A⊗I)F(Z) = 0, F_i = f(t0 + c_i h, y0 + Z_i), from the predictor
    Z_i = c_i h f(y0). For p ≤ `dense_max_size` by the chord method (the stacked Jacobian at the
    predictor, formed and LU-factorised once per step); beyond it by Newton's method whose
    linear systems are solved by GMRES through Jacobian-vector products only (for a gradient
    flow: Hessian-vector products), `gmres_restart` Krylov vectors per cycle and at most
    `gmres_max_cycles` cycles. The iteration stops when ‖G(Z)‖_∞ ≤ `newton_tol`·scale with
    scale = max(‖y0‖_∞, h‖f(y0)‖_∞): a tolerance set by what is conserved, not by the step
    controller's rtol. Each step then costs s + 1 further evaluations (F at the solved stages
    and f(y1), reused as the next step's f(y0)).

    **Error estimate.** err = h/(s+2) · Σ_i d_i f(x_i) over the s + 2 nodes
    x = (t0, t0 + c_1h, …, t0 + c_sh, t1), with d_i the divided-difference weights: the
    (s+1)-th divided difference of y' along the step, times h/(s+2). The stages have stage order
    s, so err = h^(s+2)·y^(s+2)/(s+2)! + O(h^(s+3)), the first Taylor term that a method of order
    s + 1 leaves out. It is computed from values the step needs anyway (f(y0) and f(y1) are
    shared with the neighbouring steps), vanishes on polynomial solutions of degree ≤ s + 1, and
    for s ≥ 2 over-estimates the local error O(h^(2s+1)) of the Gauss method itself as h → 0:
    the controller errs on the side of accuracy. (For s = 1 both are O(h³); on y' = λy the
    estimate is 4× the midpoint rule's local error.) `error_order` is s + 2.

    **Failure.** A step whose residual is not below the tolerance within `root_find_max_steps`
    iterations, or is not finite, is never accepted: its error estimate is +∞, so an adaptive
    controller rejects it and shrinks the step; under a constant step size the solve stops
    with `RESULTS.nonlinear_divergence`. The solver state keeps the largest relative
    residual of the accepted steps (`max_residual`).

    **Dense output:** cubic Hermite from y0, y1, f(y0), f(y1). Steps should land on the
    times where conservation is checked: an interpolated state does not conserve quadratic
    invariants.

    **Reference:** Butcher 1964 (Gauss–Legendre collocation); Cooper 1987 and Hairer, Lubich &
    Wanner, GNI §IV.2 (conservation of quadratic invariants); Hairer & Wanner, Solving ODEs II,
    §IV.8 (Newton on the stacked stages).
    """

    stages: int = eqx.field(static=True, default=2)
    newton_tol: float = 1e-13
    root_find_max_steps: int = eqx.field(static=True, default=10)
    dense_max_size: int = eqx.field(static=True, default=256)
    gmres_restart: int = eqx.field(static=True, default=8)
    gmres_max_cycles: int = eqx.field(static=True, default=8)

    term_structure: ClassVar = dfx.AbstractTerm
    interpolation_cls: ClassVar = dfx.ThirdOrderHermitePolynomialInterpolation

    def __check_init__(self):
        if self.stages not in (1, 2, 3):
            raise ValueError(f"stages must be 1, 2 or 3, got {self.stages}")

    @property
    def root_finder(self):
        """The root finder for p > `dense_max_size`, as a template: its tolerance is set in
        each step from `newton_tol` and the step's scale."""
        return self._root_finder(0.0, dense=False)

    def _root_finder(self, atol, *, dense: bool):
        if dense:
            return optx.Chord(rtol=0.0, atol=atol, norm=optx.max_norm, linear_solver=lx.LU())
        gmres = lx.GMRES(
            rtol=1e-8,
            atol=0.1 * atol,
            restart=self.gmres_restart,
            max_steps=self.gmres_max_cycles,
        )
        return optx.Newton(rtol=0.0, atol=atol, norm=optx.max_norm, linear_solver=gmres)

    def order(self, terms):
        return 2 * self.stages

    def error_order(self, terms):
        return self.stages + 2

    def init(self, terms, t0, t1, y0, args):
        return terms.vf(t0, y0, args), jnp.zeros((), jnp.result_type(float))

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        c, A, b = (jnp.asarray(a) for a in gauss_legendre_tableau(self.stages))
        nodes = np.concatenate([[0.0], gauss_legendre_tableau(self.stages)[0], [1.0]])
        d = jnp.asarray(_divided_difference_weights(nodes) / (self.stages + 2))
        flat0, unravel = jax.flatten_util.ravel_pytree(y0)
        h = t1 - t0

        def f(t, flat):
            return jax.flatten_util.ravel_pytree(terms.vf(t, unravel(flat), args))[0]

        f_prev, max_residual = solver_state
        f0 = jax.lax.cond(
            made_jump,
            lambda: f(t0, flat0),
            lambda: jax.flatten_util.ravel_pytree(f_prev)[0],
        )

        def stage_fields(Z):
            return jnp.stack([f(t0 + c[i] * h, flat0 + Z[i]) for i in range(self.stages)])

        def residual_fn(Z, _):
            return Z - h * (A @ stage_fields(Z))

        tiny = jnp.finfo(flat0.dtype).tiny
        scale = jnp.maximum(jnp.maximum(jnp.max(jnp.abs(flat0)), jnp.max(jnp.abs(h * f0))), tiny)
        Z0 = (c * h)[:, None] * f0[None, :]
        dense = flat0.size <= self.dense_max_size
        sol = optx.root_find(
            residual_fn,
            self._root_finder(self.newton_tol * scale, dense=dense),
            Z0,
            throw=False,
            max_steps=self.root_find_max_steps,
        )
        Z = sol.value
        F = stage_fields(Z)
        residual = jnp.max(jnp.abs(Z - h * (A @ F))) / scale
        converged = residual <= self.newton_tol  # False for NaN

        y1 = jnp.where(converged, flat0 + h * (b @ F), flat0)
        f1 = jnp.where(converged, f(t1, y1), f0)
        err = h * (d[0] * f0 + d[1:-1] @ F + d[-1] * f1)
        err = jnp.where(converged, err, jnp.inf)
        jax.debug.callback(_note_step, t0, h, residual, converged)

        max_residual = jnp.where(converged, jnp.maximum(max_residual, residual), max_residual)
        dense_info = dict(y0=y0, y1=unravel(y1), k0=unravel(h * f0), k1=unravel(h * f1))
        result = dfx.RESULTS.where(
            converged, dfx.RESULTS.successful, dfx.RESULTS.nonlinear_divergence
        )
        return unravel(y1), unravel(err), dense_info, (unravel(f1), max_residual), result


def max_newton_residual(solver, solver_state) -> float | None:
    """The largest relative Newton residual of the accepted steps so far, from a
    Gauss–Legendre solver's state; None for other solvers."""
    if not isinstance(solver, GaussLegendre) or solver_state is None:
        return None
    return float(solver_state[1])
