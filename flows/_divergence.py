"""When a discrete run (gradient descent, any optimizer) has diverged: the one rule that
`gradient_descent` and `flows.large_steps.optimize` share, checked at every save."""

import warnings

import numpy as np

#: A loss above this multiple of |L(0)| is divergence (`DivergenceWarning`).
DIVERGENCE_GROWTH = 1e10


class DivergenceWarning(RuntimeWarning):
    """Gradient descent's loss grew by more than `DIVERGENCE_GROWTH` (1e10) times its initial
    value: η is above the stability limit 2/λ_max of the Hessian and the iterates diverge
    (given at most once per call, with η and the step; a later non-finite loss or iterate is
    a `FloatingPointError`)."""


def diverged(message: str, records: list, steps, result) -> FloatingPointError:
    """The error of a run that became non-finite, with `step` (the first step known bad) and
    `partial` (the `Trajectory` of the finite saves before it, or None), so that a caller that
    detects divergence itself keeps what was computed."""
    error = FloatingPointError(message)
    error.partial = result(records, steps[: len(records)]) if records else None
    return error


class DivergenceWatch:
    """The checks at each save of a run called `name` with step `eta` (flow time per step):
    `iterate` before a save is recorded, `loss` on its loss. Each returns the message of the
    `FloatingPointError` to raise, or None; `loss` warns `DivergenceWarning` once."""

    def __init__(self, name: str, eta: float, first_step: int, advice: str = ""):
        self.name, self.eta, self.first_step = name, eta, first_step
        self.advice = f"reduce eta (got {eta}){advice}"
        self.loss0, self.warned = None, False

    def iterate(self, k: int, last_loss: float) -> str:
        """The message of an iterate first non-finite at step `k`, the loss `last_loss` at
        step k − 1."""
        return (
            f"{self.name} became non-finite at step {k} (t={k * self.eta:.6g}): the iterate "
            f"holds NaN or inf (the loss was {last_loss:.6g} at step {k - 1}); {self.advice}"
        )

    def loss(self, value: float, k: int) -> str | None:
        self.loss0 = value if self.loss0 is None else self.loss0
        if not np.isfinite(value) and k == 0:  # said "reduce eta": no step was taken
            return (
                f"the loss is {value} at the start, t=0, before any step (not a matter of "
                "eta); check the loss, the data scale and the initialisation"
            )
        if not np.isfinite(value):
            return (
                f"{self.name} became non-finite at step {k} (t={k * self.eta:.6g}): the loss "
                f"is {value} (it was {self.loss0:.6g} at step {self.first_step}); {self.advice}"
            )
        if not self.warned and abs(value) > DIVERGENCE_GROWTH * abs(self.loss0) > 0:
            self.warned = True
            warnings.warn(
                f"{self.name} diverges: the loss grew {abs(value / self.loss0):.3g} times "
                f"(from {self.loss0:.6g} to {value:.6g}) by step {k} (t={k * self.eta:.6g}); "
                f"eta={self.eta} is above the stability limit 2/λ_max of the Hessian: reduce "
                "eta",
                DivergenceWarning,
                stacklevel=4,
            )
        return None
