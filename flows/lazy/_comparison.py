"""The lazy-training pair: flows of F_α(w) = R(αh(w))/α² and F̄_α(w) = R(αh̄(w))/α².

Chizat, Oyallon & Bach 2019, "On Lazy Training in Differentiable Programming", §2.

Coordinates. Both flows are integrated jointly as (ū, d), with ū = α(w̄ − w0) the linear
branch's displacement and d = α(u − ū) = α²(w − w̄) the scaled gap, u = α(w − w0). In these
coordinates every quantity the theorems bound is O(1) or computed relative to its own size:
  ū' = −Jᵀ ∇R(ȳ),                 ȳ = αh(w0) + Jū,
  d' = −(Q + JᵀG),
where, with δ = u/α, Δ = α(αh(w) − ȳ) = Jd + ∫₀¹(1−s) D²h(w0+sδ)[u,u] ds,
  Q = α(Dh(w) − J)ᵀ∇R(αh(w)) = ∫₀¹ ∇_w⟨∇R(αh(w)), Dh(w')[u]⟩|_{w'=w0+sδ} ds,
  G = α(∇R(αh(w)) − ∇R(ȳ)) = ∫₀¹ ∇²R(ȳ + τΔ/α) Δ dτ.
The integrals (the Taylor remainder form) use Gauss–Legendre nodes over nested jvps, so their
round-off is relative to the gap, not α·eps·‖h‖: the weight gap ‖d‖/α² and output gap ‖Δ‖/α
keep their slopes to α = 10⁶ and beyond. At small α, where δ is not small and few nodes would
be inaccurate, the direct form α(u' − ū') is used instead (`lazy_remainder_rule`).
"""

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import (
    check_finite,
    check_flag,
    check_number,
    check_positive,
    warn_low_precision,
)
from .._flat import MODEL_KIND, FlatSpec, trainable_of
from .._integrate import integrate
from .._losses import SquaredLoss, get_loss
from .._settings import SolveSettings, resolve_flow_inputs
from .._solver._solvers import SEMILINEAR
from ._kinked import check_kinked_solver, kinked_form, kinked_pair
from ._rules import LAZY_NODES, lazy_remainder_rule
from ._semilinear import LazySemilinear, SemilinearMeasure, gauss_nodes


class _Lazy(eqx.Module):
    """Both vector fields and the measurements, as one pytree: α and the arrays are traced,
    so every α reuses one compilation."""

    w0: jax.Array
    X: jax.Array
    Y: jax.Array
    X_test: jax.Array | None
    alpha: jax.Array
    static: Any
    spec: FlatSpec = eqx.field(static=True)
    loss: Callable = eqx.field(static=True)
    remainder: bool = eqx.field(static=True)
    nodes: int = eqx.field(static=True)
    # Not a gradient field: its Jacobian in (ū, d) is block lower-triangular (ū' does not see
    # d), so exprb32 and the stiffness tests of "auto" build Arnoldi, not Lanczos, spaces.
    symmetric_jacobian: ClassVar[bool] = False

    def h(self, wf, X):
        model = eqx.combine(self.spec.unravel(wf), self.static)
        return jax.vmap(model)(X)

    def R(self, y):
        return self.loss(y, self.Y)

    def linear(self, ubar, X):
        """(ȳ, J, Jᵀ) on inputs X: the linear output αh(w0) + Jū, J = Dh(w0) as a jvp and its
        transpose."""
        h0, jvp = jax.linearize(lambda w: self.h(w, X), self.w0)
        return self.alpha * h0 + jvp(ubar), jvp, jax.linear_transpose(jvp, self.w0)

    def linear_velocity(self, ubar):
        """ū' = −Jᵀ∇R(ȳ): the linear branch alone (the nonlinear one is solved elsewhere)."""
        ybar, _, jt = self.linear(ubar, self.X)
        (ubar_dot,) = jt(jax.grad(self.R)(ybar))
        return -ubar_dot

    def gap_terms(self, ubar, d, X):
        """(ȳ, Δ, Jᵀ) on inputs X: the linear output, the scaled output gap and the transpose
        of J = Dh(w0) on X."""
        alpha = self.alpha
        u = ubar + d / alpha
        h_on_X = lambda w: self.h(w, X)  # noqa: E731
        ybar, jvp, jt = self.linear(ubar, X)
        if not self.remainder:
            return ybar, alpha * (alpha * h_on_X(self.w0 + u / alpha) - ybar), jt
        s, wts = gauss_nodes(self.nodes)
        phi = lambda w: jax.jvp(h_on_X, (w,), (u,))[1]  # noqa: E731
        d2 = jax.vmap(lambda si: jax.jvp(phi, (self.w0 + si * u / alpha,), (u,))[1])(s)
        return ybar, jvp(d) + jnp.tensordot(wts * (1 - s), d2, axes=1), jt

    def derivatives(self, ubar, d):
        alpha = self.alpha
        u = ubar + d / alpha
        ybar, delta, jt = self.gap_terms(ubar, d, self.X)
        grad_R = jax.grad(self.R)
        (ubar_dot,) = jt(grad_R(ybar))
        g = grad_R(ybar + delta / alpha)
        if not self.remainder:
            _, vjp = jax.vjp(lambda w: self.h(w, self.X), self.w0 + u / alpha)
            (u_dot,) = vjp(g)
            return -ubar_dot, -alpha * (u_dot - ubar_dot)
        s, wts = gauss_nodes(self.nodes)

        def q_node(si):
            def inner(w):
                return jnp.vdot(g, jax.jvp(lambda v: self.h(v, self.X), (w,), (u,))[1])

            return jax.grad(inner)(self.w0 + si * u / alpha)

        Q = jnp.tensordot(wts, jax.vmap(q_node)(s), axes=1)
        G = jnp.tensordot(
            wts,
            jax.vmap(lambda ti: jax.jvp(grad_R, (ybar + ti * delta / alpha,), (delta,))[1])(s),
            axes=1,
        )
        (jtG,) = jt(G)
        return -ubar_dot, -(Q + jtG)

    def __call__(self, t, state, args):
        return self.derivatives(*state)


