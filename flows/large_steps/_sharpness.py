"""The sharpness S = λ_max(∇²L) and the next eigenvalues, by Lanczos on Hessian-vector
products of the full-batch loss, in float64."""

import warnings
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from models import partition

from .._checks import check_finite
from .._flat import FlatSpec
from ._hessian import flat_loss, hvp
from ._lanczos import lanczos_top

#: Relative Ritz residual at which Lanczos stops (the eigenvalues are then at least this
#: accurate, relative to the largest in magnitude).
TOL = 1e-11
#: The most Lanczos vectors (Hessian-vector products) of one call.
MAX_ITERS = 200


def check_k(k, p: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if k > p:
        raise ValueError(f"k must be <= p, the number of trainable parameters ({p}), got {k}")
    return int(k)


@eqx.filter_jit
def _top(f, w, v0, k, m_max, tol):
    return lanczos_top(lambda v: hvp(f, w, v), v0, k, m_max, tol)


def top_eigenpairs(f, w, k: int, v0=None, *, tol=TOL, max_iters=MAX_ITERS):
    """`(values (k,), vectors (k, p), products, residual)` of the Hessian of the flat loss `f`
    at `w`; jit-compatible (also inside a vector field or an observable)."""
    p = w.shape[0]
    m_max = min(p, max(int(max_iters), k + 2))
    v0 = jnp.zeros_like(w) if v0 is None else jnp.asarray(v0, w.dtype).reshape(-1, p).sum(0)
    return _top(f, w, v0, k, m_max, jnp.asarray(tol, w.dtype))


def sharpness(
    loss: Callable,
    params: Any,
    k: int = 1,
    *,
    eigenvectors: bool = False,
    v0=None,
    tol: float = TOL,
    max_iters: int = MAX_ITERS,
):
    """The k largest eigenvalues of the Hessian ∇²loss(params), descending: S = λ₁ ≥ … ≥ λ_k.

    Lanczos on Hessian-vector products (forward over reverse, full batch: `loss` is whatever
    it evaluates), fully reorthogonalised, in float64. Works under `jit`, so it is usable as
    an observable of `gradient_flow` and `gradient_descent`:
    `observables={"sharpness": lambda p: flows.sharpness(loss, p)}` (each save then starts
    cold; `flows.large_steps.sharpness_along` warm-starts along a saved trajectory).

    **Arguments:**
    - `loss`: scalar function of the parameter pytree.
    - `params`: the pytree (an equinox Module included); its p trainable float64 entries.
    - `k`: how many eigenvalues, 1 ≤ k ≤ p.
    - `eigenvectors`: also return the unit eigenvectors.
    - `v0`: warm start, flat `(p,)` or `(k, p)` (previous eigenvectors, in the order of
      `jax.flatten_util.ravel_pytree` of the trainable leaves); default a fixed random vector.
    - `tol`: relative Ritz residual to stop at (the eigenvalues' error is below it, relative
      to |λ₁|); `max_iters`: most Hessian-vector products (capped at p, where Lanczos is exact).

    **Returns:** `values` of shape `(k,)` (the loss's units per parameter²), or `(values,
    vectors)` with `vectors` of shape `(k, p)`, flat, unit norm, sign arbitrary.

    **Raises:** `ValueError` naming `k` (not an integer in [1, p]), `tol` (not in (0, 1)),
    `max_iters` (not an integer ≥ k), `v0` (not p or k·p numbers, or non-finite),
    `params` (no trainable leaves, not float64, NaN or inf outside `jit`) or `loss` (a Hessian
    that is not finite there, outside `jit`); `TypeError`
    naming `loss` (not a float scalar); a `UserWarning` when Lanczos stops at `max_iters`
    with its residual above `tol`.

    **Reference:** Cohen, Kaur, Li, Kolter & Talwalkar 2021, "Gradient descent on neural
    networks typically occurs at the edge of stability", ICLR, §3 and App. (sharpness by
    Lanczos on the full batch); Golub & Van Loan §10.1 (Lanczos).
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
    values, vectors, _, residual = top_eigenpairs(f, w, k, v0, tol=tol, max_iters=max_iters)
    if not isinstance(values, jax.core.Tracer):
        _check_values(values, "at params")
    if not isinstance(residual, jax.core.Tracer) and float(residual) > tol:
        warnings.warn(
            f"sharpness: Lanczos stopped at max_iters={max_iters} with relative Ritz residual "
            f"{float(residual):.2g} > tol={tol:g}; raise max_iters for eigenvalues to tol",
            stacklevel=2,
        )
    return (values, vectors) if eigenvectors else values


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
    `save_params=True`), each Lanczos run warm-started from the previous save's eigenvectors,
    so that a smooth trajectory costs a few Hessian-vector products per save.

    `tol` and `max_iters` as in `sharpness`. A warm start converges in a few products, so a
    small `max_iters` (40, say) is cheaper: each convergence test diagonalises a
    `max_iters`-square tridiagonal matrix.

    **Returns:** `(values (T, k), products (T,))`: the eigenvalues, descending, and the
    Hessian-vector products each save took.

    **Raises:** `ValueError` when the trajectory has no saved parameters, or as `sharpness`;
    a `UserWarning` for each save where Lanczos stops at `max_iters` above `tol`.
    """
    if trajectory.params is None:
        raise ValueError("trajectory: solved with save_params=False; sharpness needs params")
    f, w, _, _ = flat_loss(loss, trajectory.at(0))
    k = check_k(k, w.shape[0])
    _check_search(tol, max_iters, k, None, w.shape[0])
    trainable, _ = partition(trajectory.params)
    flat = jax.vmap(FlatSpec.of(jax.tree.map(lambda a: a[0], trainable)).ravel)(trainable)
    noise = jax.random.normal(jax.random.PRNGKey(1), w.shape, w.dtype) / np.sqrt(w.shape[0])
    values, products, v0 = [], [], None
    for i in range(len(trajectory.ts)):
        lam, vec, n, residual = top_eigenpairs(f, flat[i], k, v0, tol=tol, max_iters=max_iters)
        _check_values(lam, f"at save {i} (t={float(trajectory.ts[i]):.6g})")
        if float(residual) > tol:
            warnings.warn(
                f"sharpness_along: Lanczos stopped at max_iters={max_iters} at save {i} "
                f"(t={float(trajectory.ts[i]):.6g}) with relative Ritz residual "
                f"{float(residual):.2g} > tol={tol:g}",
                stacklevel=2,
            )
        # Warm start: the sum of the previous eigenvectors, plus a little of a fixed random
        # direction, so that an eigenvalue rising into the top k is in the Krylov space.
        v0 = vec.sum(0) + 1e-3 * noise
        values.append(np.asarray(lam))
        products.append(int(n))
    return np.stack(values), np.asarray(products)
