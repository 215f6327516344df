"""The sharpness S = λ_max(∇²L) and the next eigenvalues, by Lanczos on Hessian-vector
products of the full-batch loss, in float64."""

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from models import partition

from .._checks import check_finite
from .._flat import FlatSpec
from ._hessian import flat_loss, hvp
from ._lanczos import band_lanczos_top, start_block

#: Relative residual ‖Hv − λv‖/|λ₁| at which Lanczos stops (the eigenvalues are then at least
#: this accurate, relative to the largest in magnitude).
TOL = 1e-11
#: The most Lanczos vectors (Hessian-vector products) of one call.
MAX_ITERS = 200
_KEY = jax.random.PRNGKey(0)


class Sharpness(NamedTuple):
    """The k largest Hessian eigenvalues with what certifies them.

    - `values` `(k,)`: the eigenvalues, descending, each repeated as often as it occurs
      (Rayleigh quotients vᵀHv of the unit vectors).
    - `residuals` `(k,)`: ‖Hv − λv‖ of each pair, from Hessian-vector products of the
      returned vectors (an eigenvalue of H lies within it of each value).
    - `vectors` `(k, p)`: unit eigenvectors, flat, sign arbitrary.
    - `products`: the Hessian-vector products Lanczos took.
    """

    values: Any
    residuals: Any
    vectors: Any
    products: Any


class SharpnessAlong(NamedTuple):
    """`sharpness_along`'s result: `values` `(T, k)` descending, `residuals` `(T, k)` the
    ‖Hv − λv‖ of each pair, `products` `(T,)` the Hessian-vector products of each save."""

    values: np.ndarray
    residuals: np.ndarray
    products: np.ndarray


