"""`DeepLinearNet`: f(x) = W_L ⋯ W_1 x, with balanced, Gaussian and decoupled initialisations."""

import functools
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from . import _checks


@functools.partial(jax.jit, static_argnums=1)
def _random_orthogonal(key: PRNGKeyArray, n: int) -> Float[Array, "n n"]:
    q, r = jnp.linalg.qr(jax.random.normal(key, (n, n)))
    return q * jnp.where(jnp.diag(r) < 0, -1.0, 1.0)


def _check_dims(dims: Sequence[int]) -> list[int]:
    if isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__"):
        raise ValueError(  # dims=3 said "'int' object is not iterable"
            f"dims must be a sequence of integers (d_0, …, d_L), got {type(dims).__name__}"
        )
    dims = list(dims)
    if len(dims) < 2:
        raise ValueError(f"dims must have at least 2 entries (d_0, …, d_L), got {dims}")
    dims = [_checks.positive_int(f"dims[{i}]", d) for i, d in enumerate(dims)]
    _checks.fits_in_memory("dims", sum(a * b for a, b in zip(dims[:-1], dims[1:])))
    return dims


@functools.partial(jax.jit, static_argnums=1)
def _unit_vector(key: PRNGKeyArray, n: int) -> Float[Array, " n"]:
    v = jax.random.normal(key, (n,))
    return v / jnp.linalg.norm(v)


