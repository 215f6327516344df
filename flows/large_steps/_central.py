"""The central flow (Cohen, Damian, Talwalkar, Kolter & Lee 2025): the time-averaged path of
gradient descent at the edge of stability, as an ODE with located events.

While S = λ_max(H) < 2/η it is the gradient flow. When S reaches 2/η (a located event) the
flow projects out the rise of S: w' = −[∇L + ½σ²∇S] with ∇S = ∇³L[u, u] (u the unit top
eigenvector) and σ² = max(0, −2⟨∇S, ∇L⟩/‖∇S‖²), so that S stays at 2/η while σ² > 0; when
the gradient flow would lower S (⟨∇S, ∇L⟩ crosses 0, another located event) it is the
gradient flow again. σ² is the variance of GD's oscillation along u: the predicted time
average of GD's loss is L + σ²/η.
"""

from collections.abc import Callable
from typing import Any

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from tqdm.auto import tqdm

from .._checks import check_finite, check_positive
from .._failures import DTMIN_RELATIVE, MaxStepsReached
from .._flow import Trajectory
from .._settings import SolveSettings, resolve_flow_inputs
from .._solver._solve import solve_span
from .._solver._solvers import make_solver
from .._stats import SolveStats
from ._hessian import flat_function, flat_loss, third
from ._sharpness import top_eigenpairs

_ROOT = optx.Bisection(rtol=1e-13, atol=1e-13)
_MAX_EVENTS = 1000
# Lanczos inside the field: a residual of 1e-10·S (the eigenvector to 1e-10·S/gap), at most
# 60 products per evaluation, warm-started from the top eigenvector at the last save.
_TOL, _ITERS = 1e-10, 60


class _CentralField(eqx.Module):
    """w' on the flat parameters; `args = (active, u0)`: 1.0 on the edge, 0.0 below it, and
    the warm start of Lanczos (the top eigenvector at the last save or event)."""

    loss: Callable = eqx.field(static=True)
    static: Any
    spec: Any = eqx.field(static=True)
    eta: jax.Array
    symmetric_jacobian = False

    def f(self):
        return flat_function(self.loss, self.spec, self.static)

    def edge(self, w, u0):
        """(S, ∇L, ∇S, σ² unclipped, u)."""
        f = self.f()
        g = jax.grad(f)(w)
        lam, u, _, _ = top_eigenpairs(f, w, 1, u0, tol=_TOL, max_iters=_ITERS)
        gS = third(f, w, u[0], u[0])
        sigma2 = -2 * (gS @ g) / jnp.maximum(gS @ gS, 1e-300)
        return lam[0], g, gS, sigma2, u[0]

    def __call__(self, t, w, args):
        active, u0 = args

        def on_edge(w):
            _, g, gS, sigma2, _ = self.edge(w, u0)
            return -(g + 0.5 * jnp.maximum(sigma2, 0.0) * gS)

        return jax.lax.cond(active > 0.5, on_edge, lambda w: -jax.grad(self.f())(w), w)

    def event(self, t, y, args, **kwargs):
        """Crosses 0 upwards where the phase ends: S reaches 2/η (below the edge), or
        ⟨∇S, ∇L⟩/(‖∇S‖‖∇L‖) reaches 0 (σ² reaches 0: the flow leaves the edge)."""
        lam, g, gS, _, _ = self.edge(y, args[1])
        leave = (gS @ g) / jnp.maximum(jnp.linalg.norm(gS) * jnp.linalg.norm(g), 1e-300)
        return jnp.where(args[0] > 0.5, leave, lam * self.eta / 2 - 1.0)

    def record(self, t, w, args):
        lam, g, gS, sigma2, u = self.edge(w, args[1])
        sigma2 = jnp.where(args[0] > 0.5, jnp.maximum(sigma2, 0.0), 0.0)
        loss = self.f()(w)
        return {
            "loss": loss,
            "sharpness": lam,
            "sigma2": sigma2,
            "predicted_loss": loss + sigma2 / self.eta,
            "params": w,
            "u": u,
        }


