"""The generalised Sinkhorn algorithm for f-divergence-regularised optimal transport.

OT_{ε,f}(a, b) = min_{π ∈ Π(a,b)} Σ c_ij π_ij + ε Σ a_i b_j f(π_ij / (a_i b_j)), solved in the
dual by alternating generalised c-transforms in the log domain,
u_i = −ε Γ_b((v − c_i·)/ε), v_j = −ε Γ_a((u − c_·j)/ε), with π_ij = a_i b_j (f*)′((u_i + v_j −
c_ij)/ε) (Terjék & González-Sánchez, AISTATS 2022, arXiv 2105.14337, Alg. 1).
"""

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ..divergences import AbstractDivergence, get
from ..divergences._generators import KL
from ._inputs import (
    check_cost,
    check_eps,
    check_eps_for_cost,
    check_init,
    check_limits,
    check_schedule,
    check_weights,
)
from ._loops import c_transform, kl_loop, newton_loop
from ._primal_dual import primal_dual_loop


class SinkhornNotConverged(RuntimeError):
    """The generalised Sinkhorn iterations stopped at `max_iters` with a marginal error above
    `tol`. The message names ε, the divergence and the error reached.

    **Attributes:** `eps`, `divergence` (its name), `marginal_error` (the L1 error reached,
    rows + columns), `iterations`."""

    def __init__(
        self, message: str, eps: float, divergence: str, marginal_error: float, iterations: int
    ):
        super().__init__(message)
        self.eps = eps
        self.divergence = divergence
        self.marginal_error = marginal_error
        self.iterations = iterations


class SinkhornResult(eqx.Module):
    """The solution of an f-regularised optimal-transport problem and its certificates.

    **Fields:**
    - `plan`: `(n, m)` the coupling π_ij = a_i b_j (f*)′((u_i + v_j − c_ij)/ε).
    - `u`, `v`: `(n,)`, `(m,)` the dual potentials.
    - `primal`: Σ c π + ε Σ a b f(π/(a b)), from the plan.
    - `dual`: Σ a u + Σ b v − ε Σ a b f*((u + v − c)/ε): OT_{ε,f}. This is the field to
      differentiate: its gradient in the cost is the plan (envelope theorem), in a and b the
      potentials' terms; the other fields carry no gradient.
    - `gap`: primal − dual (≥ 0 up to round-off; 0 at the optimum).
    - `marginal_error`: `(2,)` the L1 errors ‖π1 − a‖₁ and ‖πᵀ1 − b‖₁.
    - `iterations`: c-transform pairs done (all ε stages together).
    """

    plan: Float[Array, "n m"]
    u: Float[Array, " n"]
    v: Float[Array, " m"]
    primal: Float[Array, ""]
    dual: Float[Array, ""]
    gap: Float[Array, ""]
    marginal_error: Float[Array, "2"]
    iterations: Int[Array, ""]


def _arguments(u, v, cost, eps):
    return (u[:, None] + v[None, :] - cost) / eps


@eqx.filter_jit
def _iterate(div, a, b, cost, eps, u, v, tol, max_iters, eps_from=None):
    """Iterate from (u, v) until the L1 marginal error of the plan is ≤ tol (one marginal is
    exact after each iteration: the columns for KL's Sinkhorn, the rows for the Newton
    iterations), or max_iters iterations (KL: 2 max_iters). `eps_from`: the ε at which
    (u, v) were solved (the previous stage of a schedule; default ε), whose plan starts the
    primal–dual steps. Returns (u, v, iterations, error)."""
    if isinstance(div, KL):
        # Sinkhorn, fastest per iteration; where it stops at max_iters (small ε), Newton
        # steps take over for at most as many iterations again
        u, v, done, error = kl_loop(a, b, cost, eps, u, v, tol, max_iters)
        return jax.lax.cond(
            error > tol,
            lambda: _more(newton_loop(div, a, b, cost, eps, u, v, tol, max_iters), done),
            lambda: (u, v, done, error),
        )
    eps_from = eps if eps_from is None else eps_from
    # the plan of (u, v) at eps_from, made feasible there by the rows' c-transform
    u = c_transform(div, v, cost, eps_from, b, u)
    weights = a[:, None] * b[None, :]
    s = (u[:, None] + v[None, :] - cost) / eps_from
    ratio = jnp.where(weights > 0, div.f_conj_grad(s), 0.0)
    u, v, steps = primal_dual_loop(div, a, b, cost, eps, u, v, ratio, tol, max_iters)
    return _more(newton_loop(div, a, b, cost, eps, u, v, tol, max_iters - steps), steps)


