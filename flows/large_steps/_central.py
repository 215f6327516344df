"""The central flow (Cohen, Damian, Talwalkar, Kolter & Lee 2025): the time-averaged path of
gradient descent at the edge of stability, as an ODE with located events.

While every eigenvalue of H is below 2/η it is the gradient flow. With m eigenvalues at 2/η
(tracked from the event where each reached it) the flow is w' = −[∇L + ½∇⟨H, Σ⟩], Σ = UXUᵀ
on their eigenvectors U, X ⪰ 0 from the complementarity problem (`_complementarity`), so that
they stay at 2/η while X holds them; an eigenvalue joins where λ_(m+1) reaches 2/η and one
leaves where the X that would hold all m loses positive definiteness. Σ is the covariance of
GD's oscillation: the predicted time average of GD's loss is L + tr Σ/η.
"""

import concurrent.futures
import itertools
from collections.abc import Callable
from typing import Any

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from .._checks import check_finite, check_flag, check_observables, check_positive
from .._failures import DTMIN_RELATIVE, MaxStepsReached
from .._flow import Trajectory, undefined_observables
from .._integrate import _SECOND_THREAD
from .._progress import progress_bar
from .._settings import SolveSettings, resolve_flow_inputs
from .._solver._solve import save_state, solve_span
from .._solver._solvers import make_solver
from .._solver._structure import ByStructure
from .._stats import SolveStats
from ._complementarity import (
    RESIDUAL_TOL,
    ComplementarityError,
    pairs,
    solve_qp,
    svec_scale,
)
from ._hessian import flat_function, flat_loss, third
from ._sharpness import check_k, edge_eigenpairs, top_eigenpairs


class _Bracket(optx.Bisection):
    """Bisection that stops once the bracket is within rtol·|t| + atol, whatever |f| is
    there. optimistix's also waits for |f| < atol, out of reach where the event function
    jumps at its root or is steep against float64's spacing of t: on the digits problem
    (classes 0–2, η = 0.5, k = 3) the event at t = 114.013 ran the bisection out of its 256
    steps (`nonlinear_max_steps_reached`), and the central flow stopped as "solver failed"."""

    def terminate(self, fn, y, args, options, state, tags):
        del fn, args, options, tags
        scale = self.atol + self.rtol * jnp.abs(y)
        return jnp.abs(state.lower - state.upper) < scale, optx.RESULTS.successful


# flip=False: the event crosses 0 upwards (`direction=True`), so its root find need not
# evaluate it at both ends to learn which way it goes (two more copies of the event, and of
# its Lanczos, in the solve program)
_ROOT = _Bracket(rtol=1e-13, atol=1e-13, flip=False)
_MAX_EVENTS = 1000
# Lanczos inside the field: a residual of 1e-10·S (the eigenvectors to 1e-10·S/gap), at most
# 60 products per evaluation, warm-started from the top eigenvectors at the last save; on the
# edge the field's own (`tracked`: the top k converged) tests its residual every _CHECK products.
_TOL, _ITERS, _CHECK = 1e-10, 60, 4
# The event's Lanczos seeks λ_(m+1) only to its sign where, converged to a relative residual
# of _LOOSE, it is below 2/η·(1 − _MARGIN) by more than its residual (`band_lanczos_top`'s
# `below`): far from the join only the event's sign is read; within the margin, where its
# root is found, it is solved to _TOL as before.
_MARGIN, _LOOSE = 1e-3, 1e-3
_FAILED = []  # the last failed complementarity solve, (t, residual), read by central_flow
# The products of each call, by its id: [field evaluations, Hessian-vector products,
# third-derivative products, complementarity solves], added by one host callback per
# evaluation of the field, the event or a save (the products are counted where they are made:
# Lanczos stops at a residual, so its count is known only inside the program).
_COUNTS: dict[int, np.ndarray] = {}
_IDS = itertools.count()
_SPANS = ByStructure()  # the solve programs compiled ahead (on the second thread) in this process


def _add_counts(cid, counts):
    _COUNTS[int(cid)] += np.asarray(counts, np.int64)


def _tally(cid, evals, hvps, thirds, solves):
    counts = jnp.stack([jnp.asarray(c, jnp.int32) for c in (evals, hvps, thirds, solves)])
    jax.debug.callback(_add_counts, cid, counts)


def _host_qp(P, q, g_norm, m, t):
    """The complementarity problem on the leading m×m block (host side, by Clarabel)."""
    n, m = len(q), int(m)
    x = np.zeros(n)
    if m == 0:
        return x
    b = m * (m + 1) // 2
    x[:b], res = solve_qp(np.asarray(P)[:b, :b], np.asarray(q)[:b], float(g_norm))
    if not res <= RESIDUAL_TOL:
        _FAILED[:] = [(float(t), res)]
        raise ComplementarityError(
            f"the complementarity problem failed at t={float(t):.6g}: residual {res:.3g} > "
            f"{RESIDUAL_TOL:g}",
            float(t),
            res,
        )
    return x