def central_flow(
    loss: Callable,
    params0: Any,
    t1: float,
    *,
    eta: float,
    settings: SolveSettings | None = None,
    ts=None,
    save_params: bool = True,
    progress: bool = False,
    **overrides,
) -> Trajectory:
    """The central flow of gradient descent with step η, from `params0` to flow time `t1`.

    Below the edge (S = λ_max(∇²L) < 2/η) it is the gradient flow w' = −∇L. S reaching 2/η
    is an event located by bisection on the solver's dense output; from there
    w' = −[∇L + ½σ²∇S], ∇S = ∇³L[u, u] (a jvp of a Hessian-vector product, u the unit top
    eigenvector by Lanczos at every evaluation), σ² = max(0, −2⟨∇S, ∇L⟩/‖∇S‖²), which keeps
    dS/dt = 0; ⟨∇S, ∇L⟩ reaching 0 is the event where it leaves the edge. On the edge
    dL/dt = −‖∇L‖² + ⟨∇S, ∇L⟩²/‖∇S‖² ≤ 0: L never increases.

    Adaptive (the settings' solver, default Tsit5; "auto" means Tsit5 here) in float64 with
    located events, where the authors' code steps by explicit Euler (4 substeps per GD step)
    in float32 with warm-started LOBPCG.

    **Arguments:**
    - `loss`, `params0`, `t1`, `ts`, `settings`, `save_params`, `progress`, `**overrides`:
      as `gradient_flow` (the solver must be explicit: "tsit5", "dopri5", "dopri8", or
      "auto" for Tsit5).
    - `eta`: the step η > 0 of gradient descent (flow-time units): the edge is S = 2/η.

    **Returns:** a `Trajectory`, with `observables["sharpness"]` (T,), `["sigma2"]` (T,)
    (σ², 0 below the edge) and `["predicted_loss"]` (T,) = L + σ²/η, the predicted time
    average of GD's loss; `stats` adds `events` (a list of `(t, "edge" | "gradient flow")`,
    the phase entered at t).

    **Raises:** `ValueError` naming `eta` (not finite and > 0), `params0`, or a setting;
    `TypeError` naming `loss` (not a float scalar); `MaxStepsReached` with the time
    reached; `FloatingPointError` where the state or the solve fails, or events chatter
    (over 1000).

    **Reference:** Cohen, Damian, Talwalkar, Kolter & Lee 2025, "Understanding optimization
    in deep learning with central flows", ICLR, §3 (one unstable eigenvalue; eq. for σ²) and
    §4 (the predicted time-averaged loss).
    """
    eta = check_positive("eta", eta)
    t1, ts, settings = resolve_flow_inputs(t1, ts, settings, overrides)
    solver_name = "tsit5" if settings.name == "auto" else settings.name
    if solver_name not in ("tsit5", "dopri5", "dopri8"):
        raise ValueError(
            f"solver must be explicit for the central flow (tsit5, dopri5, dopri8 or auto), "
            f"got {settings.name!r}"
        )
    f, w, spec, static = flat_loss(loss, params0)
    check_finite("params0", w)
    field = _CentralField(loss, static, spec, jnp.asarray(eta))
    solver = make_solver(solver_name, settings.rtol, settings.atol)
    event = dfx.Event(field.event, root_finder=_ROOT, direction=True)
    tol = tuple(jnp.asarray(x) for x in (settings.rtol, settings.atol))
    lam0, u = _edge_value(field, w)
    active = float(lam0 >= 2.0 / eta)
    t, done, state, events, saved = 0.0, 0, None, [], []
    stats = SolveStats(solvers=[solver_name])
    bar = tqdm(total=t1, desc="central flow", disable=not progress, leave=False)
    try:
        while done < len(ts):
            # One span per save time, so that Lanczos is warm-started from the eigenvector
            # of the last save; an event ends a span early.
            t_next = float(ts[done])
            if t_next <= t:  # a save at the time reached (t = 0, or a save at an event)
                block = jax.tree.map(lambda a: np.asarray(a)[None], _record(field, t, w, active, u))
                saved.append(block)
                u, done = jnp.asarray(block["u"][0]), done + 1
                continue
            span = solve_span(
                field, field.record, w, jnp.asarray(t), jnp.asarray(max(t_next, t)),
                jnp.asarray(ts[done : done + 1]), state, solver, *tol,
                jnp.asarray(DTMIN_RELATIVE * max(1.0, t1)), settings.max_steps,
                args=(jnp.asarray(active), u), event=event,
            )  # fmt: skip
            stats.num_steps += int(span.stats["num_steps"])
            stats.num_accepted_steps += int(span.stats["num_accepted_steps"])
            stats.num_rejected_steps += int(span.stats["num_rejected_steps"])
            if bool(np.isfinite(np.asarray(span.save_ts)[0])) and not bool(span.event):
                block = jax.tree.map(lambda a: np.asarray(a)[:1], span.saved)
                if not all(np.all(np.isfinite(x)) for x in jax.tree.leaves(block)):
                    raise FloatingPointError(f"the central flow became non-finite before t={t1}")
                saved.append(block)
                u = jnp.asarray(block["u"][0])
                done += 1
            t_end = float(span.t_end[0])
            bar.update(max(0.0, t_end - t))
            t, w = t_end, span.y_end[0]
            if stats.num_steps > settings.max_steps or bool(span.max_steps_hit):
                raise MaxStepsReached(
                    f"max_steps={settings.max_steps} reached at t={t:.6g} before t={t1:.6g} "
                    f"(central flow, {len(events)} events); raise max_steps",
                    t,
                )
            if not bool(span.ok):
                raise FloatingPointError(f"the central flow's solver failed at t={t:.6g}")
            if bool(span.event):
                active = 1.0 - active
                events.append((t, "edge" if active else "gradient flow"))
                state = None  # the field changes at the event: restart the solver there
                if len(events) > _MAX_EVENTS:
                    raise FloatingPointError(
                        f"the central flow chattered: {len(events)} events by t={t:.6g}"
                    )
            else:
                state = span.state
    finally:
        bar.close()
    out = jax.tree.map(lambda *a: np.concatenate(a), *saved)
    params = None
    if save_params:
        params = eqx.combine(spec.unravel_rows(out["params"]), static)
        params = jax.tree.map(lambda a: np.asarray(a) if eqx.is_array(a) else a, params)
    del out["u"]
    observables = {k: out[k] for k in ("sharpness", "sigma2", "predicted_loss")}
    stats_dict = {**stats.to_dict(), "events": events}
    config = {**settings.to_dict(), "solver": solver_name, "t1": t1, "eta": eta}
    return Trajectory(ts, params, out["loss"], observables, stats_dict, config)


@eqx.filter_jit
def _record(field, t, w, active, u):
    return field.record(t, w, (jnp.asarray(active), u))


@eqx.filter_jit
def _edge_value(field, w):
    lam, _, _, _, u = field.edge(w, jnp.zeros_like(w))
    return lam, u
