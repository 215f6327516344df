"""The one divergence rule of gradient descent, shared by `flows.gradient_descent` and
`flows.large_steps.optimize` (their `DivergenceWarning`) and `experiments.eos` (where GD is
stopped).

Divergence is not a spike: the catapult (Lewkowycz et al. 2020) raises the loss ×1,745 on
the uv model at ηλ0 = 3 and then converges. Nor is it a loss that falls (a shifted or
unbounded-below objective). The rule: a loss that is not finite, or an excess over the
start L_k − L_0 above `GROWTH` times the scale max(|L_0|, smallest normal float) (> 0 for
every L_0, negative ones included) that does not come back below it within `WINDOW` steps.
"""

import dataclasses
import warnings

import numpy as np

from ._checks import user_stacklevel

#: An excess L_k − L_0 above GROWTH·max(|L_0|, tiny) opens an excursion ...
GROWTH = 1e3
#: ... which is divergence if it has not come back below within WINDOW steps.
WINDOW = 100


@dataclasses.dataclass(frozen=True)
class Diverged:
    """Where the rule declared divergence: `step`, `value` (the loss there, None when not
    finite) where the excursion began (or the first non-finite step), `confirmed_step` and
    `confirmed_value` where it was decided, and `reason`, one line."""

    step: int
    value: float | None
    confirmed_step: int
    confirmed_value: float | None
    reason: str


class DivergenceRule:
    """Feed the loss at increasing steps (`update`); it returns a `Diverged` once the loss is
    not finite, or once an excursion above `GROWTH`·scale has lasted `WINDOW` steps without
    a fed value coming back below. `check_step` is the step at which an open excursion must
    next be looked at (None when none is open): a caller whose saves are sparse evaluates
    the loss there, and one whose run ends first steps on to it (the window is part of the
    rule, not of the horizon)."""

    def __init__(self, loss0: float, growth: float = GROWTH, window: int = WINDOW):
        self.loss0, self.growth, self.window = float(loss0), float(growth), int(window)
        self.scale = max(abs(self.loss0), float(np.finfo(np.float64).tiny))
        self.start = None  # (step, value) where the open excursion began

    def ratio(self, value: float) -> float:
        """The excess (L − L_0)/scale."""
        return (value - self.loss0) / self.scale

    @property
    def check_step(self) -> int | None:
        return None if self.start is None else self.start[0] + self.window

    def describe(self) -> str:
        return (
            f"the loss exceeded its start L(0) = {self.loss0:.6g} by more than {self.growth:g} "
            f"times max(|L(0)|, tiny) and did not come back within {self.window} steps"
        )

    def update(self, step: int, value: float) -> Diverged | None:
        value = float(value)
        if not np.isfinite(value):
            first, first_value = self.start or (step, None)
            return Diverged(
                first, first_value, step, None,
                f"the loss became non-finite at step {step}"
                + (f", above {self.growth:g}x its start since step {first}" if self.start else ""),
            )  # fmt: skip
        if self.ratio(value) <= self.growth:
            self.start = None  # came back: a spike, not divergence
            return None
        if self.start is None:
            self.start = (step, value)
        if step >= self.start[0] + self.window:
            first, first_value = self.start
            return Diverged(
                first, first_value, step, value,
                f"{self.describe()} (step {first}: {first_value:.6g}; step {step}: {value:.6g})",
            )  # fmt: skip
        return None


class DivergenceWarning(RuntimeWarning):
    """Gradient descent diverges by the rule of `flows._divergence` (shared with
    `experiments.eos` and `flows.large_steps.optimize`): its loss rose more than `GROWTH`
    (1e3) times max(|L(0)|, tiny) above L(0) and did not come back below within `WINDOW`
    (100) steps; η is above the stability limit 2/λ_max of the Hessian (given at most once
    per call, naming η, the step where the excursion began and its loss; a later non-finite
    loss or iterate is a `FloatingPointError`). A spike that comes back (the catapult) and a
    loss that falls (below 0 included) are not divergence."""


def since(rule) -> str:
    """ ", after rising to ... at step j (...)" while an excursion is open."""
    if rule is None or rule.start is None:
        return ""
    j, value = rule.start
    ratio = rule.ratio(value)
    return f", after rising to {value:.6g} at step {j} ({ratio:.3g} times |L(0)| above L(0))"


def warn_diverged(name: str, eta: float, rule, k, verdict, limit: str) -> None:
    """The `DivergenceWarning` of a run called `name` (`gradient_descent`, `optimize`, the
    game maps), naming η, the excursion's step and loss; `limit` says which stability limit
    η is above. It points at the user's call, the first frame outside `flows`."""
    j, value = (verdict.step, verdict.value) if verdict is not None else rule.start
    then = (
        "became non-finite"
        if verdict is None or verdict.confirmed_value is None
        else (f"was {verdict.confirmed_value:.6g}")
    )
    warnings.warn(
        f"{name} diverges: the loss rose from {rule.loss0:.6g} to {value:.6g} by step "
        f"{j} (t={j * eta:.6g}), {rule.ratio(value):.3g} times |L(0)| above L(0), and did not "
        f"come back below {rule.growth:g} times within {rule.window} steps (it {then} at step "
        f"{k}); eta={eta} is above {limit}: reduce eta",
        DivergenceWarning,
        stacklevel=user_stacklevel(),
    )


def diverged(message: str, records: list, steps, result) -> FloatingPointError:
    """The error of a run that became non-finite, with `partial` (the `Trajectory` of the
    finite saves before it, or None), so that a caller that detects divergence itself keeps
    what was computed."""
    error = FloatingPointError(message)
    error.partial = result(records, steps[: len(records)]) if records else None
    return error
