"""Observables of linear and homogeneous networks: functions of the parameters that
`gradient_flow(..., observables={name: fn})` and `gradient_descent` record at save times.

Plain functions take the model; the factories (`balancedness_drift`,
`neuron_balancedness_drift`, `normalised_margin`, `max_margin_angle`) take what they compare
against and return such a function. A factory's result is hashed by identity: build it once
and reuse it, so that repeated solves reuse their compilation.
"""

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from models import DeepLinearNet, TwoLayerNet

from .._checks import check_flag
from ._max_margin import signed_inputs


def _layers(model) -> tuple:
    weights = getattr(model, "weights", None)
    if weights is None or len(weights) == 0:
        raise ValueError(
            f"expected a model with `weights` (e.g. DeepLinearNet), got {type(model).__name__}"
        )
    return tuple(weights)


def _deep_linear(name: str, model) -> DeepLinearNet:
    """`model` if it is a deep linear network (has `weights` and `end_to_end`, as a
    `DeepLinearNet`), else a one-line `ValueError` naming `name` (None or an array used to
    fail as "'NoneType' object has no attribute 'end_to_end'")."""
    if not (hasattr(model, "weights") and hasattr(model, "end_to_end")):
        raise ValueError(f"{name} must be a models.DeepLinearNet, got {type(model).__name__}")
    return model


def _two_layer(name: str, model) -> TwoLayerNet:
    """`model` if it is a two-layer net (has outer weights `a` and inner `b`, as a
    `TwoLayerNet`), else a one-line `ValueError` naming `name`."""
    if not (hasattr(model, "a") and hasattr(model, "b")):
        raise ValueError(f"{name} must be a models.TwoLayerNet, got {type(model).__name__}")
    return model


def _end_to_end_vector(model: DeepLinearNet) -> Float[Array, " d_0"]:
    product = model.end_to_end()
    if product.shape[0] != 1:
        raise ValueError(
            f"margins need a scalar-output network (d_L = 1), got end-to-end shape {product.shape}"
        )
    return product[0]


def _same_shapes(name: str, shapes, shapes0) -> None:
    """Refuse a model whose array shapes differ from the one the factory was built from
    (a (3, 5, 1) net against a (3, 4, 1) reference failed as JAX's "sub got incompatible
    shapes", a shallower one as "zip() argument 2 is longer than argument 1")."""
    if list(shapes) != list(shapes0):
        raise ValueError(
            f"{name} has shapes {list(shapes)}, but the observable was built for {list(shapes0)}"
        )


def _input_size(name: str, model, d: int, what: str) -> None:
    """Refuse a network whose input dimension d_0 is not `d`, given by `what`."""
    d0 = _layers(model)[0].shape[1]
    if d0 != d:  # said "dot_general requires contracting dimensions to have the same shape"
        raise ValueError(f"{name} has input dimension d_0 = {d0}, but {what} is {d}")


def _stack(out: list, dtype) -> Array:
    """`jnp.stack(out)`, or an empty (0,) array for a one-layer network (L − 1 = 0 entries;
    `jnp.stack([])` said "Need at least one array to stack")."""
    return jnp.stack(out) if out else jnp.zeros((0,), dtype)


def _pairs(model):
    layers = _layers(model)
    return zip(layers[:-1], layers[1:], strict=True)


def balancedness_drift(
    params0: DeepLinearNet, *, relative: bool = False
) -> Callable[[DeepLinearNet], Float[Array, " L-1"]]:
    """The drift ‖C_k(t) − C_k(0)‖_F of the balancedness matrices, one entry per k.

    **Arguments:**
    - `params0`: the network at t = 0 (gives C_k(0) = W_kW_kᵀ − W_{k+1}ᵀW_{k+1}).
    - `relative`: divide each drift by max(1, ‖W_k(t)‖_F² + ‖W_{k+1}(t)‖_F²): the size of
      the two terms whose difference is C_k, floored at 1 as an absolute tolerance floors a
      relative one. In these units an adaptive solver with tolerance `rtol` keeps the drift
      at a small multiple of `rtol`.

    **Returns:** `fn(model) -> (L − 1,)` array.

    **Raises:** `ValueError` if `params0` is not a `DeepLinearNet` or has fewer than two
    layers.

    **Reference:** Du, Hu & Lee 2018, Thm 2.2 (C_k is constant under gradient flow for any
    differentiable loss).
    """
    relative = check_flag("relative", relative)
    c0 = [np.asarray(c) for c in _deep_linear("params0", params0).balancedness()]
    if not c0:
        raise ValueError("balancedness_drift needs a network with at least two layers")
    shapes0 = [w.shape for w in params0.weights]

    def drift(model):
        _same_shapes("model", [w.shape for w in _layers(model)], shapes0)
        out = []
        for c, c_init, (w, w_next) in zip(model.balancedness(), c0, _pairs(model), strict=True):
            d = jnp.linalg.norm(c - c_init)
            scale = jnp.maximum(1.0, jnp.sum(w**2) + jnp.sum(w_next**2))
            out.append(d / scale if relative else d)
        return jnp.stack(out)

    return drift


