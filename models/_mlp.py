"""`MLP`: a fully connected network with scalar (or `out_size`-vector) output, in the standard
or NTK parameterisation."""

import math
from collections.abc import Callable

import equinox as eqx
import jax
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray

from . import _checks
from ._activations import activation as _resolve_activation

PARAMETERIZATIONS = ("standard", "ntk")


def _widths(width, depth) -> tuple[int, ...]:
    if isinstance(width, range) or (isinstance(width, np.ndarray) and width.ndim == 1):
        width = tuple(width)  # an array or range said "width must be an integer >= 1"
    if isinstance(width, (tuple, list)):
        if len(width) == 0:
            raise ValueError("width must be an integer >= 1 or a non-empty tuple of them, got ()")
        widths = tuple(_checks.positive_int("width", w) for w in width)
        if depth is not None and _checks.positive_int("depth", depth) != len(widths):
            raise ValueError(f"depth ({depth}) must equal len(width) ({len(widths)}) or be None")
        return widths
    width = _checks.positive_int("width", width)
    if depth is None:
        raise ValueError("depth must be given when width is a single integer")
    return (width,) * _checks.positive_int("depth", depth)


def _std(name: str, value, default: float, *, zero_ok: bool) -> float:
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number < 0:
        raise ValueError(
            f"{name} must be a finite number >= 0 (a standard deviation), got {value!r}"
        )
    if number == 0 and not zero_ok:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return number


