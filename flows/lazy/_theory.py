"""The constants and bounds of the lazy-training theorems, computed from a model at w0.

Chizat, Oyallon & Bach 2019, "On Lazy Training in Differentiable Programming": Theorem 2.2
(finite horizon), Theorem 2.4 (uniform in time), and the fits that compare measurements with
them (log-log slopes over α, late exponential rates in t).

h: R^p → R^{n·k} is the model's output on all n training inputs, flattened; J = Dh(w0) is its
(n·k, p) Jacobian and Σ = JJᵀ the NTK Gram matrix on the training inputs.
"""

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from models._checks import prng_key

from .._checks import check_number, check_positive
from .._flat import flat_model
from .._flat import outputs as _outputs
from .._losses import SquaredLoss
from ..ntk._gram import ntk_gram
from ._comparison import check_pair

# λ_min ≤ this·λ_max is round-off: the same cut-off as `linear_closed_form`'s eig_tol.
_SINGULAR = 1e-12


@eqx.filter_jit
def _second_derivative_norm(pieces, w, key, iterations):
    """max over the iterates of ‖D²h(w)[u,u]‖ (unit u), by alternating power iteration:
    z = D²h(w)[u,u]/‖·‖, then u ← (H_z + ‖D²h(w)[u,u]‖·I)u/‖·‖ with H_z = ∇²⟨z, h⟩(w), the
    Hessian of one output direction. Each step increases uᵀH_z u = ⟨z, D²h(w)[u,u]⟩.
    Jitted with the model's pieces as arguments: one compilation per model structure."""
    h = flat_model(*pieces)

    def d2(u):
        return jax.jvp(lambda v: jax.jvp(h, (v,), (u,))[1], (w,), (u,))[1]

    def hvp(z, u):
        return jax.jvp(jax.grad(lambda v: jnp.vdot(z, h(v))), (w,), (u,))[1]

    def step(carry, _):
        u, best = carry
        b = d2(u)
        nb = jnp.linalg.norm(b)
        z = b / jnp.where(nb > 0, nb, 1.0)
        # Shifted by the Rayleigh quotient uᵀH_z u = ‖b‖ ≥ 0: the iteration goes to the largest
        # eigenvalue of H_z, not the largest in modulus (two-layer Hessians come in ± pairs,
        # where a plain power iteration oscillates between the two).
        v = hvp(z, u) + nb * u
        nv = jnp.linalg.norm(v)
        u = jnp.where(nv > 0, v / jnp.where(nv > 0, nv, 1.0), u)
        return (u, jnp.maximum(best, nb)), None

    u0 = jax.random.normal(key, w.shape, dtype=w.dtype)
    (u, best), _ = jax.lax.scan(step, (u0 / jnp.linalg.norm(u0), 0.0), None, length=iterations)
    return jnp.maximum(best, jnp.linalg.norm(d2(u)))


def jacobian_lipschitz(
    model, X, *, radius: float = 1.0, points: int = 5, iterations: int = 40, key=None
) -> tuple[float, str]:
    """An estimate of Lip(Dh) near w0, the Lipschitz constant of the Jacobian of the outputs.

    Lip(Dh) on a convex set is sup ‖D²h(w)‖ over it, and for the symmetric bilinear map
    D²h(w), ‖D²h(w)‖ = sup over unit u of ‖D²h(w)[u,u]‖. This is maximised by alternating
    power iteration, z = D²h(w)[u,u]/‖·‖ then u ← (∇²⟨z, h⟩(w) + ‖D²h(w)[u,u]‖)u/‖·‖
    (Hessian-vector products, no p×p matrix), at w0 and at `points − 1` random points at
    distance `radius` from w0. Every iterate is a value the supremum exceeds, so the estimate
    is **a lower bound** of Lip(Dh) on the ball of that radius: a smaller Lip gives a larger C0
    in Theorem 2.4.

    **Arguments:**
    - `model`: equinox Module on one input `(d,)`; `X`: inputs `(n, d)`.
    - `radius`: distance from w0 (flat parameter norm) of the extra points, ≥ 0.
    - `points`: number of points (w0 included), ≥ 1. `iterations`: power iterations per point.
    - `key`: `jax.random` key (default `PRNGKey(0)`).

    **Returns:** `(estimate, method)`: a float ≥ 0 and a sentence stating how it was obtained.

    **Raises:** `ValueError` naming `radius`, `points` or `iterations` when out of range, or
    `key` when it is not a `jax.random` key.

    **Reference:** Chizat, Oyallon & Bach 2019, Thm 2.4 (the constant Lip(Dh) in C0).
    """
    radius = float(radius)
    if not math.isfinite(radius) or radius < 0:
        raise ValueError(f"radius must be finite and >= 0, got {radius}")
    if int(points) < 1 or int(iterations) < 1:
        raise ValueError(f"points and iterations must be >= 1, got {points}, {iterations}")
    key = jax.random.PRNGKey(0) if key is None else prng_key("key", key)
    w0, _, pieces = _outputs(model, X)
    best = 0.0
    for i, k in enumerate(jax.random.split(key, int(points))):
        k_dir, k_u = jax.random.split(k)
        w = w0
        if i > 0:
            direction = jax.random.normal(k_dir, w0.shape, dtype=w0.dtype)
            w = w0 + radius * direction / jnp.linalg.norm(direction)
        value = _second_derivative_norm(pieces, w, k_u, int(iterations))
        best = max(best, float(value))
    method = (
        f"max of ‖D²h(w)[u,u]‖ over unit u by alternating power iteration ({int(iterations)} "
        "iterations of z = D²h(w)[u,u]/‖·‖, u ← (∇²⟨z,h⟩(w) + ‖D²h(w)[u,u]‖)u/‖·‖) at w0 and "
        f"{int(points) - 1} random points at distance {radius:g} from w0: a lower estimate of "
        "Lip(Dh) on that ball"
    )
    return best, method


