"""The iterations of the generalised Sinkhorn algorithm, each inside one `lax.while_loop`.

- KL: the log-domain Sinkhorn loop on scaled potentials u/ε, v/ε with the kernels
  log b_j − c_ij/ε and log a_i − c_ij/ε formed once, so that an iteration is two
  logsumexps, each one pass over the matrix: shifted by the previous potential rather than
  by the row maximum (the sums are then the plan's marginals over the weights, near 1); the
  row error of the plan is those sums' distance from 1, for free.
- Every other f: alternating c-transforms converge slowly for the f with f′(∞) < ∞ (the
  coupling between the two blocks of potentials, a_i b_j (f*)″, is concentrated near the
  pole) and each c-transform is a Newton solve of Γ per row. Each iteration therefore tries
  a Newton step on the semi-dual v ↦ D(u(v), v) first, u(v) being the row c-transform: its
  gradient is the column residual b − πᵀ1 and its Hessian −S/ε, S = diag(Wᵀ1) − Wᵀ diag(W1)⁻¹ W
  with W_ij = a_i b_j (f*)″((u_i + v_j − c_ij)/ε) (the Schur complement of the dual's
  Hessian). The step is kept when it lowers the L1 column error; otherwise the iteration is
  a plain Sinkhorn pair. Near the solution the Newton steps converge quadratically. (The
  primal–dual steps of `_primal_dual.py` come first and leave these steps the
  certification, 0 steps on the benchmark problems, or the cases they cannot move.)

Reference: Terjék & González-Sánchez, AISTATS 2022 (arXiv 2105.14337), Alg. 1; the Newton
step on the dual as in Brauer, Clason, Lorenz & Wirth, "A Sinkhorn–Newton method for entropic
optimal transport" (arXiv 1710.06635), Sec. 3.
"""

import jax
import jax.numpy as jnp
import lineax as lx

from ..divergences._gamma import newton_gamma

#: The Newton system by preconditioned conjugate gradients (matrix-free: XLA's dense LU of a
#: 500 × 500 matrix took 0.1–0.4 s on the CPU, CG 6 ms); inexact steps are fine, the column
#: error decides whether a step is kept. The relative tolerance is the column error itself
#: (Eisenstat–Walker's forcing term), within [RTOL, 0.5]: far from the solution the steps
#: are damped anyway (500 + 500, ε = 0.01: 15–30 % fewer CG steps for every f, Neyman χ² 105
#: Newton iterations at ε = 0.01 instead of 122, triangular 49 instead of 70).
RTOL, ATOL, CG_STEPS = 1e-8, 1e-15, 60
DAMPING = 1e-3  # the Levenberg–Marquardt λ a solve (each ε stage) starts from


def _log_kernel(cost, eps, weights):
    """log w_j − c_ij/ε, with −∞ where w_j = 0."""
    logw = jnp.where(weights > 0, jnp.log(jnp.where(weights > 0, weights, 1.0)), -jnp.inf)
    return logw[None, :] - cost / eps


def _neg_lse(kernel, scaled):
    """−log Σ_j exp(kernel_ij + scaled_j), row by row (the scaled KL c-transform)."""
    h = kernel + scaled[None, :]
    top = jnp.max(h, axis=1)
    return -(top + jnp.log(jnp.sum(jnp.exp(h - top[:, None]), axis=1)))


#: The range of the shifted sums Σ_j exp(kernel_ij + scaled_j + previous_i) taken as they
#: are; outside it (far from the solution: a sum underflowed or overflowed) the rows'
#: logsumexp is taken with its max shift instead.
_SAFE = (1e-200, 1e200)