def layer_singular_values(model: DeepLinearNet) -> tuple:
    """Singular values of each layer, in decreasing order.

    **Returns:** a tuple of L arrays, the k-th of shape `(min(d_k, d_{k−1}),)`.
    """
    return tuple(jnp.linalg.svd(w, compute_uv=False) for w in _layers(model))


def adjacent_alignment(model: DeepLinearNet) -> Float[Array, " L-1"]:
    """|⟨u₁(W_k), v₁(W_{k+1})⟩|: top left singular vector of W_k against the top right singular
    vector of W_{k+1}, one entry per k (1 = aligned).

    Meaningful when the top singular values are simple; a tie makes the vectors arbitrary.

    **Returns:** `(L − 1,)` array in [0, 1] (empty for L = 1).

    **Reference:** Ji & Telgarsky 2019, "Gradient descent aligns the layers of deep linear
    networks", Thm 2.2; Arora, Cohen & Hazan 2018, §3 (consequences of balancedness).
    """
    out = []
    for w, w_next in _pairs(model):
        u1 = jnp.linalg.svd(w, full_matrices=False)[0][:, 0]
        v1 = jnp.linalg.svd(w_next, full_matrices=False)[2][0]
        out.append(jnp.abs(u1 @ v1))
    return _stack(out, _layers(model)[0].dtype)


def singular_value_ratio(model: DeepLinearNet) -> Float[Array, " L"]:
    """σ₂/σ₁ of each layer (0 for a layer with a single singular value); → 0 as the layers
    become rank one.

    **Returns:** `(L,)` array.
    """
    out = []
    for s in layer_singular_values(model):
        out.append(s[1] / s[0] if s.shape[0] > 1 else jnp.zeros((), s.dtype))
    return jnp.stack(out)


def stable_rank(model: DeepLinearNet) -> Float[Array, " L"]:
    """Stable rank ‖W_k‖_F² / ‖W_k‖₂² of each layer, in [1, rank]; → 1 as layers become rank one.

    **Returns:** `(L,)` array.
    """
    return jnp.stack([jnp.sum(s**2) / s[0] ** 2 for s in layer_singular_values(model)])


def end_to_end(model: DeepLinearNet) -> Float[Array, "d_L d_0"]:
    """The end-to-end matrix W_L ⋯ W_1, of shape `(d_L, d_0)`. **Raises:** `ValueError`
    naming `model` if it is not a `DeepLinearNet`."""
    return _deep_linear("model", model).end_to_end()


def normalised_margin(
    X: Float[ArrayLike, "n d"], y: Float[ArrayLike, " n"]
) -> Callable[[DeepLinearNet], Float[Array, ""]]:
    """The normalised margin min_i y_i⟨β, x_i⟩/‖β‖ of the end-to-end vector β = W_L⋯W_1.

    **Arguments:**
    - `X`: inputs, shape `(n, d_0)`.
    - `y`: labels ±1, shape `(n,)`.

    **Returns:** `fn(model) -> scalar`, for networks with d_L = 1. It tends to the hard-margin
    SVM margin `max_margin(X, y).margin` under the logistic or exponential loss on separable
    data.

    **Raises:** `ValueError` if shapes do not match, values are not finite, or `y` does not
    hold both labels ±1; from `fn`, naming `model`, if its d_0 is not X's d.

    **Reference:** Soudry, Hoffer, Nacson, Gunasekar & Srebro 2018, Thm 3; Ji & Telgarsky 2019.
    """
    Z = jnp.asarray(signed_inputs(X, y))

    def margin(model):
        _input_size("model", model, Z.shape[1], "X's number of columns")
        beta = _end_to_end_vector(model)
        return jnp.min(Z @ beta) / jnp.linalg.norm(beta)

    return margin