@dataclasses.dataclass(frozen=True)
class LazyConstants:
    """The quantities of Theorems 2.2 and 2.4 for one model, data set and loss, at w0.

    - `ntk_eigenvalues`: eigenvalues of Σ = JJᵀ, ascending, shape `(n·k,)`.
    - `lambda_min`, `lambda_max`: their extremes. `sigma_min` = √λ_min, the smallest singular
      value of Dh(w0)ᵀ (0 when n·k > p); `jacobian_norm` = ‖Dh(w0)‖ = √λ_max.
    - `lip_jacobian`: estimate of Lip(Dh) (None when not estimated), `lip_method`: how.
    - `m`, `M`, `kappa`: strong convexity, smoothness and κ = M/m of R (as a function of all
      n·k outputs).
    - `h0`: αh(w0)/α = h(w0), shape `(n·k,)`; `y_star`: the minimiser of R, shape `(n·k,)`.
    - `C0` = σ_min³/(32κ^{3/2}‖Dh(w0)‖Lip(Dh)) (inf when Lip(Dh) = 0), or None when it does
      not exist or is unknown: Lip(Dh) not estimated, or Σ singular to round-off
      (λ_min ≤ 1e-12·λ_max, σ_min = 0: the theorem does not apply).
    - `theorem_2_4_rate` = m·σ_min²/4, the exponential rate of Theorem 2.4's bound.
    - `n_params`: p.
    - `unavailable`: `{name: reason}` for each constant that is None (`C0`, `alpha_min`).
    """

    ntk_eigenvalues: np.ndarray
    lambda_min: float
    lambda_max: float
    sigma_min: float
    jacobian_norm: float
    lip_jacobian: float | None
    lip_method: str
    m: float
    M: float
    kappa: float
    h0: np.ndarray
    y_star: np.ndarray
    C0: float | None
    theorem_2_4_rate: float
    n_params: int
    unavailable: dict = dataclasses.field(default_factory=dict)

    @property
    def h0_norm(self) -> float:
        return float(np.linalg.norm(self.h0))

    @property
    def y_star_norm(self) -> float:
        return float(np.linalg.norm(self.y_star))

    @property
    def alpha_min(self) -> float | None:
        """‖y*‖/C0: Theorem 2.4 needs α above it (None when C0 is None or 0: no α suffices;
        `unavailable["alpha_min"]` says why)."""
        if self.C0 is None or self.C0 == 0:
            return None
        return 0.0 if math.isinf(self.C0) else self.y_star_norm / self.C0

    def theorem_2_4_conditions(self, alpha: float) -> bool | None:
        """Whether σ_min > 0, ‖h(w0)‖ ≤ C0 and α > ‖y*‖/C0 hold (False when Σ is singular;
        None when C0 is unknown because Lip(Dh) is)."""
        if self.singular:
            return False
        if self.C0 is None:
            return None
        if self.alpha_min is None:
            return False
        return bool(self.sigma_min > 0 and self.h0_norm <= self.C0 and alpha > self.alpha_min)

    @property
    def singular(self) -> bool:
        """Whether Σ = JJᵀ is singular to round-off: λ_min ≤ 1e-12·λ_max."""
        return self.lambda_min <= _SINGULAR * self.lambda_max

    def summary(self) -> dict:
        """The scalars, as a JSON-ready dict (inf written as None)."""
        finite = lambda x: None if x is None or math.isinf(x) else float(x)  # noqa: E731
        return {
            "lambda_min": self.lambda_min,
            "lambda_max": self.lambda_max,
            "ntk_eigenvalues_smallest": [float(x) for x in self.ntk_eigenvalues[:5]],
            "sigma_min": self.sigma_min,
            "jacobian_norm": self.jacobian_norm,
            "lip_jacobian": self.lip_jacobian,
            "lip_method": self.lip_method,
            "m": self.m,
            "M": self.M,
            "kappa": self.kappa,
            "h0_norm": self.h0_norm,
            "y_star_norm": self.y_star_norm,
            "C0": finite(self.C0),
            "alpha_min": finite(self.alpha_min),
            "theorem_2_4_rate": self.theorem_2_4_rate,
            "n_params": self.n_params,
            "unavailable": dict(self.unavailable),
        }


