"""The lazy pair of a two-layer net with a kinked activation (ReLU, leaky ReLU, |s|).

F_α is not smooth there: its exact flow slides along the kink surfaces, and a smooth solver
chatters. `lazy_comparison` then integrates the nonlinear flow by `filippov_flow` (its
Filippov solution, kinks located as events) and the linear branch ū' = −Jᵀ∇R(ȳ), which is
smooth, by the usual solver, both saved at the same times. The gaps are measured afterwards
from the saved weights by the same measurement as the joint solve (`_lazy._Measure`, direct
form), so the two paths report the same quantities.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from models import partition

from .._integrate import integrate
from .._settings import SolveSettings
from .._solver._solvers import EXPLICIT
from ..nonsmooth._filippov import filippov_flow
from ..nonsmooth._kinks import two_layer_form


def kinked_form(model):
    """The canonical two-layer form of `model` when `filippov_flow` integrates it (a two-layer
    net, or a symmetrised one, with a piecewise-linear activation), else None."""
    try:
        return two_layer_form(model)
    except ValueError:
        return None


def check_kinked_solver(settings: SolveSettings) -> None:
    """`filippov_flow` solves each piece with an explicit method: refuse an implicit one."""
    if settings.name not in ("auto", *EXPLICIT):
        raise ValueError(
            f"solver: a kinked activation is integrated by "
            "flows.nonsmooth.filippov_flow, which solves "
            f"each piece with an explicit Runge–Kutta method {EXPLICIT} ('auto' means tsit5); "
            f"got {settings.name!r}"
        )


class _Identity(eqx.Module):
    def __call__(self, t, y, args):
        return y


#: The smallest relative tolerance given to `filippov_flow` (float64 resolves w to ~1e-16).
MIN_RTOL = 1e-14


def displacement_tolerances(settings: SolveSettings, alpha: float) -> SolveSettings:
    """`settings` with rtol/α and atol/α (rtol at least `MIN_RTOL`) for the Filippov solve.

    `filippov_flow` integrates w, whose displacement from w0 is O(1/α); the joint solve
    integrates the displacement u = α(w − w0) and the scaled gap. Dividing the tolerances by
    α asks the same accuracy of u as the joint solve does (down to float64's resolution of w).
    """
    if alpha <= 1:
        return settings
    return settings.replace(rtol=max(settings.rtol / alpha, MIN_RTOL), atol=settings.atol / alpha)


@eqx.filter_jit
def _measure_all(measure, ubar, d):
    """`measure` at every save time; α is traced inside it, so every α reuses one compilation."""
    return jax.vmap(lambda ub, dd: measure(0.0, (ub, dd), None))(ubar, d)


def kinked_pair(model, data, field, linear_field, measure, ts, settings, loss, *, progress,
                checkpoint):  # fmt: skip
    """Solve both branches of one α and measure them at `ts`.

    Returns `(saved, stats)`: `measure`'s outputs stacked over the save times (numpy), and
    the Filippov solve's counters (steps, events, crossings, sliding entries and exits, the
    number of sliding pre-activations at each save time) with the linear solve's under
    `"linearized"`. The linear branch is not checkpointed: it is cheap, and is solved again
    on resume; the Filippov solve resumes from `checkpoint`.
    """
    alpha = float(field.alpha)
    zeros = jnp.zeros_like(field.w0)
    ubar, _, lin_stats = integrate(
        linear_field, zeros, ts, _Identity(), settings, progress=progress,
        desc=f"alpha={alpha:.3g} linearised",
    )  # fmt: skip
    traj = filippov_flow(
        model, data, float(ts[-1]), loss=loss, alpha=alpha, settings=displacement_tolerances(
            settings, alpha), ts=ts,
        save_params=True, progress=progress, checkpoint=checkpoint,
    )  # fmt: skip
    w = jax.vmap(field.spec.ravel)(partition(traj.params)[0])
    u = alpha * (w - field.w0)
    ubar = jnp.asarray(ubar)
    saved = jax.tree.map(np.asarray, _measure_all(measure, ubar, alpha * (u - ubar)))
    stats = {**traj.stats, "linearized": lin_stats.to_dict()}
    return saved, stats
