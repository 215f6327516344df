"""What went wrong in a solve, said with the time reached and what to change.

Three different things stop a solve early, and the message says which: the step size
collapsed while the state stayed bounded (a kink, or stiffness beyond the solver), the state
really grew (a blow-up), or it became non-finite. The advice for an exhausted step budget
fits the solver in use and the rejected-step rate."""

from ._solver._solvers import EXPONENTIAL, IMPLICIT, SEMILINEAR, STABILIZED

#: Exponential integrators, whose steps stiffness does not limit: exprb32, and exprk4 on the
#: semilinear fields that carry their stiff linear part (the lazy pair).
_EXPONENTIAL = EXPONENTIAL + SEMILINEAR

#: Below dtmin·max(1, t) a proposed step counts as collapsed (t the time reached): a few
#: hundred float64 ulps of t, where further steps cannot advance the time meaningfully.
DTMIN_RELATIVE = 1e-13
#: ‖dy/dt‖ below this multiple of max(1, ‖y‖) is rest at float64 round-off.
AT_REST = 1e3 * 2.2e-16
#: A state norm above this multiple of max(1, its initial norm) counts as growing.
GROWTH = 10.0
#: ... and so does a state that, at its speed, would cover its own norm max(1, ‖y‖) within
#: this many of the collapsed steps: a finite-time blow-up caught before the norm grew
#: (θ' = 2θe^{θ²} from θ = 1 collapsed to dt = 8.8e-14 at ‖y‖ = 4.9 with ‖dy/dt‖ = 1.1e11,
#: 500 steps, and was called "not a blow-up"); at a kink or stiffness the state moves at its
#: usual speed, ‖y‖/‖dy/dt‖ ≳ 1e-3 against steps below 1e-13·max(1, t).
ESCAPE_STEPS = 1e6


class MaxStepsReached(RuntimeError):
    """The step budget `max_steps` ran out before the final time. Each diffrax call gets
    what is left of the budget, so a solve stops after at most `max_steps` solver steps
    (trial steps of "auto" aside). The message gives the time reached and advice that fits
    the solver in use.

    **Attributes:**
    - `t`: the flow time reached (float, same units as the ODE): where the solve stopped,
      or 0.0 when the budget is refused before any work (`gradient_descent`).
    - `stats` (set by `gradient_flow` and `lazy_comparison`): the `SolveStats` (a dict) of
      the work done, as on a `FloatingPointError` raised by a solve.
    """

    def __init__(self, message: str, t: float):
        super().__init__(message)
        self.t = float(t)

    def __reduce__(self):  # pickle (a sweep worker's error) with `t` and `stats`
        return type(self), (self.args[0], self.t), self.__dict__


#: Below this many steps a budget says nothing about the flow (no rate of rejected steps, no
#: sign of stiffness): the only fitting advice is a larger budget.
FEW_STEPS = 20