def lazy_constants(
    model,
    data,
    *,
    loss=None,
    estimate_lip: bool = True,
    lip_radius: float = 1.0,
    lip_points: int = 5,
    lip_iterations: int = 40,
    key=None,
) -> LazyConstants:
    """Compute the constants of Theorems 2.2 and 2.4 for a model at its parameters w0.

    **Arguments:**
    - `model`: equinox Module on one input `(d,)`; `data`: `(X (n, d), Y (n,) or (n, k))`.
    - `loss`: a `flows.SquaredLoss` (default: sum, R = ½‖y − y*‖², m = M = 1); its minimiser
      is y* = Y.
    - `estimate_lip`: estimate Lip(Dh) with `jacobian_lipschitz` (pass False for a model whose
      Dh is not Lipschitz, e.g. ReLU: C0 is then None).
    - `lip_radius`, `lip_points`, `lip_iterations`, `key`: passed to `jacobian_lipschitz`.

    **Returns:** a `LazyConstants`.

    **Raises:** `ValueError` if `loss` is not a `SquaredLoss` (the theorem needs R strongly
    convex and smooth), naming `data` if it is not a pair of finite arrays with n ≥ 1 rows,
    or if the model's outputs do not match Y; naming `key` if it is not a `jax.random` key.

    **Reference:** Chizat, Oyallon & Bach 2019, Thm 2.4 (σ_min, ‖Dh(w0)‖, Lip(Dh), κ, C0).
    """
    if key is not None:
        prng_key("key", key)
    loss = SquaredLoss() if loss is None else loss
    if not isinstance(loss, SquaredLoss):
        raise ValueError(
            f"loss must be a flows.SquaredLoss (strongly convex and smooth), got {loss!r}"
        )
    X, Y = (np.asarray(a) for a in check_pair(data))  # NaN targets gave a NaN y_star
    w0, h, _ = _outputs(model, X)
    h0 = np.asarray(h(w0))
    if h0.size != Y.size:
        raise ValueError(f"model outputs have {h0.size} entries but the targets have {Y.size}")
    lam = np.linalg.eigvalsh(ntk_gram(model, X))
    lam_min, lam_max = max(float(lam[0]), 0.0), max(float(lam[-1]), 0.0)
    sigma_min, jac_norm = math.sqrt(lam_min), math.sqrt(lam_max)
    m, M = loss.curvature(X.shape[0])
    kappa = M / m
    if estimate_lip:
        lip, method = jacobian_lipschitz(
            model, X, radius=lip_radius, points=lip_points, iterations=lip_iterations, key=key
        )
    else:
        lip, method = None, "not estimated (Dh is not Lipschitz for this model)"
    unavailable = {}
    if lam_min <= _SINGULAR * lam_max:
        why = (
            f"the NTK Gram matrix is singular to round-off (λ_min = {lam_min:.3g}, "
            f"λ_max = {lam_max:.3g}): Theorem 2.4 needs σ_min > 0"
        )
        C0, unavailable["C0"], unavailable["alpha_min"] = None, why, why
    elif lip is None:
        C0, unavailable["C0"] = None, f"Lip(Dh) unknown: {method}"
        unavailable["alpha_min"] = unavailable["C0"]
    elif lip == 0:
        C0 = math.inf
    else:
        C0 = sigma_min**3 / (32 * kappa**1.5 * jac_norm * lip)
    return LazyConstants(
        ntk_eigenvalues=lam,
        lambda_min=lam_min,
        lambda_max=lam_max,
        sigma_min=sigma_min,
        jacobian_norm=jac_norm,
        lip_jacobian=lip,
        lip_method=method,
        m=m,
        M=M,
        kappa=kappa,
        h0=h0,
        y_star=np.ravel(Y),
        C0=C0,
        theorem_2_4_rate=m * lam_min / 4,
        n_params=int(w0.size),
        unavailable=unavailable,
    )