class _Linear(eqx.Module):
    """The linear branch's field ū' = −Jᵀ∇R(ȳ) alone, for `lazy_comparison` of a kinked net."""

    field: _Lazy

    def __call__(self, t, ubar, args):
        return self.field.linear_velocity(ubar)


class _Measure(eqx.Module):
    field: _Lazy
    save_params: bool = eqx.field(static=True)

    def __call__(self, t, state, args):
        f = self.field
        ubar, d = state
        alpha = f.alpha
        ybar, delta, jt = f.gap_terms(ubar, d, f.X)
        ya = ybar + delta / alpha
        out = {
            "loss": f.R(ya),
            "loss_linearized": f.R(ybar),
            "weight_gap": jnp.linalg.norm(d) / alpha**2,
            "output_gap": jnp.linalg.norm(delta) / alpha,
            "distance_from_init": jnp.linalg.norm(ubar + d / alpha) / alpha,
            "residual": jnp.linalg.norm(ya - f.Y),
            "residual_linearized": jnp.linalg.norm(ybar - f.Y),
        }
        if f.X_test is not None:
            _, delta_test, _ = f.gap_terms(ubar, d, f.X_test)
            out["heldout_output_gap"] = jnp.linalg.norm(delta_test) / alpha
        # The parts of the PL quotient μ = ‖∇F‖²/(2F) of both objectives (F* = 0):
        # ∇F_α(w) = Dh(w)ᵀ∇R(αh(w))/α and ∇F̄_α = Jᵀ∇R(ȳ)/α, so μ = rᵀΣ(w)r/‖r‖² for the
        # squared loss: no power of α is left, and μ is comparable with λ_min(Σ(w0)).
        grad_R = jax.grad(f.R)
        _, vjp = jax.vjp(lambda w: f.h(w, f.X), f.w0 + (ubar + d / alpha) / alpha)
        (g,) = vjp(grad_R(ya))
        (gbar,) = jt(grad_R(ybar))
        out["pl"] = {"grad_norm_sq": jnp.vdot(g, g) / alpha**2, "gap": out["loss"] / alpha**2}
        out["pl_linearized"] = {
            "grad_norm_sq": jnp.vdot(gbar, gbar) / alpha**2,
            "gap": out["loss_linearized"] / alpha**2,
        }
        if self.save_params:
            out["u"], out["ubar"] = ubar + d / alpha, ubar
        return out