class _CentralField(eqx.Module):
    """w' on the flat parameters; `args = (m, U0, start)`: m the eigenvalues tracked at the
    edge (0: the gradient flow), U0 (k+1, p) the warm start of Lanczos (the top eigenvectors
    at the last save or event), `start` the event's value at the span's start (`event`)."""

    loss: Callable = eqx.field(static=True)
    static: Any
    spec: Any = eqx.field(static=True)
    eta: jax.Array
    k: int = eqx.field(static=True)
    cid: jax.Array  # the call's id in `_COUNTS` (traced: every call shares the programs)
    count: bool = eqx.field(static=True, default=True)  # False: no count callbacks
    observables: tuple = eqx.field(static=True, default=())  # ((name, fn(params)), ...)
    predicted: tuple = eqx.field(static=True, default=())  # ((name, g(params)), ...)
    symmetric_jacobian = False

    def f(self):
        return flat_function(self.loss, self.spec, self.static)

    def eig(self, w, U0, below=None):
        """The top k+1 eigenpairs of H(w) and the Hessian-vector products taken:
        (values (k+1,), vectors (k+1, p), products): Lanczos's, one for its scale and k+1
        for the Rayleigh quotients (`top_eigenpairs`, `below` as there: the event's)."""
        top = top_eigenpairs(self.f(), w, self.k + 1, U0, tol=_TOL, max_iters=_ITERS,
                             below=below)  # fmt: skip
        return top.values, top.vectors, jnp.asarray(top.products + self.k + 2, jnp.int32)

    def tracked(self, w, U0):
        """The top k + 1 eigenvectors of H(w) (k+1, p) on the edge, for the field, and the
        Hessian-vector products taken: `edge_eigenpairs` from U0 as it is, H scaled by 2/η
        (where the tracked eigenvalues are), until the top k (those the field reads) have a
        residual of 1e-10·2/η: their vectors are then within 1e-10·(2/η)/gap of H's, below
        what the solver's tolerance resolves. The (k+1)-th stays in the block so that the
        top k are told from it as an eigenvalue comes up to join (a block of k alone put
        the join of `test_central_k`'s toy at t = 0.772 instead of 0.742)."""
        _, U, n = edge_eigenpairs(self.f(), w, self.k, U0, 2.0 / self.eta,
                                  tol=_TOL, max_iters=_ITERS, check_every=_CHECK)  # fmt: skip
        return U, jnp.asarray(n, jnp.int32)

    def tally(self, evals, hvps, thirds, solves):
        """Add to this call's counts (one host callback), when counting."""
        if self.count:
            _tally(self.cid, evals, hvps, thirds, solves)

    @property
    def thirds(self) -> int:
        """Third-derivative products per solve: one per pair i ≤ j of the k tracked."""
        return self.k * (self.k + 1) // 2

    def block(self, w, U, m):
        """(g, J, P, q) of the complementarity problem on the top m eigenvectors (svec
        order, rows of the pairs outside the m×m block zero): J (n, p) the svec-scaled
        ∇³L[u_i, u_j], P = ½JJᵀ, q = Jg."""
        f = self.f()
        g = jax.grad(f)(w)
        pp = pairs(self.k)
        inside = jnp.asarray([max(i, j) for i, j in pp]) < m
        scale = jnp.asarray(svec_scale(self.k))
        J = jnp.stack([third(f, w, U[i], U[j]) for i, j in pp]) * scale[:, None]
        J = jnp.where(inside[:, None], J, 0.0)
        return g, J, 0.5 * J @ J.T, J @ g

    def solve(self, t, w, m, U0, eig=None):
        """(g, J, P, q, x, λ (k+1,), U, Hessian-vector products): x = svec(X) of the
        complementarity problem; `eig` the eigenpairs (λ, U, products) at w when already
        computed (then no products are counted here)."""
        lam, U, hvps = self.eig(w, U0) if eig is None else (*eig[:2], 0)
        g, J, P, q = self.block(w, U, m)
        return g, J, P, q, self.sigma(t, g, P, q, m), lam, U, hvps

    def sigma(self, t, g, P, q, m):
        """x = svec(X) of the complementarity problem (P, q) on the m-block."""
        if self.k == 1:
            # The closed form σ² = max(0, −q/P) (Cohen et al. 2025, §3), in the program:
            # no host callback, so the compiled flow can be kept in the compilation cache.
            return jnp.where(P[0] > 0, jnp.maximum(0.0, -q / jnp.where(P[0] > 0, P[0], 1.0)), 0.0)
        shape = jax.ShapeDtypeStruct(q.shape, q.dtype)
        return jax.pure_callback(
            _host_qp, shape, P, q, jnp.linalg.norm(g), m, t, vmap_method="sequential"
        )

    def __call__(self, t, w, args):
        m, U0 = args[:2]

        def on_edge(w):
            U, hvps = self.tracked(w, U0)
            g, J, P, q = self.block(w, U, m)
            return -(g + 0.5 * J.T @ self.sigma(t, g, P, q, m)), hvps

        def below(w):
            return -jax.grad(self.f())(w), jnp.asarray(0, jnp.int32)

        v, hvps = jax.lax.cond(m > 0, on_edge, below, w)
        edge = (m > 0).astype(jnp.int32)
        self.tally(1, hvps, edge * self.thirds, edge)
        return v

    def event(self, t, y, args, **kwargs):
        """Crosses 0 upwards where the phase ends: the larger of `join` and `leave`. At the
        span's start (diffrax's first call, whose `t` is its `t0`) the value the host
        computed there with the save's or the event's record (`_at`: the same point and m),
        so that the solve program holds the event twice (each step's and the root find's),
        not three times: a copy of Lanczos and of the block less to compile, and one
        evaluation less per span. Only its sign is read there (whether the first step may
        trigger)."""
        m, U0, start = args
        if t is kwargs.get("t0"):
            return start
        # λ_(m+1) (what `join` reads) only to its sign far below 2/η; the m tracked pairs
        # (what `leave` reads) to _TOL
        lam, U, hvps = self.eig(
            y, U0, (jnp.minimum(m, self.k), 2.0 / self.eta * (1 - _MARGIN), _LOOSE)
        )
        value = jnp.maximum(self.join(lam, m), self.leave(t, y, m, U0, (lam, U)))
        edge = (m > 0).astype(jnp.int32)
        self.tally(0, hvps, edge * self.thirds, edge)
        return value

    def join(self, lam, m):
        """λ_(m+1)η/2 − 1: reaches 0 where an eigenvalue joins the tracked set."""
        return jnp.take(lam, jnp.minimum(m, self.k)) * self.eta / 2 - 1.0

    def leave(self, t, y, m, U0, eig=None):
        """With m ≥ 1 tracked, λ_max(Z) − ‖P‖λ_min(X) on the m-block (Z = A + B[X], minus
        the rate of the block), scaled by 1/(‖g‖√(2‖P‖)): negative while X ≻ 0 holds all m
        at 2/η (Z = 0), positive once one is let go (X singular, Z ≠ 0); for m = 1 the
        cosine of ∇S and ∇L. −inf when m = 0."""

        def value(y):
            return self.leave_value(self.solve(t, y, m, U0, eig), m)

        return jax.lax.cond(m > 0, value, lambda y: jnp.asarray(-jnp.inf, y.dtype), y)

    def leave_value(self, solved, m):
        """`leave` for m ≥ 1 from the solved problem (a tuple of `solve`)."""
        g, _, P, q, x = solved[:5]
        inside = jnp.arange(self.k) < m
        mask = inside[:, None] & inside[None, :]
        X, Z = _smat(x, self.k), _smat(P @ x + q, self.k)
        big = 1.0 + jnp.sum(jnp.abs(X)) + jnp.sum(jnp.abs(Z))
        # outside the m-block a diagonal above (for X) or below (for Z) the block's
        X = jnp.where(mask, X, jnp.diag(jnp.where(inside, 0, big)))
        Z = jnp.where(mask, Z, jnp.diag(jnp.where(inside, 0, -big)))
        norm_p = jnp.maximum(jnp.linalg.norm(P, 2), 1e-300)
        scale = 1 / jnp.maximum(jnp.linalg.norm(g) * jnp.sqrt(2 * norm_p), 1e-300)
        return (jnp.linalg.eigvalsh(Z)[-1] - norm_p * jnp.linalg.eigvalsh(X)[0]) * scale

    def record(self, t, w, args):
        return self.report(w, args[0], self.solve(t, w, args[0], args[1]))

    def report(self, w, m, solved):
        """What a save records, from the solved problem (a tuple of `solve`)."""
        _, _, _, _, x, lam, U, hvps = solved
        # the block is computed at every save (its k(k+1)/2 products), X solved only on the edge
        self.tally(0, hvps, self.thirds, (m > 0).astype(jnp.int32))
        return _report(self, w, x, lam, U, m)