def _more(state, done):
    u, v, it, error = state
    return u, v, it + done, error


@eqx.filter_jit
def _certify(div, a, b, cost, eps, u, v, iterations):
    """The result from potentials: plan, primal, dual (differentiable in a, b, cost, ε with
    the potentials held: the envelope theorem), gap and marginal errors."""
    u, v = jax.lax.stop_gradient(u), jax.lax.stop_gradient(v)
    s = _arguments(u, v, cost, eps)
    weights = a[:, None] * b[None, :]
    conj = jnp.where(weights > 0, div.f_conj(s), 0.0)
    dual = jnp.dot(a, u) + jnp.dot(b, v) - eps * jnp.sum(weights * conj)
    a0, b0, c0, e0 = (jax.lax.stop_gradient(x) for x in (a, b, cost, eps))
    s0 = jax.lax.stop_gradient(s)
    ratio = div.f_conj_grad(s0)
    # a zero weight's potential is free, so (f*)′ may be inf there (past f′(∞)): 0 · inf
    # was a NaN entry in a plan reported as converged (a = (1, 0), b = (0, 1), reverse KL)
    plan = jnp.where(weights > 0, weights * ratio, 0.0)
    plan = jax.lax.stop_gradient(plan)
    penalty = jnp.where(a0[:, None] * b0[None, :] > 0, div.f(ratio), 0.0)
    primal = jnp.sum(c0 * plan) + e0 * jnp.sum(a0[:, None] * b0[None, :] * penalty)
    errors = jnp.stack([jnp.sum(jnp.abs(plan.sum(1) - a0)), jnp.sum(jnp.abs(plan.sum(0) - b0))])
    return SinkhornResult(
        plan=plan,
        u=u,
        v=v,
        primal=primal,
        dual=dual,
        gap=primal - jax.lax.stop_gradient(dual),
        marginal_error=errors,
        iterations=iterations,
    )


def _message(name, eps, tol, max_iters, error=None, schedule=True):
    """`schedule`: whether the caller takes `eps_schedule` (`particle_flow` does not)."""
    reached = "above tol" if error is None else f"{error:.3g} > tol={tol:g}"
    return (
        f"sinkhorn did not converge: divergence={name!r}, eps={eps}, marginal error {reached} "
        f"after max_iters={max_iters} iterations; raise max_iters"
        + (
            ", use a larger eps, or pass eps_schedule (decreasing eps values, each "
            "warm-starting the next)"
            if schedule
            else " or use a larger eps"
        )
    )