@dataclasses.dataclass(frozen=True)
class LazyComparison:
    """The two flows of one α, measured at the same save times.

    Arrays have shape `(T,)` (T = len(ts)); flow time t is the time of w' = −∇F_α(w).
    - `loss`, `loss_linearized`: R(αh(w_α(t))) and R(αh̄(w̄_α(t))) (F_α = loss/α²).
    - `weight_gap`: ‖w_α − w̄_α‖.
    - `output_gap`: ‖αh(w_α) − αh̄(w̄_α)‖ on the training inputs (Frobenius over all outputs).
    - `heldout_output_gap`: the same on the held-out inputs, or None.
    - `distance_from_init`: ‖w_α − w0‖.
    - `residual`, `residual_linearized`: ‖αh(w_α) − y*‖ and ‖αh̄(w̄_α) − y*‖.
    - `pl`, `pl_linearized`: `{"grad_norm_sq": ‖∇F_α(w_α)‖², "gap": F_α(w_α)}` (each `(T,)`),
      the parts of the PL quotient μ(t) = ‖∇F_α‖²/(2F_α) (F* = 0), and the same for F̄_α
      along w̄_α; `flows.observables.pl_constant(res.pl)` gives μ(t), masked where F_α is 0. For the
      squared loss μ = rᵀΣ(w)r/‖r‖² with r = αh(w) − y*: no power of α is left, so μ is on
      the scale of the eigenvalues of Σ(w0) = JJᵀ (`flows.lazy.lazy_constants`), and
      μ ≥ λ_min(Σ(w(t))). For a kinked net Dh(w) is JAX's derivative (φ'(z) one-sided, or
      a at z = 0 exactly for φ = a·s + b·|s|): at save times where pre-activations slide
      (`stats["sliding_at_ts"]`), μ is not built from the Filippov velocity.
    - `stats`: the solver's counters (`SolveStats` as a dict). For a kinked net
      (`config["method"] == "filippov"`) those of `filippov_flow` (steps, `events`,
      `crossings`, `sliding_entries`, `sliding_exits`, `sliding_at_ts`), with the linear
      branch's under `"linearized"`.
    - `u`, `ubar`: the displacements α(w − w0) as flat vectors `(T, p)`, if saved.
    """

    alpha: float
    ts: np.ndarray
    loss: np.ndarray
    loss_linearized: np.ndarray
    weight_gap: np.ndarray
    output_gap: np.ndarray
    heldout_output_gap: np.ndarray | None
    distance_from_init: np.ndarray
    residual: np.ndarray
    residual_linearized: np.ndarray
    stats: dict
    config: dict
    pl: dict
    pl_linearized: dict
    u: np.ndarray | None = None
    ubar: np.ndarray | None = None


def check_pair(data):
    """`data` as float64 `(X (n, d), Y)`, checked: a pair of arrays of numbers, n ≥ 1,
    finite, Y with n rows. **Raises:** `ValueError` naming `data` (its inputs or targets)."""
    if not isinstance(data, (tuple, list)) or len(data) != 2:  # was a TypeError of _check_data
        what = (
            f"a {type(data).__name__} of {len(data)}"
            if isinstance(data, (tuple, list))
            else f"a {type(data).__name__}"
        )
        raise ValueError(f"data must be a pair (X (n, d), Y (n,) or (n, k)), got {what}")
    return _check_data("data", *data, targets=True)


def _numbers(name, value):
    """`value` as a float64 array, or a `ValueError` naming it (a str, None or a list of str
    used to fail in numpy or JAX)."""
    try:
        if value is None or isinstance(value, (str, bytes)):
            raise TypeError
        warn_low_precision(name, value, 5)
        return jnp.asarray(value, dtype=jnp.float64)
    except (TypeError, ValueError):
        what = type(value).__name__
        raise ValueError(f"{name} must be an array of numbers, got {what}") from None


def _check_data(name, X, Y=None, *, targets=False):
    """`(X, Y)` checked as `check_pair` does; `Y` may be None (inputs alone) unless
    `targets`."""
    X = _numbers(f"{name} inputs", X)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"{name} inputs must have shape (n, d) with n >= 1, got {X.shape}")
    check_finite(f"{name} inputs", X)
    if Y is None and not targets:
        return X, None
    Y = _numbers(f"{name} targets", Y)
    if Y.shape[:1] != X.shape[:1]:
        got = f"{Y.shape[0]} rows" if Y.ndim else "shape ()"
        raise ValueError(f"{name} targets have {got} but inputs have {X.shape[0]}")
    check_finite(f"{name} targets", Y)
    return X, Y