def theorem_2_2_bound(alpha: float, t1: float, loss_at_init: float) -> float:
    """Theorem 2.2's bound on the distance travelled: sup_{t ≤ T}‖w_α(t) − w0‖ ≤ √(T·R(αh(w0)))/α.

    **Arguments:** `alpha` > 0; `t1` = T > 0, flow time; `loss_at_init` = R(αh(w0)) ≥ 0 (R(0)
    when h(w0) = 0).

    **Returns:** the bound, a float.

    **Raises:** `ValueError` naming the argument when out of range.

    **Reference:** Chizat, Oyallon & Bach 2019, Thm 2.2 (proof: F_α decreases along the flow,
    so ∫₀ᵀ‖w'‖² dt ≤ F_α(w0), and Cauchy–Schwarz).
    """
    alpha, t1 = check_positive("alpha", alpha), check_positive("t1", t1)
    loss_at_init = float(loss_at_init)
    if not math.isfinite(loss_at_init) or loss_at_init < 0:
        raise ValueError(f"loss_at_init must be finite and >= 0, got {loss_at_init}")
    return math.sqrt(t1 * loss_at_init) / alpha


def theorem_2_4_bound(ts, alpha: float, constants: LazyConstants) -> np.ndarray:
    """Theorem 2.4's bound on the residual: √κ‖αh(w0) − y*‖·exp(−m·σ_min²·t/4).

    It bounds ‖αh(w_α(t)) − y*‖ for all t ≥ 0 when the theorem's conditions hold (see
    `LazyConstants.theorem_2_4_conditions`). For R = ½‖y − y*‖² the loss is ½ of its square.

    **Arguments:** `ts`: flow times `(T,)`; `alpha` > 0; `constants`: from `lazy_constants`.

    **Returns:** shape `(T,)`.

    **Reference:** Chizat, Oyallon & Bach 2019, Thm 2.4.
    """
    alpha = check_positive("alpha", alpha)
    start = np.linalg.norm(alpha * constants.h0 - constants.y_star)
    return math.sqrt(constants.kappa) * start * np.exp(-constants.theorem_2_4_rate * np.asarray(ts))


def _paired(name_a: str, a, name_b: str, b) -> tuple:
    """`a` and `b` as float64 1-D arrays of one length, not empty. **Raises:** `ValueError`
    naming both (unequal lengths used to fail as numpy's "operands could not be broadcast";
    empty ones gave None, silently)."""
    arrays = []
    for name, values in ((name_a, a), (name_b, b)):
        try:
            values = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name} must be a 1-D array of numbers, got {type(values).__name__}"
            ) from None
        if values.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array, got shape {values.shape}")
        arrays.append(values)
    if arrays[0].shape != arrays[1].shape:
        raise ValueError(
            f"{name_a} and {name_b} must have the same length, got {arrays[0].size} and "
            f"{arrays[1].size}"
        )
    if arrays[0].size == 0:
        raise ValueError(f"{name_a} and {name_b} are empty: a fit needs points")
    return tuple(arrays)


def loglog_slope(x, y) -> float | None:
    """Least-squares slope of log y against log x, over the pairs with x, y > 0 and finite.

    **Returns:** the slope, or None when fewer than two pairs remain or they share one x.

    **Raises:** `ValueError` naming `x` and `y` unless they are 1-D arrays of one length,
    not empty.
    """
    x, y = _paired("x", x, "y", y)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if np.count_nonzero(keep) < 2 or np.ptp(np.log(x[keep])) == 0:
        return None
    return float(np.polyfit(np.log(x[keep]), np.log(y[keep]), 1)[0])


def late_rate(ts, values, *, start: float, floor: float = 0.0) -> float | None:
    """The late exponential rate c of values(t) ≈ C·e^{−ct}: minus the least-squares slope of
    log values against t over the times t ≥ `start` where values > `floor`.

    Pass the residual ‖αh − y*‖ = √(2R) to compare c with λ_min(Σ) and with Theorem 2.4's
    rate m·σ_min²/4; the loss R itself decays at 2c. Set `floor` above the solver's round-off
    level so that a flat tail does not bias the fit.

    **Returns:** c (1/flow-time units), or None when fewer than three points remain or they
    share one time.

    **Raises:** `ValueError` naming `ts` and `values` unless they are 1-D arrays of one length,
    not empty; naming `start` or `floor` unless it is a finite number (a NaN gave None,
    silently).

    **Reference:** Chizat, Oyallon & Bach 2019, Thm 2.4 (exponential convergence).
    """
    ts, values = _paired("ts", ts, "values", values)
    start, floor = check_number("start", start), check_number("floor", floor)
    keep = (ts >= start) & np.isfinite(values) & (values > max(floor, 0.0))
    if np.count_nonzero(keep) < 3 or np.ptp(ts[keep]) == 0:
        return None
    return float(-np.polyfit(ts[keep], np.log(values[keep]), 1)[0])