def _report(field, w, x, lam, U, m):
    """What a save records, at the weights w (p,) with x = svec(X), the eigenvalues λ and
    the vectors U (k+1, p) of Σ = UXUᵀ; `field` the field (its loss, η, k, user functions)."""
    X = _smat(x, field.k)
    trace = jnp.trace(X)
    loss = field.f()(w)
    user = {}
    if field.observables or field.predicted:
        params = eqx.combine(field.spec.unravel(w), field.static)
        user = {name: jnp.asarray(fn(params)) for name, fn in field.observables}
    for name, fn in field.predicted:
        g = flat_function(fn, field.spec, field.static)
        # g(w) + ½⟨∇²g(w), Σ⟩, Σ = UXUᵀ: ½Σ_ij X_ij ∇²g[u_i, u_j] (X is 0 off the block)
        curvature = sum(
            X[i, j] * (1.0 if i == j else 2.0) * _second(g, w, U[i], U[j])
            for i, j in pairs(field.k)
        )
        user[f"predicted_{name}"] = jnp.asarray(g(w)) + 0.5 * curvature
    return {
        "user": user,
        "loss": loss,
        "sharpness": lam[0],
        "eigenvalues": lam,
        "tracked": jnp.asarray(m, w.dtype),
        "trace_sigma": trace,
        "predicted_loss": loss + trace / field.eta,
        "params": w,
        "U": U,
    }