def check_outputs(model, X, Y) -> None:
    """Raise `ValueError` naming the data unless `model` maps the inputs `X` `(n, d)`, one row
    at a time, to outputs of exactly the targets' shape `Y` `(n,)` or `(n, k)`."""
    try:
        out = jax.eval_shape(jax.vmap(model), X)
    except Exception as e:  # the model's own error names the mismatch
        raise ValueError(f"data inputs of shape {X.shape} do not fit the model: {e}") from None
    if out.shape != Y.shape:
        raise ValueError(f"model outputs have shape {out.shape} but data targets {Y.shape}")


def lazy_comparison(
    model,
    data,
    alpha: float,
    t1: float,
    *,
    loss="squared",
    heldout=None,
    ts=None,
    settings: SolveSettings | None = None,
    remainder: str | bool = "auto",
    nodes: int = LAZY_NODES,
    save_params: bool = False,
    progress: bool = False,
    checkpoint: str | None = None,
    report=None,
    **overrides,
) -> LazyComparison:
    """Integrate the flows of F_α and F̄_α from the same w0 and measure how far apart they stay.

    F_α(w) = R(αh(w))/α² and F̄_α(w) = R(αh̄(w))/α², with h̄(w) = h(w0) + Dh(w0)(w − w0) and
    h(w) the vector of model outputs on the training inputs.

    **Kinked activations.** For a two-layer net (or a symmetrised one) with a piecewise-linear
    activation (ReLU, leaky ReLU, |s|: `models.abs_family`), F_α is not smooth and its exact
    flow slides along the kink surfaces. The nonlinear flow is then the Filippov solution of
    `filippov_flow`, the linear branch ū' = −Jᵀ∇R(ȳ) (smooth) is solved alone with `settings`,
    and the gaps are measured from the weights saved at `ts` in the direct form
    α(αh(w) − ȳ), `remainder` being ignored (its second derivative D²h misses the kinks).
    The Filippov solve works in w, whose displacement is O(1/α): it gets rtol/α and atol/α
    (rtol at least 1e-14), so that the displacement is resolved as in the joint solve; above
    α ≈ 1e4 (rtol 1e-10) float64's resolution of w sets the floor (docs/performance.md).

    **Arguments:**
    - `model`: an equinox Module called on one input `x` of shape `(d,)`, returning `()` or
      `(k,)`. Its trainable arrays (see `models.partition`) are w0, shape `(p,)` once flattened.
    - `data`: `(X, Y)` with X `(n, d)` and Y `(n,)` or `(n, k)`.
    - `alpha`: the scale α > 0.
    - `t1`: final flow time (time of w' = −∇F_α(w)), > 0.
    - `loss`: "squared" (sum, ½‖y − y*‖²), "logistic", "exponential", or a loss object
      `loss(pred, target) -> scalar` (see `flows.SquaredLoss`).
    - `heldout`: held-out inputs `(n', d)` (or `(X', Y')`) for Proposition A.1's gap.
    - `ts`: save times, default `log_times(t1, 100)`. Both flows are saved at these times.
    - `settings`, `**overrides`, `progress`, `checkpoint`: as in `gradient_flow`; the
      tolerances apply to the joint state (ū, d), or to d alone with `solver="exprk4"`
      (squared loss, smooth model: ū in closed form, `flows.lazy._semilinear`).
    - `report`: called with the flow time reached at each checkpoint of the solve (a smooth
      model's, as in `flows._integrate.integrate`; not called for a kinked net). A kinked
      net needs an explicit solver ("auto", "tsit5", "dopri5", "dopri8"; `max_steps` counts
      steps plus events there).
    - `remainder`: "auto" follows `lazy_remainder_rule(alpha)` (the Taylor-remainder form at
      α ≥ 30, the direct form below; the docstring there says why). True/False force it.
    - `nodes`: Gauss–Legendre nodes of the remainder integrals, in [2, 16]; default
      `LAZY_NODES` = 3.
    - `save_params`: also return the displacements `u`, `ubar`.

    **Returns:** a `LazyComparison`.

    **Raises:** `ValueError` naming the argument for α ≤ 0 or non-finite, t1 ≤ 0, bad `ts`,
    `data` not a pair (X, Y), non-finite data or parameters, parameters that are not
    float64, shapes that do not match the model, an implicit solver for a kinked net, `nodes`
    not an integer in [2, 16], targets the loss refuses (0/1 labels for a margin loss);
    `FloatingPointError` and
    `MaxStepsReached` as in `gradient_flow` (and `filippov_flow` for a kinked net).

    **Reference:** Chizat, Oyallon & Bach 2019, Thm 2.2 (finite horizon), Thm 2.4 (uniform in
    time) and Prop. A.1 (held-out inputs); Filippov 1988 (kinked nets); Liu, Zhu & Belkin
    2022, §4 (the PL quotient of the squared loss, `pl`).
    """
    alpha = check_positive("alpha", alpha)
    t1, ts, settings = resolve_flow_inputs(t1, ts, settings, overrides)
    save_params = check_flag("save_params", save_params)
    loss = get_loss(loss)
    X, Y = check_pair(data)
    X_test = None
    if heldout is not None:
        X_test, _ = _check_data("heldout", *(heldout if isinstance(heldout, tuple) else (heldout,)))
        if X_test.shape[1] != X.shape[1]:
            raise ValueError(
                f"heldout inputs have {X_test.shape[1]} features but data has {X.shape[1]}"
            )
    trainable, static = trainable_of("model", model, MODEL_KIND)
    check_finite("model parameters", trainable)
    check_outputs(model, X, Y)
    # the loss's own checks on the concrete targets (0/1 labels for a margin loss), which
    # the solve, where Y is traced, cannot make: 0/1 targets gave a wrong loss silently
    loss(jnp.zeros(Y.shape), jnp.asarray(Y))
    nodes = check_number("nodes", nodes, int)  # '4' and 2.5 were taken as 4 and 2
    if not 2 <= nodes <= 16:
        raise ValueError(
            f"nodes must lie in [2, 16] (one Gauss node misses the term that survives a doubled "
            f"model's symmetric cancellation), got {nodes}"
        )
    if remainder == "auto":
        remainder = lazy_remainder_rule(alpha)
    elif not isinstance(remainder, bool):
        raise ValueError(f"remainder must be 'auto', True or False, got {remainder!r}")
    kinked = kinked_form(model) is not None
    if kinked:  # the Filippov solution, measured in the direct form (no D²h across a kink)
        check_kinked_solver(settings)
        if Y.ndim != 1:
            raise ValueError(f"data: a kinked net needs targets of shape (n,), got {Y.shape}")
        remainder = False
    if settings.name in SEMILINEAR and (kinked or not isinstance(loss, SquaredLoss)):
        raise ValueError(
            f"settings.solver {settings.name!r} integrates the lazy pair of the squared loss "
            f"with a smooth model (its stiff part −c·JᵀJ is constant); got loss {loss!r}"
            + (" and a kinked net" if kinked else "")
            + ": use 'tsit5' or 'auto'"
        )
    spec = FlatSpec.of(trainable)
    w0 = spec.ravel(trainable)
    field = _Lazy(
        w0, X, Y, X_test, jnp.asarray(alpha), static, spec, loss, bool(remainder), int(nodes)
    )
    measure = _Measure(field, save_params)
    if kinked:
        saved, stats = kinked_pair(
            model, (X, Y), field, _Linear(field), measure, ts, settings, loss,
            progress=progress, checkpoint=checkpoint,
        )  # fmt: skip
    elif settings.name in SEMILINEAR:  # ū in closed form, d by an exponential integrator
        semi = LazySemilinear.build(field, loss.curvature(X.shape[0])[0])
        saved, _, stats = integrate(
            semi, jnp.zeros_like(w0), ts, SemilinearMeasure(measure, semi), settings,
            progress=progress, desc=f"alpha={alpha:.3g}", checkpoint=checkpoint, report=report,
        )  # fmt: skip
        stats = stats.to_dict()
    else:
        zeros = jnp.zeros_like(w0)
        saved, _, stats = integrate(
            field, (zeros, zeros), ts, measure, settings, progress=progress,
            desc=f"alpha={alpha:.3g}", checkpoint=checkpoint, report=report,
        )  # fmt: skip
        stats = stats.to_dict()
    config = {
        **settings.to_dict(),
        "alpha": alpha,
        "t1": t1,
        "method": "filippov"
        if kinked
        else "semilinear"
        if settings.name in SEMILINEAR
        else "joint",
        "remainder": bool(remainder),
        "nodes": int(nodes),
        "loss": repr(loss),
    }
    return LazyComparison(
        alpha=alpha,
        ts=ts,
        heldout_output_gap=saved.pop("heldout_output_gap", None),
        u=saved.pop("u", None),
        ubar=saved.pop("ubar", None),
        stats=stats,
        config=config,
        **saved,
    )
