"""`TwoLayerNet`: the bias-free two-layer network of the lazy-training paper."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from . import _checks
from ._activations import activation as _resolve_activation

_SCALES = {"sqrt": lambda m: 1.0 / m**0.5, "mean": lambda m: 1.0 / m}


class TwoLayerNet(eqx.Module):
    """Two-layer network without biases, f(x) = scale · Σ_j a_j σ(b_j · x) (a_j ∈ R^k with
    `out_size=k` > 1).

    **Arguments:**

    - `in_size`: input dimension d ≥ 1.
    - `width`: number of neurons m ≥ 1.
    - `activation`: a name accepted by `models.activation` or an elementwise callable.
    - `out_size`: number of outputs k ≥ 1 (default 1: a scalar output).
    - `scale`: "sqrt" for scale = 1/√m (NTK scaling) or "mean" for 1/m (mean-field scaling).
    - `key`: a `jax.random` key.

    Initialisation: a_j ~ N(0, 1) and b_j ~ N(0, I_d/d), i.e. entries of `b` have standard
    deviation 1/√d.

    **Fields:** `a` of shape (m,) (`(k, m)` when k > 1), `b` of shape (m, d), static `scale`
    (a float) and `activation`. Pairing neurons (a, b) with (−a, b) makes f = 0 at
    initialisation; this is `symmetrize(model, "doubled")`.

    **Raises:**

    `ValueError` if `in_size`, `width` or `out_size` is not an integer ≥ 1, `scale` is not "sqrt" or
    "mean", `activation` is unknown, or `key` is not a `jax.random` key; naming `width` when
    the parameters would not fit in this machine's memory (`TwoLayerNet(3, 10**12)`).

    **Reference:** Chizat, Oyallon & Bach 2019, §3 (two-layer network, numerical experiments).
    """

    a: Float[Array, " m"]
    b: Float[Array, "m d"]
    scale: float = eqx.field(static=True)
    activation: Callable = eqx.field(static=True)

    def __init__(
        self,
        in_size: int,
        width: int,
        *,
        activation: str | Callable = "gelu",
        scale: str = "sqrt",
        out_size: int = 1,
        key: PRNGKeyArray,
    ):
        in_size = _checks.positive_int("in_size", in_size)
        width = _checks.positive_int("width", width)
        out_size = _checks.positive_int("out_size", out_size)
        _checks.prng_key("key", key)
        _checks.fits_in_memory("width", width * (in_size + out_size))
        if not isinstance(scale, str) or scale not in _SCALES:  # a list: "unhashable type"
            raise ValueError(f"scale must be 'sqrt' or 'mean', got {scale!r}")
        self.activation = _resolve_activation(activation)
        self.scale = _SCALES[scale](width)
        a_key, b_key = jax.random.split(key)
        self.a = jax.random.normal(a_key, (width,) if out_size == 1 else (out_size, width))
        self.b = jax.random.normal(b_key, (width, in_size)) / jnp.sqrt(in_size)

    def __call__(self, x: Float[Array, " d"]) -> Float[Array, ""]:
        """Evaluate on one input `x` of shape (d,); returns a scalar, or shape (k,) when
        `out_size=k` > 1. Batch with `jax.vmap`."""
        _checks.input_shape(x, self.b.shape[1])
        return self.scale * (self.a @ self.activation(self.b @ x))