def _second(g, w, u, v):
    """∇²g(w)[u, v] of a function of the flat parameters (any output shape), forward over
    forward."""
    return jax.jvp(lambda y: jax.jvp(g, (y,), (u,))[1], (w,), (v,))[1]


def _smat(x, k):
    """The symmetric k×k matrix of the svec vector x (k(k+1)/2,), in JAX."""
    X = jnp.zeros((k, k), x.dtype)
    for (i, j), v, s in zip(pairs(k), x, svec_scale(k)):
        X = X.at[i, j].set(v / s).at[j, i].set(v / s)
    return X


def central_flow(
    loss: Callable,
    params0: Any,
    t1: float,
    *,
    eta: float,
    k: int = 1,
    settings: SolveSettings | None = None,
    ts=None,
    save_params: bool = True,
    progress: bool = False,
    report: Callable[[float, float], None] | None = None,
    observables: dict | None = None,
    predicted: dict | None = None,
    optimizer: str = "gd",
    beta2: float = 0.99,
    eps: float = 1e-8,
    nu0: Any = None,
    count: bool = True,
    **overrides,
) -> Trajectory:
    """The central flow of gradient descent with step η, from `params0` to flow time `t1`;
    with `optimizer="rmsprop"` or `"scalar_rmsprop"`, the joint (w, ν) central flow of
    RMSProp (`_central_rmsprop`), on the effective Hessian P⁻¹H, P = diag(√ν + ε).

    Below the edge (every eigenvalue of H = ∇²L below 2/η) it is the gradient flow
    w' = −∇L. With m ≥ 1 eigenvalues tracked at 2/η (eigenvectors U, by Lanczos at every
    evaluation) it is w' = −[∇L + ½∇⟨H, Σ⟩], Σ = UXUᵀ, X ⪰ 0 solving the semidefinite
    complementarity problem (a convex QP, by Clarabel; `_complementarity`), which keeps
    the tracked block of H at or below 2/η; for m = 1, X = σ² = max(0, −2⟨∇S, ∇L⟩/‖∇S‖²).
    Events, located by bisection on the solver's dense output: λ_(m+1) reaching 2/η (it
    joins: m + 1), and the least eigenvalue of the X that would hold all m at 2/η reaching
    0 (one leaves: m − 1). w' is the shortest velocity −∇L + (cone of ½∇⟨H, Σ⟩), so
    dL/dt = −‖w'‖² ≤ 0: L never increases.

    Adaptive (the settings' solver, default Tsit5; "auto" means Tsit5 here) in float64 with
    located events, where the authors' codes step by explicit Euler (4 substeps per GD step)
    with warm-started LOBPCG, solving the complementarity problem one substep ahead.

    **Arguments:**
    - `loss`, `params0`, `t1`, `ts`, `settings`, `save_params`, `progress`, `**overrides`:
      as `gradient_flow` (the solver must be explicit: "tsit5", "dopri5", "dopri8", "rkc"
      (Runge–Kutta–Chebyshev, order 2, whose stages follow the stiffness 2/η of the edge:
      fewer evaluations at a looser tolerance; `flows._solver._rkc`), or "auto" for Tsit5).
    - `report`: called as `report(t, t1)` with the time reached after each save or event
      (a caller's progress line).
    - `eta`: the step η > 0 of gradient descent (flow-time units): the edge is S = 2/η.
    - `k`: the most eigenvalues tracked at the edge, 1 ≤ k < p (each evaluation computes
      the top k + 1 eigenpairs and k(k+1)/2 third-derivative products).
    - `observables`: `{name: fn(params) -> array}` recorded at every save, as in
      `gradient_flow`.
    - `predicted`: `{name: g(params) -> array}`: records `observables["predicted_<name>"]`
      = g(w) + ½⟨∇²g(w), Σ⟩, the central flow's prediction of the time average of g along
      gradient descent (Σ = 0 below the edge); with g = the loss it is `predicted_loss`
      (the tracked eigenvalues being 2/η).
    - `optimizer`: "gd" (gradient descent), "rmsprop" (ν per coordinate) or
      "scalar_rmsprop" (ν a scalar tracking ‖∇L‖²): for the last two, the joint (w, ν)
      central flow of RMSProp with P = diag(√ν + ε) (no bias correction), on the state
      (w, ν): w' = −P⁻¹[∇L + ½∇⟨H, Σ⟩], ν' = (1 − β2)/(β2η)·(∇L⊙² + diag(HΣH) − ν)
      (scalar: ‖∇L‖² + tr(HΣH)), the top eigenvalues of P⁻¹H held at 2/η by the same
      complementarity problem in the geometry of P (Σ = UXUᵀ on u_i = P^{-1/2}v_i).
      Below the edge it is the stable flow w' = −P⁻¹∇L, ν' = (1 − β2)/(β2η)(∇L⊙² − ν).
    - `beta2`, `eps`: RMSProp's β2 in (0, 1) and ε ≥ 0 (not used by "gd").
    - `nu0`: RMSProp's ν at t = 0, which is ν_1, the preconditioner of its first step:
      None for ∇L(params0)⊙² (scalar: ‖∇L(params0)‖²), a number, or (per coordinate) a
      pytree of the trainable parameters' structure; every entry > 0.
    - `count`: count the products (see `stats` below); False leaves those counts None and
      the host callbacks out of the compiled programs, so that with k = 1 (no QP callback
      either) JAX's persistent compilation cache can keep them for later processes.

    **Returns:** a `Trajectory`, with `observables["sharpness"]` (T,), `["eigenvalues"]`
    (T, k+1) the top k + 1 eigenvalues, `["tracked"]` (T,) m, `["trace_sigma"]` (T,) tr Σ
    (σ² for m = 1; 0 below the edge) and `["predicted_loss"]` (T,) = L + tr Σ/η, the
    predicted time average of GD's loss, and those of `observables` and `predicted`;
    `stats` adds `events`, a list of `(t, m)`: m eigenvalues tracked from t on, and the
    counts of what was computed, exact (each evaluation of the field, the event or a save
    reports its own, rejected steps and the event's root finding included): `num_events`,
    `hvps` (Hessian-vector products of L: Lanczos's, plus, in the event's and the saves'
    eigendecompositions, one for its scale and k + 1 Rayleigh quotients; the field's on the
    edge, warm-started from the last save's k + 1 vectors as they are and stopped once the
    top k converge, takes Lanczos's alone; also as `jvp_evals`), `third_products`
    (∇³L[u_i, u_j], k(k+1)/2 per solve and per save), `complementarity_solves` (closed-form
    σ² for k = 1, Clarabel QPs for k ≥ 2; one per evaluation on the edge) and
    `grad_evals` (evaluations of the field). The products of `predicted`'s ∇²g are not
    counted. Counting costs one host callback per evaluation, and a program with a host
    callback is not kept by JAX's persistent compilation cache (see `count`).
    For RMSProp, `["sharpness"]` and `["eigenvalues"]` are
    those of P⁻¹H (held at 2/η), `["trace_sigma"]` is tr X (the variance in the coordinates
    P^{1/2}w), `["nu"]` is ν ((T, p), or (T,) for scalar RMSProp; w is `params`),
    `config` has `optimizer`, `beta2` and `eps`, and the counts are the same (its Lanczos on
    P^{-1/2}HP^{-1/2}, one Hessian-vector product of L per product).

    **Raises:** `ValueError` naming `eta` (not finite and > 0), `optimizer` (unknown),
    `beta2` (outside (0, 1) for RMSProp, [0, 1) else), `eps` (< 0), `nu0` (an entry not
    finite and > 0, another structure, or given with "gd"), `k`, `params0` (also where
    S(0) > 2/η: the message names S(0) and 2/η; eigenvalues within 1e-8 of 2/η at t = 0
    start tracked where X can hold them, else the flow starts as the gradient flow), a
    setting, or an entry of `observables` / `predicted` that fails on `params0` or takes a
    name the flow records itself; `TypeError` naming `loss` (not a float scalar);
    `MaxStepsReached` with the time reached; `EdgeLimitReached` where eigenvalue k + 1
    reaches 2/η; `ComplementarityError` (a `FloatingPointError`) naming the time and the
    residual where the QP is not solved to 1e-6; `FloatingPointError` where the state or the
    solve fails, or events chatter (over 1000). `MaxStepsReached` and `EdgeLimitReached`
    carry `partial`, the trajectory up to the last save before (None when there is none).

    **Reference:** Cohen, Damian, Talwalkar, Kolter & Lee 2025, "Understanding optimization
    in deep learning with central flows", ICLR, §3 (one unstable eigenvalue; eq. for σ²),
    its multiple-eigenvalue form (Σ from a semidefinite complementarity problem) and §4 (the
    predicted time-averaged loss); §5 for RMSProp (see `_central_rmsprop` for the
    derivation of ν').
    """
    from ._central_rmsprop import check_optimizer, rmsprop_field

    eta = check_positive("eta", eta)
    optimizer, beta2, eps = check_optimizer(optimizer, beta2, eps, nu0)
    t1, ts, settings = resolve_flow_inputs(t1, ts, settings, overrides)
    save_params = check_flag("save_params", save_params)
    progress = check_flag("progress", progress)
    count = check_flag("count", count)
    solver_name = "tsit5" if settings.name == "auto" else settings.name
    if solver_name not in ("tsit5", "dopri5", "dopri8", "rkc"):
        raise ValueError(
            f"solver must be explicit for the central flow (tsit5, dopri5, dopri8, rkc or "
            f"auto), got {settings.name!r}"
        )
    f, w, spec, static = flat_loss(loss, params0, "params0")
    check_finite("params0", w)
    k = check_k(k, w.shape[0])
    if k >= w.shape[0]:
        raise ValueError(f"k must be < p = {w.shape[0]} (the top k + 1 eigenpairs), got {k}")
    user = _check_user(observables, predicted, params0)
    cid = next(_IDS)
    _COUNTS[cid] = np.zeros(4, np.int64)
    # a device scalar made on the host (jnp.asarray would compile a program of its own)
    field = _CentralField(loss, static, spec, jnp.asarray(eta), k,
                          jax.device_put(np.int32(cid)), count, *user)  # fmt: skip
    if optimizer != "gd":  # the state is (w, ν)
        field, w = rmsprop_field(field, optimizer, beta2, eps, nu0, w)
    solver = make_solver(solver_name, settings.rtol, settings.atol)
    event = dfx.Event(field.event, root_finder=_ROOT, direction=True)
    tol = tuple(jnp.asarray(x) for x in (settings.rtol, settings.atol))
    t, done, state, events, saved = 0.0, 0, None, [], []
    dt_next = eta / 4  # the first step: a quarter of a GD step, as the authors' Euler substep
    stats = SolveStats(solvers=[solver_name])

    def partial():
        jax.effects_barrier()  # every count callback has run
        evals, hvps, thirds, solves = (int(c) if count else None for c in _COUNTS[cid])
        stats.grad_evals, stats.jvp_evals = evals or 0, hvps or 0
        counts = {"hvps": hvps, "third_products": thirds, "complementarity_solves": solves,
                  "num_events": len(events)}  # fmt: skip
        out = _trajectory(saved, ts, spec, static, save_params, stats, events, settings,
                          solver_name, t1, eta, k, counts)  # fmt: skip
        if out is not None and optimizer != "gd":
            out.config.update(optimizer=optimizer, beta2=beta2, eps=eps)
        return out

    def run_span(t, t_next, state, m, U, value, compile_only=False):
        """The solve from t to the next save time t_next (or an event), resumed from `state`
        (None: a fresh start with the first step dt_next); `value` the event's at t."""
        return solve_span(
            field, save_state, w, jnp.asarray(t), jnp.asarray(max(t_next, t)),
            jnp.asarray(ts[done : done + 1]), state, solver, *tol,
            jnp.asarray(DTMIN_RELATIVE * max(1.0, t1)), settings.max_steps,
            dt0=dt_next, args=(jnp.asarray(m), U, jnp.asarray(value)), event=event,
            select_first_step=False, compile_only=compile_only,
        )  # fmt: skip

    bar = progress_bar(total=t1, desc="central flow", disable=not progress, leave=False)
    _FAILED.clear()
    # The solve program (the larger) is compiled on a second thread while the start's probe
    # (`_at`) compiles and runs on this one: a first call waits for the longer of the two,
    # not their sum. Its inputs' shapes are those of the first span (U: the start's k + 1
    # vectors); only their shapes are used.
    compiling = None
    if not _SPANS.get((field, w, solver, event)):
        U_shape = jax.device_put(np.zeros((k + 1, w.shape[0]), np.float64))

        def ahead():
            run_span(0.0, float(ts[0]), None, 0, U_shape, 0.0, compile_only=True)
            _SPANS.put((field, w, solver, event), True)

        compiling = _SECOND_THREAD.submit(ahead)
    try:
        # `start`: (join, leave) of the event at (t, w) with m tracked, from the last `_at`
        # there; None where none was made there since m changed
        m, U, start = _start_phase(field, w, k, eta, partial)
        if compiling is not None:
            compiling.result()
        while done < len(ts):
            # One span per save time, so that Lanczos is warm-started from the eigenvectors
            # of the last save; an event ends a span early.
            t_next = float(ts[done])
            if t_next <= t:  # a save at the time reached (t = 0, or a save at an event)
                record, *ends = _at(field, t, w, m, U)
                block, start = jax.tree.map(lambda a: np.asarray(a)[None], record), ends
                saved.append(block)
                U, done = jnp.asarray(block["U"][0]), done + 1
                continue
            # Only the state is saved in the solve program: the record of a save (Lanczos,
            # the block) is `_at`'s, so the solve program holds the field's Lanczos only where
            # the field and the event need it. The first step after a start or an event is
            # the last step proposed (η/4 at the start), not diffrax's selection (two more
            # evaluations of the field in the program).
            if start is None:
                start = _at(field, t, w, m, U)[1:]
            span = run_span(t, t_next, state, m, U, _event_value(*start))
            start = None
            stats.num_steps += int(span.stats["num_steps"])
            stats.num_accepted_steps += int(span.stats["num_accepted_steps"])
            stats.num_rejected_steps += int(span.stats["num_rejected_steps"])
            proposed = float(np.asarray(span.state[1][1]))
            dt_next = proposed if np.isfinite(proposed) and proposed > 0 else eta / 4
            if bool(np.isfinite(np.asarray(span.save_ts)[0])) and not bool(span.event):
                w_save = span.y_end[0]
                if not bool(np.all(np.isfinite(np.asarray(w_save)))):
                    raise FloatingPointError(f"the central flow became non-finite before t={t1}")
                record, *ends = _at(field, t_next, w_save, m, U)
                block, start = jax.tree.map(lambda a: np.asarray(a)[None], record), ends
                own = {key: value for key, value in block.items() if key != "user"}
                if not all(np.all(np.isfinite(x)) for x in jax.tree.leaves(own)):
                    raise FloatingPointError(f"the central flow became non-finite before t={t1}")
                saved.append(block)
                U = jnp.asarray(block["U"][0])
                done += 1
            t_end = float(span.t_end[0])
            bar.update(max(0.0, t_end - t))
            t, w = t_end, span.y_end[0]
            if report is not None:
                report(t, t1)
            if stats.num_steps > settings.max_steps or bool(span.max_steps_hit):
                e = MaxStepsReached(
                    f"max_steps={settings.max_steps} reached at t={t:.6g} before t={t1:.6g} "
                    f"(central flow, {len(events)} events); raise max_steps",
                    t,
                )
                e.partial = partial()
                raise e
            if not bool(span.ok):
                why = "diffrax stopped it"
                if bool(span.collapsed):  # said only "solver failed": which failure, where
                    why = (
                        f"its step size collapsed below {DTMIN_RELATIVE:g}·max(1, t1) with "
                        f"{m} of k = {k} eigenvalues tracked at 2/η: the field is not smooth "
                        "there (a jump or kink of the complementarity solution X or of the "
                        "tracked eigenspace), or stiffer than the explicit solver can follow"
                    )
                raise FloatingPointError(f"the central flow's solver failed at t={t:.6g}: {why}")
            if bool(span.event):
                record, join, leave = _at(field, t, w, m, U)
                join, leave, U = float(join), float(leave), record["U"]
                if join >= leave and m == k:
                    raise _limit(t, k, eta, partial)
                m = m + 1 if join >= leave else m - 1
                events.append((t, m))
                state = None  # the field changes at the event: restart the solver there
                if len(events) > _MAX_EVENTS:
                    raise FloatingPointError(
                        f"the central flow chattered: {len(events)} events by t={t:.6g}"
                    )
            else:
                state = span.state
        return partial()
    except Exception:  # the callback's error, as JAX re-raises it (its type varies)
        if not _FAILED:
            raise
        ((t_bad, res),) = _FAILED
        raise ComplementarityError(
            f"the central flow's complementarity problem failed at t={t_bad:.6g}: residual "
            f"{res:.3g} > {RESIDUAL_TOL:g}",
            t_bad,
            res,
        ) from None
    finally:
        bar.close()
        if compiling is not None:
            concurrent.futures.wait([compiling])  # no thread left running after an error
        _COUNTS.pop(cid, None)


