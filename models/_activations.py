"""Activation functions, as hashable callables safe to store in static fields."""

import dataclasses
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike


@dataclasses.dataclass(frozen=True)
class AbsFamily:
    """φ(s) = a·s + b·|s|; hashable, compared by value.

    **Reference:** Terjék & González-Sánchez 2025 (ReLU: a = b = ½; absolute value: a = 0, b = 1).
    """

    a: float
    b: float

    def __call__(self, s: ArrayLike) -> Array:
        return self.a * s + self.b * jnp.abs(s)


def _gelu(s: ArrayLike) -> Array:
    return jax.nn.gelu(s, approximate=False)


_NAMED: dict[str, Callable[[ArrayLike], Array]] = {
    "tanh": jnp.tanh,
    "gelu": _gelu,
    "softplus": jax.nn.softplus,
    # The kinked ones are members of the family, so that their kink slopes are known.
    "relu": AbsFamily(0.5, 0.5),
    "abs": AbsFamily(0.0, 1.0),
    "leaky_relu": AbsFamily(1.01 / 2, 0.99 / 2),
}


def abs_family(a: float, b: float) -> AbsFamily:
    """The activation φ(s) = a·s + b·|s|.

    **Arguments:**

    - `a`, `b`: finite real numbers. ReLU is (½, ½), absolute value (0, 1), leaky ReLU with
      slope c is ((1 + c)/2, (1 − c)/2).

    **Returns:**

    A hashable callable acting elementwise on arrays.

    **Raises:**

    `ValueError` if `a` or `b` is not a finite number.

    **Reference:** Terjék & González-Sánchez 2025, the φ(s) = a·s + b·|s| family.
    """
    for name, value in (("a", a), ("b", b)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    return AbsFamily(float(a), float(b))


def activation(name_or_callable: str | Callable[[ArrayLike], Array]) -> Callable:
    """Resolve an activation by name, or pass a callable through.

    **Arguments:**

    - `name_or_callable`: one of "tanh", "gelu" (exact, erf form), "softplus", "relu", "abs",
      "leaky_relu" (slope 0.01), or any elementwise callable (it must be hashable, as plain
      functions and `abs_family` results are). "relu", "abs" and "leaky_relu" resolve to
      `abs_family(½, ½)`, `abs_family(0, 1)` and `abs_family(1.01/2, 0.99/2)`, so that their
      kink slopes are known (`flows.nonsmooth.filippov_flow` needs them).

    **Returns:**

    An elementwise callable, hashable so that modules can keep it in a static field.

    **Raises:**

    `ValueError` if `name_or_callable` is an unknown name or neither a string nor a callable.
    """
    if isinstance(name_or_callable, str):
        try:
            return _NAMED[name_or_callable]
        except KeyError:
            allowed = ", ".join(repr(k) for k in _NAMED)
            raise ValueError(
                f"activation must be one of {allowed} or a callable, got {name_or_callable!r}"
            ) from None
    if callable(name_or_callable):
        return name_or_callable
    raise ValueError(f"activation must be a string or a callable, got {name_or_callable!r}")
