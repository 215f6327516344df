"""The eigenvalues of the GDA field's Jacobian at a point: dense for small games, the few of
largest real part by Arnoldi on Jacobian-vector products for large ones. Traceable, so that
it serves as an observable along a flow."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_finite, check_number
from ._field import game_field

#: Up to this many trainable entries "auto" forms the Jacobian (p JVPs) and takes all its
#: eigenvalues; above, Arnoldi.
DENSE_MAX = 400
METHODS = ("auto", "dense", "arnoldi")


def _sorted(values, k):
    order = jnp.argsort(-jnp.real(values), stable=True)
    return values[order][:k]


@eqx.filter_jit
def _dense(field, y, k):
    J = jax.jacfwd(lambda w: field(0.0, w, None))(y)
    return _sorted(jnp.linalg.eigvals(J), k)


@eqx.filter_jit
def _arnoldi(field, y, k, m):
    """Ritz values of ∂field/∂y on the Krylov space of m JVPs from a fixed pseudo-random
    start, Gram–Schmidt twice (Saad 2011, "Numerical Methods for Large Eigenvalue Problems",
    Alg. 6.2); the k of largest real part."""
    _, jvp = jax.linearize(lambda w: field(0.0, w, None), y)
    p = y.size
    start = jax.random.normal(jax.random.PRNGKey(0), (p,), dtype=y.dtype)
    V = jnp.zeros((m + 1, p), y.dtype).at[0].set(start / jnp.linalg.norm(start))
    H = jnp.zeros((m + 1, m), y.dtype)

    def body(j, carry):
        V, H = carry
        w = jvp(V[j])
        scale = jnp.linalg.norm(w)
        mask = (jnp.arange(m + 1) <= j)[:, None]
        for _ in range(2):
            c = (V * mask) @ w
            w = w - c @ (V * mask)
            H = H.at[:, j].add(c[: m + 1])
        beta = jnp.linalg.norm(w)
        # An invariant space (happy breakdown): later vectors stay zero, and their columns
        # of H are zero, so the Ritz values of the invariant block are exact.
        ok = beta > 1e-12 * jnp.maximum(scale, 1e-300)
        H = H.at[j + 1, j].set(jnp.where(ok, beta, 0.0))
        V = V.at[j + 1].set(jnp.where(ok, w / jnp.where(ok, beta, 1.0), 0.0))
        return V, H

    V, H = jax.lax.fori_loop(0, m, body, (V, H))
    return _sorted(jnp.linalg.eigvals(H[:m, :m]), k)


def jacobian_eigenvalues(
    loss: Callable | tuple,
    params: tuple,
    *,
    k: int | None = None,
    consensus: float = 0.0,
    method: str = "auto",
    krylov_dim: int = 60,
) -> jax.Array:
    """The eigenvalues of the Jacobian ∂v/∂y of the GDA field v of `gda_flow` at `params`,
    sorted by decreasing real part (a fixed point is locally attracting when all have
    negative real part; purely imaginary ones make a centre).

    **Arguments:**
    - `loss`, `params`: as `loss`, `params0` of `gda_flow` (the point, a pair).
    - `k`: how many to return (those of largest real part); `None`: all (dense) or
      `krylov_dim` (Arnoldi).
    - `consensus`: γ ≥ 0, the Jacobian of v − γ∇½‖v‖² instead.
    - `method`: "dense" (the p × p Jacobian from p JVPs, then `jnp.linalg.eigvals`),
      "arnoldi" (`krylov_dim` JVPs; the Ritz values of largest real part: exact once the
      Krylov space is invariant, else approximations that are best for the eigenvalues on
      the outside of the spectrum), or "auto": dense up to `DENSE_MAX` = 400 trainable
      entries.
    - `krylov_dim`: Arnoldi's steps m (at most p).

    Traceable: inside an observable of `gda_flow` (`lambda pair: jacobian_eigenvalues(loss,
    pair, k=4)`) it is computed at every save time.

    **Returns:** complex `(k,)` (or `(p,)` / `(krylov_dim,)` for `k=None`).

    **Raises:** `ValueError` naming `method`, `k`, `krylov_dim` or `consensus`, and as
    `gda_flow` for `loss` and `params` (also non-finite `params`); `FloatingPointError` when
    the Jacobian is not finite (both checked when `params` is concrete).

    **Reference:** Mescheder, Geiger & Nowozin 2018, ICML, §2 (convergence of the GDA flow
    from the Jacobian's spectrum at the equilibrium); Saad 2011 (Arnoldi).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    field, y, spec = game_field(loss, params, consensus)
    p = spec.size
    if method == "auto":
        method = "dense" if p <= DENSE_MAX else "arnoldi"
    m = min(check_number("krylov_dim", krylov_dim, int), p)
    if m < 1:
        raise ValueError(f"krylov_dim must be an integer >= 1, got {krylov_dim!r}")
    n = p if method == "dense" else m
    if k is not None:
        k = check_number("k", k, int)
        if not 1 <= k <= n:
            raise ValueError(f"k must be an integer in [1, {n}] here, got {k!r}")
    k = n if k is None else k
    concrete = not isinstance(y, jax.core.Tracer)  # traced inside an observable
    if concrete:
        check_finite("params", y)
    values = _dense(field, y, k) if method == "dense" else _arnoldi(field, y, k, m)
    if concrete:
        check_jacobian_finite(values)
    return values


def check_jacobian_finite(values) -> None:
    """A `FloatingPointError` when the eigenvalues (or the Jacobian) at finite parameters
    are not finite: they were returned as NaN + NaNi."""
    if not np.all(np.isfinite(np.asarray(values))):
        raise FloatingPointError(
            "the Jacobian of the game's field at params is not finite (NaN or inf): the loss "
            "or its derivatives are not finite there; check the loss and the point"
        )