class StartAboveEdge(ValueError):
    """`params0` above the edge, λ_max(0) > 2/η: the optimizer is unstable from its first step
    (a catapult the central flow does not describe). A `ValueError` naming `params0`, of its
    own class so that a caller can tell it from bad input without reading the message (the
    eos run matched "params0: S(0)", and failed once RMSProp's said λ_max(P⁻¹H)(0))."""


class EdgeLimitReached(RuntimeError):
    """More eigenvalues reached 2/η than the central flow tracks (`k`). Attributes: `t` the
    flow time, `partial` the `Trajectory` up to the last save before it."""

    def __init__(self, message: str, t: float, partial: Trajectory | None):
        super().__init__(message)
        self.t, self.partial = t, partial


#: Relative distance |λη/2 − 1| within which an eigenvalue at t = 0 counts as on the edge.
EDGE_RTOL = 1e-8


def _start_phase(field, w, k, eta, partial):
    """`(m, U, start)` at t = 0 (`start` the event's join and leave there), where the
    events' conditions may already hold (an event that is true at t0 never fires, so each
    is settled here):

    - an eigenvalue above 2/η by more than `EDGE_RTOL`: `ValueError` naming S(0) and 2/η
      (GD at that step is unstable from the start, and the central flow does not describe
      its catapult);
    - the m eigenvalues on the edge (within `EDGE_RTOL`) start tracked, unless X cannot hold
      them (the leave condition already holds): then they are let go one at a time, last
      first, so that a start on the edge where the gradient flow lowers S is the gradient
      flow with m = 0, not a claim to be on the edge;
    - more than k on the edge: `EdgeLimitReached`."""
    record, *start = _at(field, 0.0, w, 0, jnp.zeros((k + 1, w.shape[0]), w.dtype))
    lam, U = record["eigenvalues"], record["U"]
    excess = np.asarray(lam) * eta / 2 - 1.0
    if excess[0] > EDGE_RTOL:
        # RMSProp's was named S(0) and "gradient descent" (_RMSPropField.edge_of)
        what, method = getattr(field, "edge_of", ("S", "gradient descent"))
        raise StartAboveEdge(
            f"params0: {what}(0) = {float(lam[0]):.6g} > 2/eta = {2 / eta:.6g} (by "
            f"{100 * excess[0]:.3g} %): the central flow needs a start below or on the edge "
            f"of stability, and {method} at this eta is unstable from its first step "
            f"(a catapult the central flow does not describe); take eta <= {2 / float(lam[0]):.6g} "
            f"or start where {what} <= 2/eta"
        )
    m = int(np.sum(excess >= -EDGE_RTOL))
    if m > k:
        raise _limit(0.0, k, eta, partial)
    while m > 0:
        _, *ends = _at(field, 0.0, w, m, U)
        if not float(ends[1]) > 0:
            return m, U, ends
        m -= 1
    return m, U, start