class DeepLinearNet(eqx.Module):
    """Deep linear network f(x) = W_L ⋯ W_1 x.

    **Arguments:**

    - `weights`: a sequence of L ≥ 1 finite matrices, W_k of shape (d_k, d_{k−1}); W_1 is the
      first layer applied to x.

    **Raises:**

    `ValueError` if `weights` is not a sequence or is empty, a matrix is not numeric, not
    2-D, has a zero dimension or is not finite, is float32 (or another non-float64 float:
    refused, not cast, as `flows.gradient_flow` refuses it; integer matrices are converted
    to float64), or shapes do not chain.

    See the constructors `gaussian`, `balanced` and `decoupled`.
    """

    weights: tuple[Float[Array, "d_k d_km1"], ...]

    def __init__(self, weights: Sequence[ArrayLike]):
        if weights is None or isinstance(weights, (str, bytes)) or not hasattr(weights, "__iter__"):
            raise ValueError(  # None said "'NoneType' object is not iterable"
                "weights must be a sequence of matrices (W_1, …, W_L), got "
                f"{type(weights).__name__}"
            )
        weights = tuple(_checks.float64_array(f"weights[{k}]", w) for k, w in enumerate(weights))
        if len(weights) == 0:
            raise ValueError("weights must hold at least one matrix, got none")
        for k, w in enumerate(weights):
            _checks.finite_array(f"weights[{k}]", w, ndim=2)
            if 0 in w.shape:  # a (0, 2) layer was accepted: f(x) = 0 of shape (0,)
                raise ValueError(f"weights[{k}] must have no zero dimension, got shape {w.shape}")
        for k in range(1, len(weights)):
            if weights[k].shape[1] != weights[k - 1].shape[0]:
                raise ValueError(
                    f"weights[{k}] has shape {weights[k].shape}, which does not chain with "
                    f"weights[{k - 1}] of shape {weights[k - 1].shape}"
                )
        self.weights = weights

    def __call__(self, x: Float[Array, " d_0"]) -> Float[Array, " d_L"]:
        """Evaluate on one input `x` of shape (d_0,); returns (d_L,). Batch with `jax.vmap`."""
        _checks.input_shape(x, self.weights[0].shape[1])
        for w in self.weights:
            x = w @ x
        return x

    def end_to_end(self) -> Float[Array, "d_L d_0"]:
        """The product W_L ⋯ W_1, of shape (d_L, d_0)."""
        product = self.weights[0]
        for w in self.weights[1:]:
            product = w @ product
        return product

    def balancedness(self) -> list[Float[Array, "d_k d_k"]]:
        """The conserved matrices C_k = W_k W_kᵀ − W_{k+1}ᵀ W_{k+1}, k = 1, …, L − 1.

        **Returns:**

        A list of L − 1 arrays, C_k of shape (d_k, d_k); empty when L = 1.

        **Reference:** Du, Hu & Lee 2018, Thm 2.2 (conserved under gradient flow for any
        differentiable loss); C_k = 0 for all k is "balanced" (Arora, Cohen, Golowich & Hu
        2019, Def. 1).
        """
        return [
            w @ w.T - w_next.T @ w_next
            for w, w_next in zip(self.weights[:-1], self.weights[1:], strict=True)
        ]

    @classmethod
    def gaussian(cls, dims: Sequence[int], *, scale: float, key: PRNGKeyArray) -> "DeepLinearNet":
        """Generic (unbalanced) init: entries of W_k are i.i.d. N(0, scale²/d_{k−1}).

        **Arguments:**

        - `dims`: (d_0, d_1, …, d_L), at least 2 positive integers.
        - `scale`: finite > 0 multiplier of the 1/√fan_in standard deviation.
        - `key`: a `jax.random` key.

        **Raises:**

        `ValueError` if `dims` has fewer than 2 entries or a non-positive entry, or `scale` is
        not finite and > 0, or `key` is not a `jax.random` key.
        """
        dims = _check_dims(dims)
        scale = _checks.positive_float("scale", scale)
        keys = jax.random.split(_checks.prng_key("key", key), len(dims) - 1)
        return cls(
            [
                scale * jax.random.normal(k, (d_out, d_in)) / jnp.sqrt(d_in)
                for k, d_in, d_out in zip(keys, dims[:-1], dims[1:], strict=True)
            ]
        )

    @classmethod
    def balanced(cls, dims: Sequence[int], *, scale: float, key: PRNGKeyArray) -> "DeepLinearNet":
        """Exactly balanced init: C_k = 0 for every k, to round-off.

        If all dims are equal, W_k = scale·O_k with independent random orthogonal O_k (every
        singular value of every layer equals `scale`). Otherwise a rank-1 chain
        W_k = scale·u_k u_{k−1}ᵀ with random unit vectors u_k ∈ R^{d_k}.

        **Arguments:**

        - `dims`: (d_0, d_1, …, d_L), at least 2 positive integers.
        - `scale`: the common singular value c, finite and > 0.
        - `key`: a `jax.random` key.

        **Raises:**

        `ValueError` if `dims` has fewer than 2 entries or a non-positive entry, or `scale` is
        not finite and > 0, or `key` is not a `jax.random` key.

        **Reference:** Arora, Cohen, Golowich & Hu 2019, Def. 1 (balancedness).
        """
        dims = _check_dims(dims)
        scale = _checks.positive_float("scale", scale)
        keys = jax.random.split(_checks.prng_key("key", key), len(dims))
        if len(set(dims)) == 1:
            return cls([scale * _random_orthogonal(k, dims[0]) for k in keys[1:]])
        u = [_unit_vector(k, d) for k, d in zip(keys, dims, strict=True)]
        return cls([scale * jnp.outer(u[k], u[k - 1]) for k in range(1, len(dims))])

    @classmethod
    def decoupled(
        cls,
        sigma31: Float[ArrayLike, "d_out d_in"],
        *,
        u0: float,
        hidden: int,
        key: PRNGKeyArray,
    ) -> "DeepLinearNet":
        """Saxe et al.'s decoupled two-layer init, aligned with the input-output correlation.

        With the SVD Σ31 = U S Vᵀ (singular values in decreasing order) and r = min(hidden,
        d_in, d_out), keep the first r modes U_r (d_out, r), V_r (d_in, r) and set
        W_1 = R D V_rᵀ of shape (hidden, d_in) and W_2 = U_r Dᵀ Rᵀ of shape (d_out, hidden),
        where R is a random (hidden, hidden) orthogonal matrix and D = √u0·[I_r; 0] of shape
        (hidden, r). Then W_2 W_1 = u0·U_r V_rᵀ (every mode starts at strength u0) and
        W_1 W_1ᵀ = W_2ᵀ W_2 (balanced). Assumes whitened inputs (Σ_μ x xᵀ = I).

        **Arguments:**

        - `sigma31`: Σ31 = Σ_μ y xᵀ, finite, shape (d_out, d_in).
        - `u0`: initial mode strength, finite and > 0.
        - `hidden`: hidden width, at least rank(Σ31) so that every nonzero mode is covered.
        - `key`: a `jax.random` key (for R).

        **Returns:**

        A two-layer `DeepLinearNet` with weights (W_1, W_2).

        **Raises:**

        `ValueError` if `sigma31` is not a finite 2-D float64 (or integer) array without a
        zero dimension, `u0` is not finite and > 0, or
        `hidden` is not an integer ≥ rank(Σ31), or `key` is not a `jax.random` key.

        **Reference:** Saxe, McClelland & Ganguli 2014, §2 (decoupled initial conditions and
        the mode dynamics u(t) = s/(1 + (s/u0 − 1)e^{−2st})).
        """
        _checks.finite_array("sigma31", sigma31, ndim=2)
        # float32 was computed in float32 and promoted; (0, 0) built (1, 0) and (0, 1) layers
        sigma31 = _checks.float64_array("sigma31", sigma31)
        if 0 in sigma31.shape:
            raise ValueError(f"sigma31 must have no zero dimension, got shape {sigma31.shape}")
        u0 = _checks.positive_float("u0", u0)
        hidden = _checks.positive_int("hidden", hidden)
        _checks.prng_key("key", key)
        rank = int(np.linalg.matrix_rank(np.asarray(sigma31)))
        if hidden < rank:
            raise ValueError(f"hidden must be >= rank(sigma31) = {rank}, got {hidden}")
        u, _, vt = jnp.linalg.svd(sigma31, full_matrices=False)
        r = min(hidden, *sigma31.shape)
        d = jnp.sqrt(u0) * jnp.eye(hidden, r)
        rotation = _random_orthogonal(key, hidden)
        w1 = rotation @ d @ vt[:r]
        w2 = u[:, :r] @ d.T @ rotation.T
        return cls([w1, w2])
