"""`MLP`: a fully connected network with scalar output."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from . import _checks
from ._activations import activation as _resolve_activation


class MLP(eqx.Module):
    """Fully connected network R^d → R with `depth` hidden layers of size `width`.

    f(x) = w_out·σ(W_depth ⋯ σ(W_1 x + b_1) ⋯ + b_depth) + b_out.

    **Arguments:**

    - `in_size`: input dimension d ≥ 1.
    - `width`: hidden layer size ≥ 1.
    - `depth`: number of hidden layers ≥ 1.
    - `activation`: a name accepted by `models.activation` or an elementwise callable.
    - `bias`: whether layers have biases.
    - `key`: a `jax.random` key.

    Initialisation: every weight and bias entry of a layer with fan-in n is drawn from
    N(0, 1/n) (standard deviation 1/√n), in the default float dtype (float64 once `models` is
    imported).

    **Fields:** `weights`, a tuple of arrays of shapes (width, d), (width, width), …, (1, width);
    `biases`, a tuple of shapes (width,), …, (1,), or `None` when `bias=False`.

    **Raises:**

    `ValueError` if `in_size`, `width` or `depth` is not an integer ≥ 1, or `activation` is
    unknown.
    """

    weights: tuple[Float[Array, "out in"], ...]
    biases: tuple[Float[Array, " out"], ...] | None
    activation: Callable = eqx.field(static=True)

    def __init__(
        self,
        in_size: int,
        width: int,
        depth: int,
        *,
        activation: str | Callable = "tanh",
        bias: bool = True,
        key: PRNGKeyArray,
    ):
        in_size = _checks.positive_int("in_size", in_size)
        width = _checks.positive_int("width", width)
        depth = _checks.positive_int("depth", depth)
        self.activation = _resolve_activation(activation)
        sizes = [in_size] + [width] * depth + [1]
        weights, biases = [], []
        for fan_in, fan_out, layer_key in zip(
            sizes[:-1], sizes[1:], jax.random.split(key, len(sizes) - 1), strict=True
        ):
            w_key, b_key = jax.random.split(layer_key)
            std = 1.0 / jnp.sqrt(fan_in)
            weights.append(std * jax.random.normal(w_key, (fan_out, fan_in)))
            biases.append(std * jax.random.normal(b_key, (fan_out,)))
        self.weights = tuple(weights)
        self.biases = tuple(biases) if bias else None

    def __call__(self, x: Float[Array, " d"]) -> Float[Array, ""]:
        """Evaluate on one input `x` of shape (d,); returns a scalar. Batch with `jax.vmap`."""
        _checks.input_shape(x, self.weights[0].shape[1])
        biases = self.biases if self.biases is not None else (0.0,) * len(self.weights)
        h = x
        for w, b in zip(self.weights[:-1], biases[:-1], strict=True):
            h = self.activation(w @ h + b)
        return (self.weights[-1] @ h + biases[-1])[0]
