"""The particle flow of f-regularised optimal transport: ẋ_i = −n ∇_{x_i} OT_{ε,f}(μ_x, ν),
μ_x = (1/n) Σ δ_{x_i}, on the engine of `gradient_flow`."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback
from jaxtyping import Array, Float

from .._checks import check_finite, check_float64
from .._flow import Trajectory, trajectory
from .._integrate import integrate
from .._settings import SolveSettings, resolve_flow_inputs
from .._solver._solvers import EXPLICIT
from ..divergences import AbstractDivergence, get
from ._inputs import check_eps, check_eps_for_cost, check_limits, check_weights
from ._sinkhorn import SinkhornNotConverged, _certify, _iterate, _message


@dataclasses.dataclass(eq=False)
class _WarmStart:
    """Host-side store of the last potentials, so that each field evaluation's Sinkhorn solve
    starts from the previous one's, and counters of the inner iterations. Hashed by identity:
    a static field of the vector field."""

    u: np.ndarray
    v: np.ndarray
    solves: int = 0
    iterations: int = 0
    most: int = 0
    failure: tuple | None = None  # (t, marginal error, iterations) of a solve above tol
    support: list = dataclasses.field(default_factory=list)  # (t, nonzeros) when it changes

    def read(self):
        return self.u, self.v

    def write(self, t, u, v, iterations, error, nonzeros, tol):
        self.u, self.v = np.asarray(u), np.asarray(v)
        self.solves += 1
        self.iterations += int(iterations)
        self.most = max(self.most, int(iterations))
        if not float(error) <= tol and self.failure is None:
            self.failure = (float(t), float(error), int(iterations))
        if not self.support or self.support[-1][1] != int(nonzeros):
            self.support.append((float(t), int(nonzeros)))
        return np.zeros((), dtype=np.float64)


def _cost(x, y):
    return 0.5 * jnp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)


class _OTSolve(eqx.Module):
    """One warm-started Sinkhorn solve at positions x: the result (the plan and the value)."""

    y: Float[Array, "m d"]
    b: Float[Array, " m"]
    eps: Float[Array, ""]
    div: AbstractDivergence = eqx.field(static=True)
    tol: float = eqx.field(static=True)
    max_iters: int = eqx.field(static=True)
    warm: _WarmStart = eqx.field(static=True)

    def __call__(self, t, x):
        n = x.shape[0]
        a = jnp.full((n,), 1.0 / n)
        cost = _cost(x, self.y)
        shapes = (
            jax.ShapeDtypeStruct((n,), jnp.float64),
            jax.ShapeDtypeStruct(self.b.shape, jnp.float64),
        )
        u0, v0 = io_callback(self.warm.read, shapes, ordered=True)
        held = jax.lax.stop_gradient((a, self.b, cost, self.eps))
        u, v, iterations, error = _iterate(self.div, *held, u0, v0, self.tol, self.max_iters)
        result = _certify(self.div, a, self.b, cost, self.eps, u, v, iterations)
        done = io_callback(
            lambda *args: self.warm.write(*args, self.tol),
            jax.ShapeDtypeStruct((), jnp.float64),
            t,
            u,
            v,
            iterations,
            error,
            jnp.sum(result.plan > 0),
            ordered=True,
        )
        # a solve above tol gives a NaN field: the engine stops there, and the caller raises
        # SinkhornNotConverged from the record
        bad = jnp.where(error <= self.tol, 0.0, jnp.nan) + done
        return result, bad


class _ParticleField(eqx.Module):
    solve: _OTSolve
    d: int = eqx.field(static=True)

    def __call__(self, t, y, args):
        x = y.reshape(-1, self.d)
        result, bad = self.solve(t, x)
        n = x.shape[0]
        plan = result.plan  # envelope: ∇_{x_i} OT = Σ_j π_ij (x_i − y_j)
        grad = plan.sum(1)[:, None] * x - plan @ self.solve.y
        return (-n * grad).reshape(-1) + bad


class _ParticleRecorder(eqx.Module):
    solve: _OTSolve
    d: int = eqx.field(static=True)
    save_positions: bool = eqx.field(static=True)

    def __call__(self, t, y, args):
        result, bad = self.solve(t, y.reshape(-1, self.d))
        out = {
            "loss": result.dual + bad,
            "observables": {
                "nonzeros": jnp.mean(result.plan > 0),
                "mean": jnp.mean(y.reshape(-1, self.d), axis=0),
                "gap": result.gap,
            },
        }
        if self.save_positions:
            out["params"] = y
        return out


def particle_flow(
    x0: Float[Array, "n d"],
    y: Float[Array, "m d"],
    t1: float,
    *,
    eps: float,
    divergence: str | AbstractDivergence = "kl",
    b: Float[Array, " m"] | None = None,
    ts=None,
    tol: float = 1e-12,
    max_iters: int = 100_000,
    settings: SolveSettings | None = None,
    progress: bool = False,
    **overrides,
) -> Trajectory:
    """Integrate the particle flow ẋ_i = −n ∇_{x_i} OT_{ε,f}(μ_x, ν) of μ_x = (1/n) Σ δ_{x_i}
    towards ν = Σ_j b_j δ_{y_j}, with c = ½|x − y|², from x(0) = `x0` to t = `t1`.

    The field is the envelope gradient, ẋ_i = −n Σ_j π_ij (x_i − y_j), π the plan of a
    generalised Sinkhorn solve (`sinkhorn`) at every evaluation, warm-started from the
    previous evaluation's potentials. Since π has row sums 1/n, ẋ_i = −(x_i − n Σ_j π_ij y_j):
    each particle moves toward its barycentric target, and the mean obeys d x̄/dt = −(x̄ − ȳ).

    Runs on the engine of `gradient_flow` (adaptive diffrax solvers, float64, save times,
    stats) with an explicit solver (default "tsit5"; the stiff ones would differentiate
    through the Sinkhorn solve).

    **Arguments:**
    - `x0`: `(n, d)` float64 start positions; `y`: `(m, d)` float64 target points.
    - `t1`: final flow time, > 0.
    - `eps`: ε > 0; `divergence`: a name of `flows.divergences.DIVERGENCES` but "tv".
    - `b`: `(m,)` target weights ≥ 0 summing to 1 (default uniform).
    - `ts`: save times (default `log_times(t1, 100)`); `tol`, `max_iters`: of each Sinkhorn
      solve; `settings` / `**overrides`: `SolveSettings` fields (rtol, atol, solver, ...).

    **Returns:** a `Trajectory` whose `params` are the positions `(T, n, d)` and whose `loss`
    is OT_{ε,f}(μ_x, ν) at the save times; `observables` hold `nonzeros` (the plan's fraction
    of nonzero entries), `mean` `(T, d)` and `gap`; `stats` adds `sinkhorn_solves`,
    `sinkhorn_iterations` (total inner iterations), `sinkhorn_max_iterations` and
    `support_changes` (`[t, nonzeros]` at each field evaluation, rejected trial steps
    included, where the plan's number of nonzeros changed: for χ² and triangular the support
    moves along the flow, and there the field is only Lipschitz).

    **Raises:** `ValueError` naming the argument (shapes, float32, non-finite positions,
    weights, ε ≤ 0 or below the float64 resolution of the start's cost (max|c|/ε > 1e15),
    tol not > 0, max_iters not a positive integer, the divergence, a stiff solver);
    `SinkhornNotConverged` with the flow
    time when an inner solve stops above `tol`; the engine's `MaxStepsReached` and
    `FloatingPointError`.

    **Reference:** Terjék & González-Sánchez, AISTATS 2022 (arXiv 2105.14337); the particle
    flow of an OT cost, e.g. Santambrogio, "Optimal Transport for Applied Mathematicians"
    (2015), Ch. 8."""
    div = get(divergence, legendre=True)
    check_float64("x0", x0)
    check_float64("y", y)
    x0, y = jnp.asarray(x0, dtype=float), jnp.asarray(y, dtype=float)
    if x0.ndim != 2 or y.ndim != 2 or x0.shape[1] != y.shape[1] or 0 in x0.shape or 0 in y.shape:
        raise ValueError(
            f"x0 of shape {x0.shape} and y of shape {y.shape} must be (n, d) and (m, d)"
        )
    check_finite("x0", x0)
    check_finite("y", y)
    n, d = x0.shape
    m = y.shape[0]
    b = jnp.full((m,), 1.0 / m) if b is None else check_weights("b", b)
    if b.shape != (m,):
        raise ValueError(f"b of shape {b.shape} does not match y of shape {y.shape}")
    eps = check_eps(eps)
    # as `sinkhorn`, on the start's cost: eps=1e-18 (or x0 1e9 away) failed after the first
    # solve with "marginal error nan" ("inf")
    check_eps_for_cost(eps, _cost(x0, y), "the start's cost ½|x0_i − y_j|²")
    tol, max_iters = check_limits(tol, max_iters)
    settings_in = settings if settings is not None else SolveSettings(solver="tsit5")
    if settings is None and "solver" not in overrides:
        overrides = {**overrides, "solver": "tsit5"}
    t1, ts, settings = resolve_flow_inputs(t1, ts, settings_in, overrides)
    if settings.name not in EXPLICIT:
        raise ValueError(
            f"solver must be one of {EXPLICIT} for a particle flow, got {settings.name!r}"
        )
    warm = _WarmStart(np.zeros(n), np.zeros(m))
    solve = _OTSolve(y, b, jnp.asarray(eps, dtype=float), div, float(tol), int(max_iters), warm)
    try:
        saved, _, stats = integrate(
            _ParticleField(solve, d),
            x0.reshape(-1),
            ts,
            _ParticleRecorder(solve, d, True),
            settings,
            progress=progress,
            desc="particle flow",
        )
    except (FloatingPointError, RuntimeError) as error:
        if warm.failure is not None:
            t, reached, iterations = warm.failure
            raise SinkhornNotConverged(
                _message(div.name, f"{float(eps):g}", tol, max_iters, reached, schedule=False)
                + f" (at flow time t={t:.6g})",
                float(eps),
                div.name,
                reached,
                iterations,
            ) from error
        raise
    positions = np.asarray(saved["params"]).reshape(len(ts), n, d)
    traj = trajectory(
        ts,
        positions,
        saved,
        stats,
        {**settings.to_dict(), "t1": t1, "eps": float(eps), "divergence": div.name},
    )
    traj.stats.update(
        sinkhorn_solves=warm.solves,
        sinkhorn_iterations=warm.iterations,
        sinkhorn_max_iterations=warm.most,
        support_changes=[list(s) for s in warm.support[1:]],
    )
    return traj
