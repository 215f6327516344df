"""The empirical NTK Gram matrix Σ = JJᵀ of a model on its inputs, with or without forming
the Jacobian J = Dh(w0)."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Float

from models import MLP, partition

from .._checks import check_finite
from .._flat import jacobian, jacobian_rows, outputs

METHODS = ("auto", "jacobian", "layers", "blocks")


@eqx.filter_jit
def _mlp_gram(model: MLP, X):
    """Σ_l (Δ_lΔ_lᵀ)∘(c_l²·H_{l−1}H_{l−1}ᵀ + β_l²): the gradient in W_l of input x is
    c_l·δ_l(x)·x_{l−1}ᵀ and in b_l is β_l·δ_l(x), so no per-input gradient is formed."""
    zeros = tuple(jnp.zeros(w.shape[0], w.dtype) for w in model.weights)

    def one(x):
        return jax.grad(lambda s: model.forward(x, s), has_aux=True)(zeros)

    deltas, inputs = jax.vmap(one)(X)
    gram = jnp.zeros((X.shape[0], X.shape[0]), X.dtype)
    for layer, (delta, h) in enumerate(zip(deltas, inputs, strict=True)):
        factor = model.weight_scales[layer] ** 2 * (h @ h.T)
        if model.biases is not None:
            factor = factor + model.bias_scales[layer] ** 2
        gram = gram + (delta @ delta.T) * factor
    return gram


def _outputs_per_input(model, X) -> int:
    """k, the model's outputs per input row of `X` `(n, d)`; `ValueError` naming X when a row
    does not fit the model (JAX's own error, e.g. a dot_general TypeError, said why)."""
    try:
        one = jax.ShapeDtypeStruct(X.shape[1:], X.dtype)
        shape = jax.eval_shape(lambda x: model(x), one).shape
    except Exception as e:  # the model's own error names the mismatch
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"X of shape {X.shape} does not fit the model: {why}") from None
    return math.prod(shape)


def _block_gram(model, X, memory: int) -> np.ndarray:
    """JJᵀ from blocks of Jacobian rows, two blocks of at most `memory`/2 bytes at a time."""
    w0, _, (static, spec, X) = outputs(model, X)
    n, k = X.shape[0], _outputs_per_input(model, X)
    rows_per_block = max(1, memory // (2 * 8 * k * int(w0.size)))
    starts = range(0, n, rows_per_block)

    def block(start):  # fixed block size (the last block repeats its final input): one compile
        idx = np.minimum(np.arange(start, start + rows_per_block), n - 1)
        J = jacobian_rows(static, spec, w0, X[idx])
        return J[: (min(start + rows_per_block, n) - start) * k]

    gram = np.empty((n * k, n * k))
    for a in starts:
        Ja = block(a)
        for b in starts:
            if b < a:
                continue
            Jb = Ja if b == a else block(b)
            piece = np.asarray(Ja @ Jb.T)
            gram[a * k : a * k + piece.shape[0], b * k : b * k + piece.shape[1]] = piece
            gram[b * k : b * k + piece.shape[1], a * k : a * k + piece.shape[0]] = piece.T
    return gram


def ntk_gram(
    model, X: Float[np.ndarray, "n d"], *, method: str = "auto", memory: int = 2**28
) -> Float[np.ndarray, "nk nk"]:
    """The NTK Gram matrix Σ = JJᵀ of a model at its current parameters w0.

    **Arguments:**
    - `model`: an equinox Module called on one input `(d,)`; its trainable arrays (see
      `models.partition`) are w0, `(p,)` once flattened.
    - `X`: inputs `(n, d)`.
    - `method`:
      - "jacobian": form J, `(n·k, p)`, by reverse mode (memory n·k·p·8 bytes);
      - "layers": for a scalar `models.MLP` only (out_size 1), layer by layer from the
        layers' inputs and backpropagated errors: Σ = Σ_l (Δ_lΔ_lᵀ)∘(c_l²·H_{l−1}H_{l−1}ᵀ +
        β_l²), memory O(n·Σ_l m_l) beyond the weights, and O(n·p) time;
      - "blocks": any model; rows of J for a block of inputs at a time, two blocks of at most
        `memory`/2 bytes each (time O(n²/block) backward passes);
      - "auto" (default): "jacobian" when J takes at most `memory` bytes (every small model:
        the historical behaviour), otherwise "layers" for a scalar MLP and "blocks" for others.
    - `memory`: bytes allowed for Jacobian rows, ≥ 1 (default 256 MiB).

    **Returns:** Σ, shape `(n·k, n·k)` (k outputs per input; k = 1 for a scalar model),
    float64, not divided by n. The methods agree to round-off.

    **Raises:** `ValueError` for an unknown `method`, "layers" on a model that is not a
    scalar `models.MLP`, `memory` < 1, or naming `X` when it is not `(n, d)` with n ≥ 1, holds
    NaN or inf (Σ would be NaN) or its rows do not fit the model; `TypeError` naming `model`
    when it is not callable.

    **Reference:** Chizat, Oyallon & Bach 2019, §2 (Σ(w) = Dh(w)Dh(w)ᵀ); Jacot, Gabriel &
    Hongler 2018 (the NTK); Novak, Sohl-Dickstein & Schoenholz 2022, "Fast finite width
    neural tangent kernel" (structured, Jacobian-free NTK products).
    """
    if not callable(model):  # None said "'NoneType' object is not callable"
        raise TypeError(
            f"model must be a callable equinox Module (one input of shape (d,)), got "
            f"{type(model).__name__}"
        )
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    if isinstance(memory, bool) or not isinstance(memory, (int, np.integer)) or memory < 1:
        raise ValueError(f"memory must be an integer number of bytes >= 1, got {memory!r}")
    if method == "layers" and not isinstance(model, MLP):
        raise ValueError(f"method='layers' needs a models.MLP, got {type(model).__name__}")
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"X must be an array of numbers, got {type(X).__name__}") from None
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"X must have shape (n, d) with n >= 1, got {X.shape}")
    check_finite("X", X)
    k = _outputs_per_input(model, X)  # refuses rows of another dimension, naming X
    if method == "layers" and k != 1:  # its backward pass needs a scalar output
        raise ValueError(f"method='layers' needs a scalar models.MLP (out_size=1), got k = {k}")
    if method == "auto":
        p = sum(int(leaf.size) for leaf in jax.tree.leaves(partition(model)[0]))
        if 8 * p * k * X.shape[0] <= memory:
            method = "jacobian"
        else:
            method = "layers" if isinstance(model, MLP) and k == 1 else "blocks"
    if method == "layers":
        return np.asarray(_mlp_gram(model, jnp.asarray(X)))
    if method == "jacobian":
        J, _, _ = jacobian(model, X)
        return np.asarray(J @ J.T)
    return _block_gram(model, X, memory)