class MLP(eqx.Module):
    """Fully connected network R^d → R (R^k with `out_size=k`) with hidden widths
    m_1, …, m_L (L = `depth`).

    With z_0 = x and x_l = φ(z_l):

    - `parameterization="standard"` (default): z_l = W_l x_{l−1} + b_l, with W_l drawn from
      N(0, σ_w²/m_{l−1}) and b_l from N(0, σ_b²);
    - `parameterization="ntk"`: z_l = (σ_w/√m_{l−1}) W_l x_{l−1} + σ_b b_l, with W_l and b_l
      standard normal; the gradient, and so the NTK, is taken in these standard-normal
      parameters (Jacot, Gabriel & Hongler 2018; neural-tangents' `stax.Dense(...,
      parameterization="ntk")`);

    and f(x) = z_{L+1}, m_0 = d, m_{L+1} = k = `out_size`. At initialisation,
    `flows.ntk.ntk_gram` of an `"ntk"` MLP without bias and with
    `activation=models.abs_family(a, b)` estimates
    `flows.ntk.ntk_infinite(X, depth=L, a=a, b=b, weight_std=σ_w)`.

    **Arguments:**

    - `in_size`: input dimension d ≥ 1.
    - `out_size`: number of outputs k ≥ 1 (default 1: a scalar output; k > 1: a vector of
      shape (k,), e.g. logits of k classes).
    - `width`: hidden layer size ≥ 1, or a tuple (m_1, …, m_L) of sizes (e.g. m_k = k²·m);
      a list, a range or a 1-D integer array of them is taken as that tuple.
    - `depth`: number of hidden layers L ≥ 1; may be None when `width` is a tuple.
    - `activation`: a name accepted by `models.activation` or an elementwise callable.
    - `bias`: whether layers have biases.
    - `parameterization`: "standard" or "ntk".
    - `weight_std`: σ_w ≥ 0 (default 1: standard deviation 1/√fan-in in "standard").
    - `bias_std`: σ_b ≥ 0. Default: 1/√fan-in in "standard" (the historical default), 1 in
      "ntk".
    - `key`: a `jax.random` key. A given key draws the same standard normals in both
      parameterisations.

    In the default float dtype (float64 once `models` is imported).

    **Fields:** `weights`, a tuple of arrays of shapes (m_1, d), (m_2, m_1), …, (k, m_L);
    `biases`, a tuple of shapes (m_1,), …, (k,), or `None` when `bias=False`;
    `weight_scales`, `bias_scales`: the factors applied in the forward pass (1 in
    "standard"; σ_w/√m_{l−1} and σ_b in "ntk").

    **Raises:**

    `ValueError` if `in_size`, `out_size`, `width` or `depth` is not an integer ≥ 1, `depth`
    and a tuple `width` disagree, `activation` or `parameterization` is unknown, or a
    standard deviation is negative or not finite (`weight_std` must be > 0), or `key` is not
    a `jax.random` key; naming `width`
    when the parameters would not fit in this machine's memory.
    """

    weights: tuple[Float[Array, "out in"], ...]
    biases: tuple[Float[Array, " out"], ...] | None
    activation: Callable = eqx.field(static=True)
    parameterization: str = eqx.field(static=True)
    weight_scales: tuple[float, ...] = eqx.field(static=True)
    bias_scales: tuple[float, ...] = eqx.field(static=True)

    def __init__(
        self,
        in_size: int,
        width: int | tuple[int, ...],
        depth: int | None = None,
        *,
        activation: str | Callable = "tanh",
        bias: bool = True,
        parameterization: str = "standard",
        weight_std: float | None = None,
        bias_std: float | None = None,
        out_size: int = 1,
        key: PRNGKeyArray,
    ):
        in_size = _checks.positive_int("in_size", in_size)
        out_size = _checks.positive_int("out_size", out_size)
        _checks.prng_key("key", key)
        widths = _widths(width, depth)
        sizes = [in_size, *widths, out_size]
        _checks.fits_in_memory("width", sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:])))
        self.activation = _resolve_activation(activation)
        if parameterization not in PARAMETERIZATIONS:
            raise ValueError(
                f"parameterization must be 'standard' or 'ntk', got {parameterization!r}"
            )
        self.parameterization = parameterization
        w_std = _std("weight_std", weight_std, 1.0, zero_ok=False)
        ntk = parameterization == "ntk"
        sizes = [in_size, *widths, out_size]
        weights, biases, w_scales, b_scales = [], [], [], []
        for fan_in, fan_out, layer_key in zip(
            sizes[:-1], sizes[1:], jax.random.split(key, len(sizes) - 1), strict=True
        ):
            w_key, b_key = jax.random.split(layer_key)
            w_scale = w_std / math.sqrt(fan_in)
            b_scale = _std("bias_std", bias_std, 1.0 if ntk else 1.0 / math.sqrt(fan_in),
                           zero_ok=True)  # fmt: skip
            w, b = jax.random.normal(w_key, (fan_out, fan_in)), jax.random.normal(b_key, (fan_out,))
            if ntk:
                w_scales.append(w_scale)
                b_scales.append(b_scale)
            else:
                w, b = w_scale * w, b_scale * b
                w_scales.append(1.0)
                b_scales.append(1.0)
            weights.append(w)
            biases.append(b)
        self.weights = tuple(weights)
        self.biases = tuple(biases) if bias else None
        self.weight_scales, self.bias_scales = tuple(w_scales), tuple(b_scales)

    @property
    def widths(self) -> tuple[int, ...]:
        """The hidden widths (m_1, …, m_L)."""
        return tuple(w.shape[0] for w in self.weights[:-1])

    def forward(self, x: Float[Array, " d"], shifts=None):
        """The output and the input of every layer, on one input `x` of shape (d,).

        `shifts` (optional): a tuple of arrays of shapes (m_1,), …, (m_L,), (1,) added to the
        pre-activations z_1, …, z_{L+1}; the gradient of the output with respect to them at 0
        is the backpropagated error ∂f/∂z_l used by `flows.ntk.ntk_gram`.

        **Returns:** `(f(x), (x_0, …, x_L))`: a scalar (shape (k,) when `out_size=k` > 1) and
        the layers' inputs, x_0 = x.
        """
        _checks.input_shape(x, self.weights[0].shape[1])
        ntk = self.parameterization == "ntk"
        h, inputs = x, []
        for layer, w in enumerate(self.weights):
            inputs.append(h)
            z = self.weight_scales[layer] * (w @ h) if ntk else w @ h
            if self.biases is not None:
                b = self.biases[layer]
                z = z + (self.bias_scales[layer] * b if ntk else b)
            if shifts is not None:
                z = z + shifts[layer]
            h = self.activation(z) if layer < len(self.weights) - 1 else z
        return (h[0] if h.shape[0] == 1 else h), tuple(inputs)

    def __call__(self, x: Float[Array, " d"]) -> Float[Array, ""]:
        """Evaluate on one input `x` of shape (d,); returns a scalar, or shape (k,) when
        `out_size=k` > 1. Batch with `jax.vmap`."""
        return self.forward(x)[0]