def _event_value(join, leave) -> float:
    """The event's value (`_CentralField.event`) from `_at`'s join and leave."""
    return max(float(join), float(leave))


def _limit(t, k, eta, partial):
    return EdgeLimitReached(
        f"eigenvalue {k + 1} of the Hessian reached 2/eta={2 / eta:.6g} at t={t:.6g}; the "
        f"central flow tracks k={k}: raise k",
        t,
        partial(),
    )


def _trajectory(saved, ts, spec, static, save_params, stats, events, settings, solver_name,
                t1, eta, k, counts) -> Trajectory | None:  # fmt: skip
    """The trajectory of the saves made so far (None when there are none)."""
    if not saved:
        return None
    out = jax.tree.map(lambda *a: np.concatenate(a), *saved)
    params = None
    if save_params:
        params = eqx.combine(spec.unravel_rows(out["params"]), static)
        params = jax.tree.map(lambda a: np.asarray(a) if eqx.is_array(a) else a, params)
    observables = {key: out[key] for key in OWN}
    observables.update(out["user"])
    times = np.asarray(ts)[: len(out["loss"])]
    undefined = undefined_observables(times, out["user"])
    stats_dict = {**stats.to_dict(), **counts, "events": list(events)}
    config = {**settings.to_dict(), "solver": solver_name, "t1": t1, "eta": eta, "k": k}
    return Trajectory(times, params, out["loss"], observables, stats_dict, config,
                      undefined)  # fmt: skip


