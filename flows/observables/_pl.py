"""Polyak–Łojasiewicz observables of any gradient flow: the PL quotient
μ(w) = ‖∇F(w)‖²/(2(F(w) − F*)) and the distance from initialisation ‖w − w0‖.

Both are `observables=` of `flows.gradient_flow` (and `gradient_descent`), and plain
functions of a parameter pytree, so they can also be evaluated afterwards on saved weights.
μ is recorded as its two parts, which are always finite; `pl_constant` divides them and masks
the times where F(w) − F* ≤ 0, where μ is undefined, instead of writing NaN or inf.
"""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from models import partition

from .._checks import check_finite, check_number


def pl_quotient(objective: Callable, *, f_star: float = 0.0) -> Callable[[Any], dict]:
    """The parts of the PL quotient μ(w) = ‖∇F(w)‖²/(2(F(w) − F*)), as an observable.

    **Arguments:**
    - `objective`: F, a scalar function of the parameter pytree (the `loss` given to
      `gradient_flow`); the gradient is taken in its trainable arrays (`models.partition`).
    - `f_star`: F*, a finite lower bound of F (0 when the data can be interpolated with the
      squared loss).

    **Returns:** `fn(params) -> {"grad_norm_sq": ‖∇F(w)‖², "gap": F(w) − F*}` (scalars);
    pass the recorded dict to `pl_constant` for μ(t).

    **Raises:** `ValueError` if `f_star` is not a finite number (a str or bool included);
    `TypeError` naming `objective` if it is not callable.

    **Reference:** Polyak 1963; Karimi, Nutini & Schmidt 2016 (the PL inequality
    ‖∇F‖² ≥ 2μ(F − F*)); Liu, Zhu & Belkin 2022, "Loss landscapes and optimization in
    over-parameterized non-linear systems and neural networks", §4 (for the squared loss
    ‖∇F(w)‖² ≥ λ_min(Σ(w))·2F(w), Σ = JJᵀ the NTK Gram).
    """
    if not callable(objective):  # failed only when first recorded, deep in the solve
        raise TypeError(
            f"objective must be a function of the parameters, got {type(objective).__name__}"
        )
    f_star = check_number("f_star", f_star)  # '0' was taken as 0, True as 1

    def parts(params):
        trainable, static = partition(params)
        value, grad = jax.value_and_grad(lambda w: objective(eqx.combine(w, static)))(trainable)
        grad_sq = sum(jnp.vdot(g, g) for g in jax.tree.leaves(grad))
        return {"grad_norm_sq": grad_sq, "gap": value - f_star}

    return parts


def pl_constant(record: dict, *, floor: float = 0.0) -> np.ma.MaskedArray:
    """μ(t) = ‖∇F‖²/(2(F − F*)) from what `pl_quotient` recorded, masked where undefined.

    **Arguments:**
    - `record`: `{"grad_norm_sq": (T,), "gap": (T,)}`, e.g.
      `trajectory.observables["pl"]`.
    - `floor`: μ is masked where F − F* ≤ `floor` (≥ 0). With F* = 0 and the squared loss,
      F > 0 is computed to full relative precision and μ is exact down to F's smallest
      positive value: keep 0. With F* > 0, F − F* cancels; set `floor` to a few eps·F*.

    **Returns:** a numpy masked array of shape `(T,)`: μ where F − F* > `floor`, masked
    elsewhere (`np.ma.count_masked` counts them; `.min()` is the infimum over the defined
    times and is `np.ma.masked` when none is).

    **Raises:** `ValueError` if `record` lacks the two entries, their shapes differ, they hold
    non-finite values, or `floor` is negative.
    """
    if not isinstance(record, dict) or not {"grad_norm_sq", "gap"} <= set(record):
        raise ValueError("record must be the dict recorded by pl_quotient (grad_norm_sq, gap)")
    grad_sq = np.asarray(record["grad_norm_sq"], dtype=np.float64)
    gap = np.asarray(record["gap"], dtype=np.float64)
    if grad_sq.shape != gap.shape:
        raise ValueError(f"grad_norm_sq {grad_sq.shape} and gap {gap.shape} differ in shape")
    if not (np.all(np.isfinite(grad_sq)) and np.all(np.isfinite(gap))):
        raise ValueError("record holds non-finite values: the flow itself was not finite")
    floor = float(floor)
    if not (np.isfinite(floor) and floor >= 0):
        raise ValueError(f"floor must be finite and >= 0, got {floor}")
    defined = gap > floor
    mu = np.divide(grad_sq, 2 * gap, out=np.zeros_like(gap), where=defined)
    return np.ma.masked_array(mu, mask=~defined)


def distance_from_init(params0) -> Callable[[Any], jax.Array]:
    """The distance ‖w − w0‖ travelled from initialisation, as an observable.

    **Arguments:** `params0`: the parameter pytree at t = 0; its trainable arrays
    (`models.partition`) are w0.

    **Returns:** `fn(params) -> scalar`, the Euclidean norm of the difference of all trainable
    arrays (the flat parameter vector's norm). Build it once and reuse it: it is hashed by
    identity.

    **Raises:** `ValueError` if `params0` has no trainable arrays or non-finite ones; `fn`
    raises `ValueError` naming `params` when their trainable arrays differ from `params0`'s
    in tree structure (keys, fields) or in shapes.

    **Reference:** Chizat, Oyallon & Bach 2019, Thm 2.2 (sup_t ‖w(t) − w0‖ ≤ √(T·F(w0))).
    """
    trainable0 = partition(params0)[0]
    leaves0 = [jnp.asarray(leaf) for leaf in jax.tree.leaves(trainable0)]
    if not leaves0:
        raise ValueError("params0 has no trainable (inexact array) leaves")
    check_finite("params0", trainable0)
    structure0 = jax.tree.structure(trainable0)
    shapes0 = [leaf.shape for leaf in leaves0]

    def distance(params):
        trainable = partition(params)[0]
        structure = jax.tree.structure(trainable)
        if structure != structure0:
            raise ValueError(
                f"params must have the tree structure of params0: got {structure}, "
                f"expected {structure0}"
            )
        leaves = jax.tree.leaves(trainable)
        shapes = [jnp.shape(leaf) for leaf in leaves]
        if shapes != shapes0:
            raise ValueError(
                f"params must have the array shapes of params0: got {shapes}, expected {shapes0}"
            )
        return jnp.sqrt(sum(jnp.sum((a - a0) ** 2) for a, a0 in zip(leaves, leaves0)))

    return distance