def sinkhorn(
    a: Float[Array, " n"],
    b: Float[Array, " m"],
    cost: Float[Array, "n m"],
    eps: float,
    divergence: str | AbstractDivergence = "kl",
    *,
    tol: float = 1e-12,
    max_iters: int = 100_000,
    init: tuple[Array, Array] | None = None,
    eps_schedule: Sequence[float] | None = None,
) -> SinkhornResult:
    """Solve OT_{ε,f}(a, b) = min_{π ∈ Π(a,b)} Σ c_ij π_ij + ε Σ a_i b_j f(π_ij/(a_i b_j)) by the
    generalised Sinkhorn algorithm, in float64.

    The c-transforms are u_i = −ε Γ_b((v − c_i·)/ε) and v_j = −ε Γ_a((u − c_·j)/ε) (see
    `flows.divergences.gamma`). KL alternates them (log-domain Sinkhorn) until ‖π1 − a‖₁ ≤
    tol, the columns being exact after each pair. Every other f takes primal–dual Newton
    steps first, the plan's ratios π/(ab) being variables of their own (started from the plan
    of the previous ε stage: no step on the dual alone can start from potentials that put
    entries past the pole of (f*)′), then damped Newton steps on the semi-dual v ↦ D(u(v), v)
    (as does KL where Sinkhorn stops at `max_iters`), each kept when it raises the dual or
    lowers the error and otherwise followed by a Sinkhorn pair, until ‖πᵀ1 − b‖₁ ≤ tol with
    exact rows; both solve their Newton systems by conjugate gradients. The alternating
    scheme alone needs thousands of pairs at ε = 1e-2 for the f with f′(∞) < ∞ (reverse KL,
    Neyman, Hellinger, JS, triangular).
    Works under `jit`, `vmap` and `grad`: differentiate `result.dual`, whose gradient in the
    cost is the plan (the envelope theorem), so that ∇_{x_i} OT = Σ_j π_ij ∇_x c(x_i, y_j).

    **Arguments:**
    - `a`: `(n,)` float64 weights ≥ 0 summing to 1; `b`: `(m,)` likewise.
    - `cost`: `(n, m)` float64 finite cost matrix, e.g. ½|x_i − y_j|².
    - `eps`: ε > 0, the regularisation strength (units of the cost).
    - `divergence`: a name in `flows.divergences.DIVERGENCES` other than "tv", or a generator.
    - `tol`: the L1 marginal error to reach.
    - `max_iters`: the most iterations (Sinkhorn pairs or Newton steps, primal–dual and
      dual together) per ε stage; KL: as many Sinkhorn pairs, then as many Newton
      iterations.
    - `init`: a pair of finite potentials `(u (n,), v (m,))` to warm-start from (default
      zeros).
    - `eps_schedule`: ε-scaling: a sequence of strictly decreasing values above `eps`, each
      solved (to `tol`, or `max_iters`) and warm-starting the next, before `eps` itself; from
      a warm start the Newton steps converge quadratically (e.g. [1, 0.3, 0.1, 0.03] before 1e-2).

    **Returns:** a `SinkhornResult` (plan, u, v, primal, dual, gap, marginal_error,
    iterations).

    **Raises:** `ValueError` naming the argument: weights negative or not summing to 1, a cost
    with NaN or of the wrong shape, ε ≤ 0 or below the float64 resolution of the cost (max|c|/ε >
    1e15), tol not > 0, max_iters not a positive integer, `init` not a pair of finite
    potentials of shapes (n,), (m,), `eps_schedule` not a sequence decreasing strictly to
    above ε, an unknown divergence (listing the known ones) or "tv", float32 input.
    `SinkhornNotConverged` when the final stage stops at `max_iters` above `tol` (under
    `jit`/`vmap`/`grad`, an `equinox` runtime error with the same message, without the
    number reached).

    **Reference:** Terjék & González-Sánchez, "Optimal transport with f-divergence
    regularization and generalized Sinkhorn algorithm", AISTATS 2022 (arXiv 2105.14337),
    Alg. 1 and Thm 3; the dual Newton steps as in Brauer, Clason, Lorenz & Wirth, "A
    Sinkhorn–Newton method for entropic optimal transport" (arXiv 1710.06635); the
    primal–dual steps as in interior-point methods (Nocedal & Wright, Numerical
    Optimization, 2nd ed., Sec. 19.1)."""
    div = get(divergence, legendre=True)
    a = check_weights("a", a)
    b = check_weights("b", b)
    cost = check_cost(cost, a.shape[0], b.shape[0])
    eps = check_eps(eps)
    check_eps_for_cost(eps, cost)
    tol, max_iters = check_limits(tol, max_iters)
    stages = check_schedule(eps_schedule, eps)
    if init is None:
        u, v = jnp.zeros(a.shape), jnp.zeros(b.shape)
    else:
        u, v = check_init(init, a, b)
    held = [jax.lax.stop_gradient(x) for x in (a, b, cost)]
    iterations = jnp.asarray(0)
    # ε, tol and max_iters as arrays: Python numbers would be static to `filter_jit`, and
    # each new ε (every stage of a schedule) would compile the loop again
    limits = jnp.asarray(tol, dtype=float), jnp.asarray(max_iters)
    previous = None
    for stage_eps in [*stages, eps]:
        stage_eps = jax.lax.stop_gradient(jnp.asarray(stage_eps, dtype=float))
        # the first stage starts from its own ε: an array like the later stages' previous ε,
        # so that every stage runs one compiled program (None compiled a second)
        previous = stage_eps if previous is None else previous
        u, v, done, error = _iterate(div, *held, stage_eps, u, v, *limits, previous)
        iterations = iterations + done
        previous = stage_eps
    result = _certify(div, a, b, cost, jnp.asarray(eps, dtype=float), u, v, iterations)
    concrete = not any(isinstance(x, jax.core.Tracer) for x in (error, eps))
    if concrete:
        if not float(error) <= tol:
            eps_text = f"{float(eps):g}"
            raise SinkhornNotConverged(
                _message(div.name, eps_text, tol, max_iters, float(error)),
                float(eps),
                div.name,
                float(error),
                int(iterations),
            )
        return result
    eps_text = f"{float(eps):g}" if not isinstance(eps, jax.core.Tracer) else "(traced)"
    plan = eqx.error_if(result.plan, ~(error <= tol), _message(div.name, eps_text, tol, max_iters))
    return eqx.tree_at(lambda r: r.plan, result, plan)