OWN = ("sharpness", "eigenvalues", "tracked", "trace_sigma", "predicted_loss")


def _check_user(observables, predicted, params0) -> tuple:
    """`(observables, predicted)` as sorted `(name, fn)` pairs, each traced on `params0`;
    names the flow records itself, or shared, refused naming the argument."""
    obs = check_observables(observables, params0)
    pred = check_observables(predicted, params0, "predicted")
    names = [name for name, _ in obs] + [f"predicted_{name}" for name, _ in pred]
    for name in names:
        if name in OWN or names.count(name) > 1:
            raise ValueError(
                f"observables / predicted: the name {name!r} is recorded twice (the flow "
                f"records {', '.join(OWN)})"
            )
    return obs, pred


def _at(field, t, w, m, U0):
    # t and m as numpy arrays: traced (Python scalars would be static, a program per value)
    return _at_program(field, np.asarray(t, np.float64), w, np.asarray(m, np.int64), U0)


@eqx.filter_jit
def _at_program(field, t, w, m, U0):
    """At the start, a save at the time reached or an event, one program (a k = 1 run
    compiles it once, with the solve program): `(record, join, leave)`, the record of a save
    (`_CentralField.record`) and the two values of `_CentralField.event`."""
    solved = field.solve(t, w, m, U0)
    leave = jax.lax.cond(
        m > 0, lambda: field.leave_value(solved, m), lambda: jnp.asarray(-jnp.inf, w.dtype)
    )
    return field.report(w, m, solved), field.join(solved[5], m), leave