def _neg_lse_from(kernel, scaled, previous):
    """(−log Σ_j exp(kernel_ij + scaled_j) row by row, Σ_j exp(kernel_ij + scaled_j +
    previous_i)): the logsumexp shifted by the previous scaled potential instead of its row
    maximum (one pass over the matrix instead of two; near the solution the sums are the
    plan's row sums over a_i, close to 1). Rows whose sum leaves `_SAFE` send the whole
    update to the max-shifted logsumexp."""
    sums = jnp.sum(jnp.exp(kernel + scaled[None, :] + previous[:, None]), axis=1)
    safe = jnp.all((sums > _SAFE[0]) & (sums < _SAFE[1]))
    return jax.lax.cond(
        safe,
        lambda: (previous - jnp.log(sums), sums),
        lambda: _checked(_neg_lse(kernel, scaled), previous),
    )


def _checked(new, previous):
    return new, jnp.exp(previous - new)


def kl_loop(a, b, cost, eps, u, v, tol, max_iters):
    """Log-domain Sinkhorn until the row error of (u, v) (exact columns) is ≤ tol."""
    rows, cols = _log_kernel(cost, eps, b), _log_kernel(cost.T, eps, a)

    def cond(state):
        _, _, it, err = state
        return (err > tol) & (it < max_iters)

    def body(state):
        f, g, it, _ = state
        f_new, sums = _neg_lse_from(rows, g, f)
        # the plan of (f, g) has row sums a_i e^{f − f_new}: its row error, for free
        err = jnp.sum(a * jnp.abs(sums - 1.0))
        g_new, _ = _neg_lse_from(cols, f_new, g)
        return f_new, g_new, it + 1, err

    f = u / eps
    state = (f, _neg_lse(cols, f), jnp.asarray(0), jnp.asarray(jnp.inf))
    f, g, it, err = jax.lax.while_loop(cond, body, state)
    return f * eps, g * eps, it, err


def c_transform(div, potential, cost, eps, weights, previous):
    """−ε Γ_w((potential − cost)/ε) row by row of `cost`, each Γ a bracketed Newton solve
    (χ² too: from a warm start it beats sorting each row) warm-started from `previous`."""
    h = (potential[None, :] - cost) / eps
    gamma, _ = jax.vmap(lambda row, guess: newton_gamma(div, row, weights, guess))(
        h, -previous / eps
    )
    return -eps * gamma


def _evaluate(div, a, b, cost, eps, u, v):
    """(‖πᵀ1 − b‖₁, the dual objective Σ a u + Σ b v − ε Σ a b f*(s), the plan a_i b_j (f*)′(s_ij),
    W = a_i b_j (f*)″(s_ij)) at s = (u + v − c)/ε: one pass of f*, (f*)′, (f*)″ together
    (one transcendental per entry where they share it), whose plan and W the next Newton step
    takes as they are."""
    s = (u[:, None] + v[None, :] - cost) / eps
    ab = a[:, None] * b[None, :]
    used = ab > 0
    value, grad, hess = div.f_conj_value_grad_hess(s)
    plan = jnp.where(used, ab * grad, 0.0)
    conj = jnp.sum(jnp.where(used, ab * value, 0.0))
    dual = jnp.dot(a, u) + jnp.dot(b, v) - eps * conj
    return jnp.sum(jnp.abs(plan.sum(0) - b)), dual, plan, jnp.where(used, ab * hess, 0.0)


def inverse_rows(w):
    """1/(W1), with 0 for an empty row."""
    row = w.sum(1)
    return jnp.where(row > 0, 1.0 / jnp.where(row > 0, row, 1.0), 0.0)