def max_steps_advice(phase: str, settings, stats) -> str:
    """What to change after the budget ran out, for the solver `phase` in use: each cause
    said once, and only what the steps taken can show (no rate of rejected steps and no
    guess at stiffness after fewer than `FEW_STEPS` steps)."""
    few = stats.num_steps < FEW_STEPS
    advice = [f"raise max_steps (used {stats.num_steps})"]
    rejected = stats.num_rejected_steps / max(1, stats.num_steps)
    kinked = rejected > 0.3 and not few
    if kinked:
        advice.append(
            f"{rejected:.0%} of the {stats.num_steps} steps were rejected, which points to a "
            "non-smooth objective (kinks such as ReLU's), where every solver chatters: a "
            "smooth activation (gelu, softplus) avoids it"
        )
    if phase in IMPLICIT:
        advice.append(
            f"solver={phase!r} is implicit already, so stiffness does not limit its steps; each "
            f"Newton–GMRES solve is capped at gmres_max_iters={settings.kvaerno5.gmres_max_iters} "
            f"Hessian-vector products ({stats.jvp_evals} used in all), and a solve that "
            "exhausts it rejects the step: raise gmres_max_iters if the flow is smooth"
        )
    elif phase in _EXPONENTIAL:
        advice.append(
            f"solver={phase!r} is exponential, so stiffness does not limit its steps; its "
            "steps are limited by the nonlinearity of the flow, where a higher-order solver "
            "('kvaerno5', or 'tsit5' where the flow is not stiff) takes longer ones"
        )
    elif phase in STABILIZED and not few:
        advice.append(
            f"solver={phase!r} is stabilized, so stiffness costs it stages (about √(hρ) per "
            "step), not steps; its steps are limited by its order 2, where a higher-order "
            "solver ('tsit5' where the flow is not stiff, 'exprb32' or 'kvaerno5' where it "
            "is) takes longer ones"
        )
    elif few:
        advice[0] += ": so few steps say nothing yet about the flow (stiffness, kinks)"
    else:
        advice.append(
            f"if the flow is stiff (solver={phase!r} is explicit, so its steps are limited by "
            "stability), use solver='auto', 'exprb32' or 'kvaerno5'"
            + (
                ""
                if kinked
                else "; if the objective has kinks (ReLU), every solver chatters "
                "there and a smooth activation avoids it"
            )
        )
    if settings.rtol < 1e-6 and not few:
        advice.append(f"or loosen rtol={settings.rtol:g}")
    return "; ".join(advice)


def collapse_message(
    phase: str, settings, t: float, dt: float, norm0: float, norm: float, speed: float
) -> str:
    """Message for a step size that fell below the floor at time `t`: a blow-up if the state
    norm grew or its speed would cover it within `ESCAPE_STEPS` steps of `dt`, rest at
    round-off if it stopped moving, otherwise a kink or stiffness (or, for an implicit
    solver, Newton–GMRES solves that fail). `speed` is ‖dy/dt‖ at `t`."""
    where = (
        f"the step size collapsed to {dt:.3g} at t={t:.6g} (floor "
        f"{DTMIN_RELATIVE:g}·max(1, t)); ‖y‖ = {norm0:.3g} at t=0 and {norm:.3g} now, "
        f"‖dy/dt‖ = {speed:.3g}"
    )
    if not norm <= GROWTH * max(1.0, norm0):  # also NaN
        return f"the trajectory is blowing up: {where}"
    if speed <= AT_REST * max(1.0, norm):
        return (
            f"{where}: the flow has come to rest to round-off, and the steps it would need at "
            f"this t (≥ {DTMIN_RELATIVE:g}·t) are beyond what solver={phase!r} can take in "
            "float64; the state reached is the solution to round-off unless the objective has "
            "a slower mode: a t1 nearer the slowest time scale avoids this"
        )
    if max(1.0, norm) < ESCAPE_STEPS * dt * speed:
        return (
            f"the trajectory is blowing up: {where}, so the state would cover its own norm in "
            f"{max(1.0, norm) / speed:.2g} time units (a finite-time blow-up of the flow)"
        )
    if phase in IMPLICIT:
        advice = (
            "a smooth activation (gelu, softplus) avoids kinks; if the flow is smooth, its "
            f"Newton–GMRES solves may be failing: each is capped at gmres_max_iters="
            f"{settings.kvaerno5.gmres_max_iters} Hessian-vector products"
        )
    elif phase in _EXPONENTIAL:
        advice = (
            f"solver={phase!r} follows stiffness exactly, so a kink is the likely cause: a "
            "smooth activation (gelu, softplus) or flows.nonsmooth.filippov_flow for "
            "ReLU-family nets"
        )
    else:
        advice = "use solver='auto', 'exprb32' or 'kvaerno5' if the flow is stiff"
    return (
        f"{where}: the state stayed bounded, so this is not a blow-up; the vector field is "
        f"probably not smooth there (a kink, e.g. ReLU) or stiffer than solver={phase!r} can "
        f"follow; {advice}"
    )