def check_k(k, p: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if k > p:
        raise ValueError(f"k must be <= p, the number of trainable parameters ({p}), got {k}")
    return int(k)


@eqx.filter_jit
def _top(f, w, v0, k, m_max, tol, below=None):
    # Lanczos on constants (so that reverse mode never meets its while_loop), then one
    # Hessian-vector product per pair, differentiable: λ = vᵀH(w)v with v held fixed has
    # derivative vᵀ(∂H)v, the derivative of a simple eigenvalue (Hellmann–Feynman), in both
    # modes and with respect to anything the loss depends on.
    # (arrays only: the loss's static part may hold functions, such as eqx.nn.MLP's default
    # activation jax.nn.relu, a custom_jvp that stop_gradient refused as 'not a valid JAX type')
    arrays, rest = eqx.partition((f, w), eqx.is_array)
    f0, w0 = eqx.combine(jax.lax.stop_gradient(arrays), rest)
    V0 = start_block(jax.lax.stop_gradient(v0), _KEY)
    # Lanczos on H/c, c = max|H v0| (one product more, not counted in `products`), so that
    # its norms neither underflow nor overflow: a loss times 1e-200 gave eigenvalues 92% low
    # with residuals 0 (the squares in ‖Hv‖ underflowed: a breakdown after 4 products), times
    # 1e200 18% low
    scale = jnp.max(jnp.abs(hvp(f0, w0, V0[0])))
    scale = jnp.where(jnp.isfinite(scale) & (scale > 0), scale, 1.0)
    if below is not None:  # (i, level, loose), level in H's units, sought on H/c
        below = (below[0], below[1] / scale, below[2])
    _, vectors, n, _ = band_lanczos_top(
        lambda v: hvp(f0, w0, v) / scale, V0, k, m_max, tol, _KEY, below=below
    )
    Hv = jax.vmap(lambda v: hvp(f, w, v))(vectors)
    values = jnp.sum(vectors * Hv, axis=1)
    misfit = jax.lax.stop_gradient(Hv - values[:, None] * vectors) / scale
    residuals = scale * jnp.linalg.norm(misfit, axis=1)
    return Sharpness(values, residuals, vectors, n)


def top_eigenpairs(f, w, k: int, v0=None, *, tol=TOL, max_iters=MAX_ITERS, below=None) -> Sharpness:
    """The k largest eigenpairs of the Hessian of the flat loss `f` at `w`, by band Lanczos
    with block size k from `v0` (`None`, `(p,)` or `(b, p)`: warm-start rows, each mixed with
    a pseudo-random part); jit-compatible (also inside a vector field or an observable).
    `below` `(i, level, loose)`: only whether eigenvalue i (from 0) is below `level` is
    sought where it is certainly below (`band_lanczos_top`): its value then has the
    residual's error, and the pairs after it are not sought."""
    p = w.shape[0]
    m_max = min(p, max(int(max_iters), k + 2))
    rows = max(k, 1 if v0 is None else int(np.size(v0)) // p)
    if isinstance(v0, jax.core.Tracer) or isinstance(w, jax.core.Tracer):
        start = jnp.zeros((rows, p), w.dtype)
        if v0 is not None:
            v0 = jnp.asarray(v0, w.dtype).reshape(-1, p)
            start = start.at[: v0.shape[0]].set(v0)
    else:  # on the host: an eager update would compile a program of its own
        start = np.zeros((rows, p))
        if v0 is not None:
            v0 = np.asarray(v0, np.float64).reshape(-1, p)
            start[: len(v0)] = v0
    return _top(f, w, start, k, m_max, jnp.asarray(tol, w.dtype), below)


def edge_eigenpairs(
    f, w, need: int, v0, scale, *, tol, max_iters, check_every: int = 4, mix=False, below=None
):
    """`(values (b,), vectors (b, p), products)`: the b largest eigenpairs of the Hessian of
    the flat loss `f` at `w`, b the rows of `v0` `(b, p)`, where they are known to be near
    `scale` (the central flow's 2/η) and `v0` (nonzero rows) near their eigenvectors: band
    Lanczos on H/`scale` from `v0` as it is (not mixed with a pseudo-random part: the warm
    start saves products, and no mode outside it is sought), until the top `need` ≤ b pairs
    have relative Ritz residual ≤ `tol` (the block's b − need further rows keep the next
    eigenvector in the Krylov space, which separates the top `need` from it where their gap
    closes); the values are Ritz values (Rayleigh quotients of the vectors to round-off: no
    products of their own, and none to find a scale). Not differentiable; inside a program
    only (the central flow's field and its Euler baseline). With `mix`, each row mixed with a
    pseudo-random part (`start_block`), as `top_eigenpairs`; `below` `(i, level, loose)` as
    there (level in H's units)."""
    b, p = v0.shape
    m_max = min(p, max(int(max_iters), b + 1))
    V0 = start_block(v0, _KEY, mix=mix)
    if below is not None:
        below = (below[0], below[1] / scale, below[2])
    theta, vectors, n, _ = band_lanczos_top(
        lambda v: hvp(f, w, v) / scale, V0, b, m_max, tol, _KEY, check_every, need, below
    )
    return theta * scale, vectors, n


def sharpness(
    loss: Callable,
    params: Any,
    k: int = 1,
    *,
    eigenvectors: bool = False,
    v0=None,
    tol: float = TOL,
    max_iters: int = MAX_ITERS,
    full: bool = False,
):
    """The k largest eigenvalues of the Hessian ∇²loss(params), descending, each repeated as
    often as it occurs: S = λ₁ ≥ … ≥ λ_k.

    Band (block) Lanczos with block size k on Hessian-vector products (forward over reverse,
    full batch: `loss` is whatever it evaluates), fully reorthogonalised, in float64: a block
    of k start vectors sees every multiplicity within the top k, where Lanczos from one vector
    returns the next distinct value instead. A warm start is always mixed with an equal part
    of a pseudo-random vector, and a breakdown restarts orthogonally to what was found, so a
    mode outside the warm start's span is still found. Works under `jit`, so it is usable as
    an observable of `gradient_flow` and `gradient_descent`:
    `observables={"sharpness": lambda p: flows.sharpness(loss, p)}` (each save then starts
    cold; `flows.large_steps.sharpness_along` warm-starts along a saved trajectory).
    Differentiable (`jax.grad`, `jax.jacfwd`): the values are vᵀH(w)v with the unit vector v
    held fixed, whose derivative vᵀ(∂H)v is that of a simple eigenvalue. One compilation
    serves every call with the same `loss` function and parameter structure.

    **Arguments:**
    - `loss`: scalar function of the parameter pytree.
    - `params`: the pytree (an equinox Module included); its p trainable float64 entries.
    - `k`: how many eigenvalues, 1 ≤ k ≤ p.
    - `eigenvectors`: also return the unit eigenvectors.
    - `v0`: warm start, flat `(p,)` or `(k, p)` (previous eigenvectors, in the order of
      `jax.flatten_util.ravel_pytree` of the trainable leaves); default a fixed random block.
    - `tol`: relative residual ‖Hv − λv‖/|λ₁| to stop at (the eigenvalues' error is below
      it, relative to |λ₁|); `max_iters`: most Hessian-vector products of Lanczos (capped at
      p, where it is exact), k more certify the result and one more scales H (so that any
      loss scale representable in float64 gives the same relative accuracy).
    - `full`: return the named result `Sharpness` instead.

    **Returns:** `values` of shape `(k,)` (the loss's units per parameter²), or `(values,
    vectors)` with `vectors` of shape `(k, p)`, flat, unit norm, sign arbitrary; with
    `full=True` a `Sharpness(values (k,), residuals (k,), vectors (k, p), products)`,
    `residuals` the ‖Hv − λv‖ of each pair.

    **Raises:** `ValueError` naming `k` (not an integer in [1, p]), `tol` (not in (0, 1)),
    `max_iters` (not an integer ≥ k), `v0` (not p or k·p numbers, or non-finite),
    `params` (no trainable leaves, not float64, NaN or inf outside `jit`) or `loss` (a Hessian
    that is not finite there, outside `jit`); `TypeError`
    naming `loss` (not a float scalar); a `UserWarning` naming k, the eigenvalue and its
    residual when Lanczos stops at `max_iters` with a residual above `tol`·|λ₁| (outside
    `jit`; under `jit` read `full=True`'s residuals).

    **Reference:** Cohen, Kaur, Li, Kolter & Talwalkar 2021, "Gradient descent on neural
    networks typically occurs at the edge of stability", ICLR, §3 and App. (sharpness by
    Lanczos on the full batch); Golub & Van Loan §10.3 (block Lanczos); Ruhe 1979 (its band
    form).
    """
    f, w, _, _ = flat_loss(loss, params)
    p = w.shape[0]
    k = check_k(k, p)
    _check_search(tol, max_iters, k, v0, p)
    # Outside jit: NaN parameters gave NaN eigenvalues, and a NaN v0 was silently replaced
    # by the fallback start meant for a zero one
    if not isinstance(w, jax.core.Tracer):
        check_finite("params", w)
    if v0 is not None and not isinstance(v0, jax.core.Tracer):
        if not np.all(np.isfinite(np.asarray(v0, dtype=np.float64))):
            raise ValueError("v0 must be finite (zero is allowed: a fixed start replaces it)")
    result = top_eigenpairs(f, w, k, v0, tol=tol, max_iters=max_iters)
    if not isinstance(result.values, jax.core.Tracer):
        _check_values(result.values, "at params")
        _check_certified("sharpness", result, k, tol, max_iters, "")
    if full:
        return result
    return (result.values, result.vectors) if eigenvectors else result.values


def _check_certified(who, result, k, tol, max_iters, where) -> None:
    """A `UserWarning` naming k and the residual where a pair's ‖Hv − λv‖ exceeds
    tol·|λ₁| (Lanczos stopped at max_iters first)."""
    values, residuals = np.asarray(result.values), np.asarray(result.residuals)
    scale = max(float(np.max(np.abs(values))), 1e-300)
    worst = int(np.argmax(residuals))
    if residuals[worst] > tol * scale:
        warnings.warn(
            f"{who}: Lanczos stopped at max_iters={max_iters}{where} before certifying the "
            f"k={k} eigenvalues: residual ‖Hv − λv‖ = {residuals[worst]:.2g} of eigenvalue "
            f"{worst + 1} ({values[worst]:.6g}), relative {residuals[worst] / scale:.2g} > "
            f"tol={tol:g}; raise max_iters for eigenvalues to tol",
            stacklevel=3,
        )


def _check_values(values, where: str) -> None:
    """Raise `ValueError` naming `loss` where Lanczos returned NaN or inf eigenvalues (a loss
    or a Hessian that is not finite there); they were returned as data."""
    if not np.all(np.isfinite(np.asarray(values))):
        raise ValueError(
            f"loss: its Hessian {where} is not finite (NaN or inf Hessian-vector products); "
            "check the loss and its data"
        )


def _check_search(tol, max_iters, k: int, v0, p: int) -> None:
    """One line naming `tol`, `max_iters` or `v0` when it cannot give a Lanczos search."""
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating)):
        raise ValueError(f"tol must be a real number in (0, 1), got {tol!r}")
    if not 0.0 < float(tol) < 1.0:
        raise ValueError(f"tol must lie in (0, 1), got {tol!r}")
    if isinstance(max_iters, bool) or not isinstance(max_iters, (int, np.integer)):
        raise ValueError(f"max_iters must be an integer >= k = {k}, got {max_iters!r}")
    if max_iters < k:
        raise ValueError(f"max_iters must be >= k = {k}, got {max_iters}")
    if v0 is not None and np.size(v0) not in (p, k * p):
        raise ValueError(
            f"v0 must hold p = {p} or k·p = {k * p} numbers (flat (p,) or (k, p)), "
            f"got shape {np.shape(v0)}"
        )


