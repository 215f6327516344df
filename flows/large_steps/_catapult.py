"""The uv model of the catapult mechanism (Lewkowycz, Bahri, Dyer, Sohl-Dickstein & Gur-Ari
2020): f = vᵀu·x/√m with u, v ∈ R^m at the input x = 1, loss L = ½(f − y)², and NTK
λ = (‖u‖² + ‖v‖²)/m. Gradient descent on it is an exact two-dimensional map of (f, λ)."""

import jax.numpy as jnp
import numpy as np

from .._checks import check_number, check_positive


def _uv(params):
    """`(u, v)` of the uv model's `params`, or a `ValueError` naming params (checked at trace
    time: shapes only). u (3,) with v (4,) gave an NTK silently, another dict a KeyError."""
    shapes = None
    if isinstance(params, dict) and {"u", "v"} <= set(params):
        shapes = [jnp.shape(params[k]) for k in ("u", "v")]
    if shapes is None or len(shapes[0]) != 1 or shapes[0] != shapes[1] or not shapes[0][0]:
        got = shapes if shapes is not None else type(params).__name__
        raise ValueError(f'params must be {{"u": (m,), "v": (m,)}} with m >= 1, got {got}')
    return params["u"], params["v"]


def uv_output(params) -> jnp.ndarray:
    """f = vᵀu/√m for `params = {"u": (m,), "v": (m,)}`. **Raises:** `ValueError` naming
    params when it is not that."""
    u, v = _uv(params)
    return (v @ u) / jnp.sqrt(u.shape[0])


def uv_ntk(params) -> jnp.ndarray:
    """The NTK λ = (‖u‖² + ‖v‖²)/m, which is also the Hessian's eigenvalue at L = 0 along
    the model's tangent. **Raises:** `ValueError` naming params, as `uv_output`."""
    u, v = _uv(params)
    return (u @ u + v @ v) / u.shape[0]


def uv_loss(y: float):
    """L(params) = ½(f − y)², the uv model's loss with target `y`. **Raises:** `ValueError`
    naming y when it is not a finite number (a NaN gave a NaN loss)."""
    y = check_number("y", y)

    def loss(params):
        return 0.5 * (uv_output(params) - y) ** 2

    return loss


def uv_invariant(params) -> jnp.ndarray:
    """λ² − 4f²/m, conserved by the gradient flow of any loss of f (and ‖u‖² − ‖v‖² too)."""
    return uv_ntk(params) ** 2 - 4 * uv_output(params) ** 2 / params["u"].shape[0]


def uv_init(m: int, seed: int = 0) -> dict:
    """u, v ~ N(0, I_m), float64, each of shape (m,): λ0 ≈ 2 and f0 = O(1) for large m.
    **Raises:** `ValueError` naming `m` (not an integer >= 1) or `seed` (not one >= 0)."""
    if isinstance(m, bool) or int(m) != m or m < 1:
        raise ValueError(f"m must be an integer >= 1, got {m!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")  # numpy's named none
    rng = np.random.default_rng(int(seed))
    return {
        "u": jnp.asarray(rng.standard_normal(int(m))),
        "v": jnp.asarray(rng.standard_normal(int(m))),
    }


def catapult_map(f, lam, *, eta: float, y: float, m: int):
    """One exact gradient-descent step of the uv model on (f, λ):
    f' = f − ηλ(f − y) + η²(f − y)²f/m, λ' = λ + η(f − y)(ηλ(f − y) − 4f)/m.

    `f`, `lam` and `y` are numbers (a NaN or inf would run on as NaN); `eta`, `m` > 0.

    **Returns:** `(f', λ')`, two floats.

    **Raises:** `ValueError` naming `f`, `lam`, `y`, `eta` or `m` (not a finite number, or
    `eta`, `m` not > 0).

    **Reference:** Lewkowycz et al. 2020, "The large learning rate phase of deep learning:
    the catapult mechanism", eq. (3).
    """
    f, lam, y = check_number("f", f), check_number("lam", lam), check_number("y", y)
    eta = check_positive("eta", eta)
    m = check_positive("m", m)
    r = f - y
    return f - eta * lam * r + eta**2 * r**2 * f / m, lam + eta * r * (eta * lam * r - 4 * f) / m
