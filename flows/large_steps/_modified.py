"""Modified flows of gradient descent: the ODEs whose exact solutions GD with step η follows to
higher order in η (backward error analysis of explicit Euler)."""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import numpy as np

from .._checks import check_positive
from .._failures import MaxStepsReached
from .._flow import Trajectory
from .._settings import SolveSettings
from ._edge_warning import warn_above_edge
from ._field_flow import field_flow
from ._hessian import flat_function, hvp, third

_EPS = float(np.finfo(np.float64).eps)


class _ModifiedField(eqx.Module):
    loss: Callable = eqx.field(static=True)
    static: Any
    spec: Any = eqx.field(static=True)
    order: int = eqx.field(static=True)
    eta: jax.Array

    @property
    def symmetric_jacobian(self) -> bool:
        # Order 1 is the gradient of L + (η/4)‖∇L‖²; order 2's term is not a gradient.
        return self.order < 2

    def __call__(self, t, w, args):
        f = flat_function(self.loss, self.spec, self.static)
        g = jax.grad(f)(w)
        if self.order == 0:
            return -g
        Hg = hvp(f, w, g)
        out = -g - (self.eta / 2) * Hg
        if self.order >= 2:
            out = out - self.eta**2 * (hvp(f, w, Hg) / 3 + third(f, w, g, g) / 12)
        return out


def modified_flow(
    loss: Callable,
    params0: Any,
    t1: float,
    *,
    eta: float,
    order: int = 1,
    settings: SolveSettings | None = None,
    ts=None,
    observables: dict | None = None,
    save_params: bool = True,
    progress: bool = False,
    checkpoint: str | None = None,
    **overrides,
) -> Trajectory:
    """The modified flow of gradient descent with step η, to `order` in η.

    - `order=0`: the gradient flow w' = −∇L;
    - `order=1`: w' = −∇L − (η/2)H∇L, the flow of L + (η/4)‖∇L‖² (implicit gradient
      regularisation);
    - `order=2`: adds −η²[(1/3)H²∇L + (1/12)∇³L[∇L, ∇L]].

    Matrix-free: Hessian-vector products and, for order 2, the jvp of one (∇³L[g, g]); solved
    by the engine of `gradient_flow`, so every solver and setting of `gradient_flow` applies.
    Before the edge of stability (ηλ_max < 1 along the path), |GD − flow| at a fixed time is
    O(η^(order+1)). `Trajectory.loss` is L itself, not the modified objective.

    **Arguments:** as `gradient_flow`, and
    - `eta`: the step η > 0 of the gradient descent being modelled, in flow-time units;
    - `order`: 0, 1 or 2.

    **Returns:** a `Trajectory` (time in flow units, step k of GD at t = kη); `config` holds
    `eta` and `order`.

    **Raises:** `ValueError` naming `eta` (not finite and > 0, or so large that the
    correction is over 1/ε times the gradient at `params0`: ηλ_max(0)/2 > 4.5e15) or `order`
    (not 0, 1, 2); otherwise as `gradient_flow` (`TypeError` naming `loss` when it is not a
    float scalar), a failed solve's message led by η·λ_max(0) where it is > 1 (the
    correction then stiffens the flow by about that factor).
    `flows.large_steps.EdgeOfStabilityWarning` (once) where order ≥ 1 and ηλ_max > 1 at
    `params0` (λ_max by 20 Lanczos products, a lower bound), naming η, λ_max and ηλ_max.

    **Reference:** Barrett & Dherin 2021, "Implicit gradient regularization", ICLR, Thm 3.1
    (order 1); Hairer, Lubich & Wanner, Geometric Numerical Integration, §IX.1 (the modified
    equation of explicit Euler, f − (h/2)f′f + h²((1/3)f′f′f + (1/12)f″(f, f)), here
    f = −∇L).
    """
    eta = check_positive("eta", eta)
    if isinstance(order, bool) or order not in (0, 1, 2):
        raise ValueError(f"order must be 0, 1 or 2, got {order!r}")

    lam = np.nan
    if order >= 1:
        lam = warn_above_edge(
            "modified_flow", loss, params0, eta, 1.0, "λ_max(0)",
            "the modified flow's premise (ηλ_max < 1, where backward error analysis of "
            "gradient descent holds) fails at params0; GD departs from it at every order",
        )  # fmt: skip
        if eta * lam / 2 > 1 / _EPS:  # NaN (no estimate) compares False
            raise ValueError(
                f"eta: the correction (η/2)H∇L is {eta * lam / 2:.3g} times the gradient at "
                f"params0 (eta = {eta:g}, λ_max(0) = {lam:.4g}), past 1/ε = {1 / _EPS:.3g}: "
                "−∇L is lost in its round-off; the modified flow models gradient descent for "
                f"eta < 1/λ_max(0) = {1 / lam:.3g}"
            )

    def make_field(loss, static, spec):
        return _ModifiedField(loss, static, spec, order, jax.numpy.asarray(eta))

    try:
        return field_flow(
            make_field, loss, params0, t1, settings=settings, ts=ts, observables=observables,
            save_params=save_params, progress=progress, checkpoint=checkpoint,
            desc=f"modified flow (order {order})", config={"eta": eta, "order": order},
            overrides=overrides,
        )  # fmt: skip
    except (MaxStepsReached, FloatingPointError) as error:
        if eta * lam > 1 and error.args:  # NaN (no estimate, order 0) compares False
            error.args = (f"{_past_edge(eta, lam)}; {error.args[0]}", *error.args[1:])
        raise


def _past_edge(eta: float, lam: float) -> str:
    return (
        f"eta = {eta:g} puts eta·λ_max(0) = {eta * lam:.3g} past 1 (λ_max(0) = {lam:.4g}): "
        f"the correction (η/2)H∇L is about {eta * lam / 2:.3g} times the gradient and "
        f"stiffens the flow by that factor; a step eta < 1/λ_max(0) = {1 / lam:.3g} is "
        "where the modified flow models gradient descent"
    )
