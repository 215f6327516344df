"""The Dirac-GAN (Mescheder, Geiger & Nowozin 2018, §2.1): data δ₀, generator δ_θ, critic
D_ψ(x) = ψx, as a preset of `gan_loss`, and its closed forms: the eigenvalues of the GDA
field's Jacobian at the equilibrium (0, 0) and the period of the unregularised orbits."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.integrate

from models import DiracGAN

from .. import divergences  # the registry shared with optimal transport
from .._checks import check_number
from ._fgan import ACTIVATIONS, K0
from ._objectives import OBJECTIVES, gan_loss


def dirac_data() -> tuple[np.ndarray, np.ndarray]:
    """(real, latent) = (δ₀ as one sample `(1, 1)`, one latent sample `(1, 1)`), float64."""
    return np.zeros((1, 1)), np.zeros((1, 1))


def dirac_gan(objective: str = "gan", *, penalty=None, tight: bool = False, theta=1.0, psi=1.0):
    """`(loss, params0)` of the Dirac-GAN: `gan_loss(*dirac_data(), objective, penalty=...,
    tight=...)` and `models.DiracGAN(theta, psi)`. For "gan"/"wgan" the loss is
    L(θ, ψ) = f(ψθ) + f(0); for an f-GAN F = g_f(0) − f*(g_f(ψθ)).

    **Raises:** as `gan_loss` and `models.DiracGAN`."""
    return gan_loss(*dirac_data(), objective, penalty=penalty, tight=tight), DiracGAN(theta, psi)


def rate(objective: str = "gan"):
    """t ↦ the angular speed of the unregularised orbit at ψθ = t: f′(t) for "gan", "ns_gan"
    (near the orbit's own f) and "wgan"; k(t) = d/dt f*(g_f(t)) for an f-GAN."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if objective == "wgan":
        return lambda t: jnp.ones_like(t)
    if objective in ("gan", "ns_gan"):
        return lambda t: jax.nn.sigmoid(-t)
    div, g = divergences.get(objective), ACTIVATIONS[objective]
    return jax.vmap(jax.grad(lambda t: div.f_conj(g(t))))


def dirac_eigenvalues(
    objective: str = "gan",
    *,
    gamma: float = 0.0,
    sigma: float = 0.0,
    consensus: float = 0.0,
) -> np.ndarray:
    """The closed-form eigenvalues `(2,)` (complex) of the Dirac-GAN's GDA Jacobian at (0, 0),
    with a = f′(0) (k(0) for an f-GAN: 1/e for "kl", ½ for "js", "tv" and the GAN, 1 for
    the rest) and, for "gan"/"wgan", f″(0) = −¼ / 0:

    - unregularised: ±i a;
    - R1 or R2 with weight γ (`gamma`): −γ/2 ± √(γ²/4 − a²);
    - instance noise N(0, σ²) (`sigma`): f″(0)σ² ± √(f″(0)²σ⁴ − a²);
    - consensus γ (`consensus`): −γa² ± i a.

    At most one of `gamma`, `sigma`, `consensus` may be nonzero.

    **Reference:** Mescheder, Geiger & Nowozin 2018, ICML, Lemmas 2.2, 3.2, 3.3 and §3.2.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    named = {"gamma": gamma, "sigma": sigma, "consensus": consensus}
    for name, value in named.items():
        named[name] = check_number(name, value)
        if named[name] < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    gamma, sigma, consensus = named.values()
    if sum(v != 0 for v in (gamma, sigma, consensus)) > 1:
        raise ValueError("at most one of gamma, sigma, consensus may be nonzero")
    a = K0.get(objective, 1.0 if objective == "wgan" else 0.5)
    curvature = {"gan": -0.25, "ns_gan": -0.25, "wgan": 0.0}.get(objective)
    if sigma and curvature is None:
        raise ValueError("sigma: instance noise's closed form is for 'gan', 'ns_gan', 'wgan'")
    if consensus:
        centre = -consensus * a**2
        return np.array([centre + 1j * a, centre - 1j * a])
    return _conjugate_pair(curvature * sigma**2 if sigma else -gamma / 2, a)


def _conjugate_pair(centre: float, a: float) -> np.ndarray:
    """The roots c ± √(c² − a²) of λ² − 2cλ + a² = 0, without cancellation or overflow: when
    real, the one of larger size is c + sign(c)|c|√(1 − (a/c)²) and the other a² over it (their
    product). As c ± √(c² − a²), γ = 1e8 (R1, a = ½) gave the slow root 0 for −2.5e-9, σ = 1e3
    (instance noise) −5.00004e-7 for −5e-7, and γ = 1e160 an OverflowError."""
    if abs(centre) <= a:
        root = 1j * np.sqrt((a - centre) * (a + centre))
        return np.array([centre + root, centre - root])
    ratio = a / abs(centre)
    large = centre + np.copysign(abs(centre) * np.sqrt((1 - ratio) * (1 + ratio)), centre)
    small = a**2 / large
    pair = [small, large] if centre < 0 else [large, small]
    return np.array(pair, dtype=complex)


def dirac_period(r: float, objective: str = "gan") -> float:
    """The period T(r) = ∫₀^{2π} dφ / a((r²/2) sin 2φ) of the unregularised Dirac-GAN orbit of
    radius r (θ² + ψ² = r² is conserved), a = f′ (k for an f-GAN); by adaptive quadrature
    (scipy's QUADPACK) to 1e-13 relative. GAN: T(0⁺) = 4π, T(√2) = 14.238111828192 (the
    orbit through (1, 1)).

    **Raises:** `ValueError` naming `r` (not a number ≥ 0, or an orbit whose period exceeds
    the float64 range, r ≳ 37.7 for the GAN) or `objective`.

    **Reference:** Mescheder, Geiger & Nowozin 2018, §2.2 (the orbits are closed)."""
    r = check_number("r", r)
    if r < 0:
        raise ValueError(f"r must be >= 0, got {r}")
    speed = jax.jit(rate(objective))

    def integrand(phi):
        return 1.0 / float(speed(jnp.asarray([0.5 * r**2 * math.sin(2 * phi)]))[0])

    try:
        value, _ = scipy.integrate.quad(
            integrand, 0.0, 2 * math.pi, epsabs=0, epsrel=1e-13, limit=200
        )
    except ZeroDivisionError:  # was that error, unexplained (r = 38 for the GAN)
        raise ValueError(
            f"r={r:g}: the rate a((r²/2) sin 2φ) underflows to 0 on the orbit, so the period "
            "exceeds the float64 range (the GAN's T(r) = 2π(1 + I₀(r²/2)) does from r ≈ 37.7)"
        ) from None
    return value