def max_margin_angle(
    direction: Float[ArrayLike, " d"],
) -> Callable[[DeepLinearNet], Float[Array, ""]]:
    """The angle (radians, in [0, π]) between the end-to-end vector β = W_L⋯W_1 and
    `direction` (e.g. `max_margin(X, y).direction`).

    Computed as atan2(‖β̂ − (β̂·ŵ)ŵ‖, β̂·ŵ), accurate for small angles.

    **Returns:** `fn(model) -> scalar`, for networks with d_L = 1.

    **Raises:** `ValueError` if `direction` is not a nonzero finite vector; from `fn`,
    naming `model`, if its d_0 is not the length of `direction`.

    **Reference:** Soudry et al. 2018, Thm 3 (the angle falls like O(1/log t)); Ji & Telgarsky
    2019, Thm 2.2 (deep linear networks).
    """
    try:
        w = np.asarray(direction, dtype=np.float64)
    except (TypeError, ValueError):  # "ab" said "could not convert string to float: 'ab'"
        raise ValueError(
            f"direction must be a nonzero finite 1-D vector, got {type(direction).__name__}"
        ) from None
    norm = np.linalg.norm(w) if w.ndim == 1 else 0.0
    if not (np.isfinite(norm) and norm > 0):
        raise ValueError("direction must be a nonzero finite 1-D vector")
    w_hat = jnp.asarray(w / norm)

    def angle(model):
        _input_size("model", model, w.shape[0], "direction's length")
        beta = _end_to_end_vector(model)
        b_hat = beta / jnp.linalg.norm(beta)
        cos = b_hat @ w_hat
        return jnp.arctan2(jnp.linalg.norm(b_hat - cos * w_hat), cos)

    return angle


def layer_norm_gaps(model) -> Float[Array, " L-1"]:
    """‖W_k‖_F² − ‖W_{k+1}‖_F² for each pair of adjacent layers; with biases,
    ‖W_k‖_F² + ‖b_k‖² − ‖W_{k+1}‖_F² (scaling (W_k, b_k) by c and W_{k+1} by 1/c leaves the
    network unchanged). Conserved under gradient flow for deep linear networks and for
    networks with positively homogeneous activations (ReLU, leaky ReLU, abs).

    **Arguments:** `model`: a `DeepLinearNet` or `MLP` (any model with `weights`, and
    optionally `biases`).

    **Returns:** `(L − 1,)` array (empty for L = 1).

    **Reference:** Du, Hu & Lee 2018, Thm 2.1 (Cor. 2.1 for the Frobenius form).
    """
    layers = _layers(model)
    biases = getattr(model, "biases", None)
    incoming = [jnp.sum(w**2) for w in layers]
    if biases is not None:
        incoming = [s + jnp.sum(b**2) for s, b in zip(incoming, biases, strict=True)]
    gaps = [incoming[k] - jnp.sum(layers[k + 1] ** 2) for k in range(len(layers) - 1)]
    return _stack(gaps, layers[0].dtype)


def neuron_balancedness(model: TwoLayerNet) -> Float[Array, " m"]:
    """‖b_j‖² − a_j² for each neuron j of a two-layer net f(x) = scale·Σ_j a_j σ(b_j·x).
    Conserved under gradient flow when σ is positively homogeneous of degree 1 (ReLU, leaky
    ReLU, abs): then a_j ∂F/∂a_j = ⟨b_j, ∂F/∂b_j⟩.

    **Returns:** `(m,)` array.

    **Raises:** `ValueError` naming `model` if it is not a `TwoLayerNet`.

    **Reference:** Du, Hu & Lee 2018, Thm 2.1.
    """
    model = _two_layer("model", model)
    return jnp.sum(model.b**2, axis=1) - model.a**2


def neuron_balancedness_drift(
    params0: TwoLayerNet, *, relative: bool = False
) -> Callable[[TwoLayerNet], Float[Array, " m"]]:
    """The drift |q_j(t) − q_j(0)| of the per-neuron invariants q_j = ‖b_j‖² − a_j²
    (`neuron_balancedness`), one entry per neuron j.

    **Arguments:**
    - `params0`: the two-layer net at t = 0 (gives q_j(0)).
    - `relative`: divide neuron j's drift by max(1, ‖b_j(0)‖² + a_j(0)²), the size at t = 0
      of the two terms whose difference is q_j, floored at 1 as an absolute tolerance floors
      a relative one (a fixed scale per neuron, unlike `balancedness_drift`'s, which follows
      the weights). In these units an adaptive solver with tolerance `rtol` keeps the drift
      at a small multiple of `rtol`.

    **Returns:** `fn(model) -> (m,)` array, ≥ 0.

    **Raises:** `ValueError` naming `params0` if it is not a `TwoLayerNet`, and from `fn`
    naming `model` when its shapes differ from `params0`'s; `TypeError` if `relative` is not
    a bool.

    **Reference:** Du, Hu & Lee 2018, Thm 2.1 (q_j is constant under gradient flow when the
    activation is positively homogeneous of degree 1).
    """
    relative = check_flag("relative", relative)
    q0 = np.asarray(neuron_balancedness(_two_layer("params0", params0)))
    shapes0 = [params0.a.shape, params0.b.shape]
    scale = np.ones_like(q0)
    if relative:
        scale = np.maximum(1.0, np.asarray(jnp.sum(params0.b**2, axis=1) + params0.a**2))

    def drift(model):
        _same_shapes("model", [_two_layer("model", model).a.shape, model.b.shape], shapes0)
        return jnp.abs(neuron_balancedness(model) - q0) / scale

    return drift