def schur_solve(w, rhs, error, damping=0.0):
    """(y, 1/(W1)): y = (S + λ diag S)⁻¹ rhs by Jacobi-preconditioned CG, S = diag(Wᵀ1) −
    Wᵀ diag(W1)⁻¹ W (the Schur complement of the Hessian [diag(W1) W; Wᵀ diag(Wᵀ1)] of the
    dual in (u, v), eliminating u), made definite along its null vector 1 (a shift of v that
    u undoes) by adding mean(diag S) on 11ᵀ/m. CG's relative tolerance is `error` within
    [RTOL, 0.5] (Eisenstat–Walker). y = 0 where the solve is not finite."""
    inverse = inverse_rows(w)
    diagonal = w.sum(0)
    shift = jnp.mean(diagonal) / rhs.shape[0]
    scale = (1.0 + damping) * diagonal

    def schur(x):  # (S + λ diag S + mean(diag S) 11ᵀ/m) x, two passes over W
        return scale * x - w.T @ (inverse * (w @ x)) + shift * jnp.sum(x)

    positive = jnp.where(scale > 0, scale, 1.0)
    tag = lx.positive_semidefinite_tag
    operator = lx.FunctionLinearOperator(schur, rhs, tag)
    jacobi = lx.FunctionLinearOperator(lambda x: x / positive, rhs, tag)
    cg = lx.CG(rtol=jnp.clip(error, RTOL, 0.5), atol=ATOL, max_steps=CG_STEPS)
    solution = lx.linear_solve(operator, rhs, cg, options={"preconditioner": jacobi}, throw=False)
    y = solution.value
    return jnp.where(jnp.all(jnp.isfinite(y)), y, 0.0), inverse


def _newton_step(b, eps, u, v, plan, w, damping=0.0, error=0.0):
    """(v + δ, u − Wδ/(W1)): δ = ε (S + λ diag S)⁻¹ (b − πᵀ1) (`schur_solve`), S the
    semi-dual's Hessian (× −ε); the second part is the first-order change of the rows'
    c-transform (the implicit derivative of Γ), the warm start of the next one. `plan` and
    `w` are those of (u, v) (`_evaluate`), `error` their column error."""
    y, inverse = schur_solve(w, b - plan.sum(0), error, damping)
    step = eps * y
    return v + step, u - inverse * (w @ step)


def newton_loop(div, a, b, cost, eps, u, v, tol, max_iters):
    """Damped (Levenberg–Marquardt) Newton steps on the semi-dual until the column error of
    (u, v) (exact rows) is ≤ tol. A Newton step is kept if it raises the (concave) dual or,
    near the optimum where the dual's changes fall below round-off, lowers the error;
    otherwise the next iteration is a Sinkhorn pair. The damping λ (S + λ diag S) is divided
    by 3 after a kept step and multiplied by 4 after a rejected one. Each iteration is one
    candidate v (Newton or the columns' c-transform), one rows' c-transform and one pass of
    f*, (f*)′, (f*)″ at the candidate (its error, dual, plan and W: the next Newton step's
    system), so that the loop compiles one copy of each."""
    costT = cost.T

    def cond(state):
        return (state[3] > tol) & (state[2] < max_iters)

    def body(state):
        u, v, it, err, value, damping, newton, plan, w = state
        v_new, guess = jax.lax.cond(
            newton,
            lambda: _newton_step(b, eps, u, v, plan, w, damping, err),
            lambda: (c_transform(div, u, costT, eps, a, v), u),
        )
        u_new = c_transform(div, v_new, cost, eps, b, guess)
        err_new, value_new, plan_new, w_new = _evaluate(div, a, b, cost, eps, u_new, v_new)
        better = ((value_new > value) | (err_new < err)) & jnp.isfinite(value_new)
        kept = ~newton | better
        pick = lambda new, old: jnp.where(kept, new, old)  # noqa: E731
        damping = jnp.where(newton, jnp.where(better, damping / 3, damping * 4), damping)
        return (
            pick(u_new, u),
            pick(v_new, v),
            it + 1,
            pick(err_new, err),
            pick(value_new, value),
            damping,
            ~newton | better,
            pick(plan_new, plan),
            pick(w_new, w),
        )

    u = c_transform(div, v, cost, eps, b, u)
    err, value, plan, w = _evaluate(div, a, b, cost, eps, u, v)
    start = (jnp.asarray(0), err, value, jnp.asarray(DAMPING), jnp.asarray(True), plan, w)
    u, v, it, err, *_ = jax.lax.while_loop(cond, body, (u, v, *start))
    return u, v, it, err
