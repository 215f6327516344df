"""A PID step-size controller that remembers its last proposed step across diffrax calls and
counts its steps against a traced budget."""

from collections.abc import Callable

import diffrax as dfx
import jax
import jax.numpy as jnp
import optimistix as optx


class StepMemoryPID(dfx.AbstractAdaptiveStepSizeController):
    """diffrax's `PIDController`, with the last proposed step size kept in the controller
    state, so that a chunked solve can resume with it (`dt0` of the next chunk) instead of
    re-estimating a step (2 evaluations) and ramping up again in every chunk. A proposed step
    below `dtmin`·max(1, |t|), t the current time, that does not follow a step cut short at the
    end of the interval ends the solve with `dt_min_reached`: the step size collapsed. The
    floor is relative to the time reached, not to the end of the interval, so that a chunk
    spanning many decades takes its ordinary small first steps.

    The step budget of one diffrax call is `budget` (a traced integer, not diffrax's static
    `max_steps`, so that a new budget reuses the compilation): the state counts the steps
    (accepted and rejected), and the step that uses the budget up before `t1` ends the solve
    with `max_steps_reached`, as diffrax's own `max_steps` would."""

    pid: dfx.PIDController
    rtol: float
    atol: float
    dtmin: float
    t1: jax.Array
    budget: jax.Array
    norm: Callable = optx.rms_norm

    def wrap(self, direction):
        return self

    def init(self, terms, t0, t1, y0, dt0, args, func, error_order):
        tnext, state = self.pid.init(terms, t0, t1, y0, dt0, args, func, error_order)
        return tnext, (state, tnext - t0, jnp.zeros((), jnp.int32))

    def adapt_step_size(self, t0, t1, y0, y1_candidate, args, y_error, error_order, state):
        keep, next_t0, next_t1, jump, pid_state, result = self.pid.adapt_step_size(
            t0, t1, y0, y1_candidate, args, y_error, error_order, state[0]
        )
        proposal, previous = next_t1 - next_t0, state[1]
        # A step cut short to land on the end of the interval says nothing about the step
        # size the solution allows: keep the larger proposal across it.
        clipped = (t1 - t0) < previous * (1 - 1e-9)
        remembered = jnp.where(clipped, jnp.maximum(proposal, previous), proposal)
        # The step size collapsing (not merely a short last step): a blow-up, a kink the
        # controller cannot step over, or stiffness beyond the solver. The caller tells which.
        floor = self.dtmin * jnp.maximum(1.0, jnp.abs(next_t0))
        collapsed = jnp.logical_and(jnp.logical_not(clipped), proposal < floor)
        result = dfx.RESULTS.where(collapsed, dfx.RESULTS.dt_min_reached, result)
        steps = state[2] + 1
        spent = jnp.logical_and(steps >= self.budget, next_t0 < self.t1)
        result = dfx.RESULTS.where(
            jnp.logical_and(spent, dfx.is_successful(result)), dfx.RESULTS.max_steps_reached, result
        )
        return keep, next_t0, next_t1, jump, (pid_state, remembered, steps), result


def step_memory_pid(rtol, atol, dtmin, t1, budget) -> StepMemoryPID:
    """A `StepMemoryPID` for a call that ends at `t1` with at most `budget` steps."""
    pid = dfx.PIDController(rtol=rtol, atol=atol)
    return StepMemoryPID(pid, rtol, atol, dtmin, jnp.asarray(t1), jnp.asarray(budget, jnp.int32))