def sharpness_along(
    loss: Callable, trajectory, k: int = 1, *, tol: float = TOL, max_iters: int = MAX_ITERS
):
    """The k largest Hessian eigenvalues at every save of a `Trajectory` (solved with
    `save_params=True`), each Lanczos run warm-started from the previous save's eigenvectors
    (mixed with a pseudo-random part, as in `sharpness`).

    `tol` and `max_iters` as in `sharpness`. A warm start converges in fewer products, so a
    small `max_iters` (40, say) is cheaper: each convergence test diagonalises a
    `max_iters`-square matrix.

    **Returns:** `SharpnessAlong(values (T, k), residuals (T, k), products (T,))`: the
    eigenvalues, descending, with multiplicity; ‖Hv − λv‖ of each pair; the Hessian-vector
    products of Lanczos at each save.

    **Raises:** `ValueError` when the trajectory has no saved parameters, or as `sharpness`;
    a `UserWarning` for each save where Lanczos stops at `max_iters` above `tol`, naming
    the save, k and the residual.
    """
    if trajectory.params is None:
        raise ValueError("trajectory: solved with save_params=False; sharpness needs params")
    f, w, _, _ = flat_loss(loss, trajectory.at(0))
    k = check_k(k, w.shape[0])
    _check_search(tol, max_iters, k, None, w.shape[0])
    trainable, _ = partition(trajectory.params)
    flat = jax.vmap(FlatSpec.of(jax.tree.map(lambda a: a[0], trainable)).ravel)(trainable)
    values, residuals, products, v0 = [], [], [], None
    for i in range(len(trajectory.ts)):
        result = top_eigenpairs(f, flat[i], k, v0, tol=tol, max_iters=max_iters)
        where = f" at save {i} (t={float(trajectory.ts[i]):.6g})"
        _check_values(result.values, where.strip())
        _check_certified("sharpness_along", result, k, tol, max_iters, where)
        v0 = result.vectors  # warm start (mixed with a pseudo-random part in Lanczos)
        values.append(np.asarray(result.values))
        residuals.append(np.asarray(result.residuals))
        products.append(int(result.products))
    return SharpnessAlong(np.stack(values), np.stack(residuals), np.asarray(products))
