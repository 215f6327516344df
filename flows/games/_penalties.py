"""Penalties on the critic of a GAN, each a function of (critic, real, fake) that the critic's
objective subtracts, and instance noise, which smooths both players' objective.

Every penalty is deterministic (random directions and weights are drawn once from a seed),
so that the game is an ODE that can be solved to tolerance.
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_number


def _non_negative(name: str, value) -> float:
    value = check_number(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def _grad_x(critic, x):
    """∇_x D(x) for each row of x `(n, d)`: `(n, d)`."""
    return jax.vmap(jax.grad(lambda z: jnp.squeeze(critic(z))))(x)


def _safe_sqrt(s):
    """√s for s ≥ 0, with the gradient 0 (not NaN) at s = 0."""
    positive = s > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, s, 1.0)), 0.0)


def _norm(g):
    """‖g‖ per row, with the gradient 0 (not NaN) at g = 0 (a subgradient of the norm)."""
    return _safe_sqrt(jnp.sum(g**2, axis=-1))


def _pairs(real, fake, seed):
    """Interpolates x̂ = u·real + (1 − u)·fake over max(n, m) pairs (indices cycled), u ~ U[0, 1]
    drawn once from `seed`."""
    n = max(len(real), len(fake))
    u = np.random.default_rng(seed).uniform(size=(n, 1))
    return u * real[np.arange(n) % len(real)] + (1 - u) * fake[np.arange(n) % len(fake)]


class AbstractPenalty(eqx.Module):
    """A penalty P(critic, real, fake) ≥ 0 that the critic's objective subtracts: the critic
    ascends L − P, the generator descends L (`gan_loss` builds the pair)."""

    def __call__(self, critic, real, fake):
        raise NotImplementedError


class R1(AbstractPenalty):
    """(γ/2)·mean over the real samples of ‖∇_x D(x)‖² (Mescheder, Geiger & Nowozin 2018,
    eq. 9; their code, GAN_stability, writes `reg_param`·‖∇D‖²: `reg_param` = γ/2).
    On the Dirac-GAN (γ/2)ψ²: eigenvalues −γ/2 ± √(γ²/4 − f′(0)²) at (0, 0).

    **Arguments:** `gamma` ≥ 0 (`ValueError` naming `gamma` otherwise)."""

    gamma: float

    def __init__(self, gamma: float):
        self.gamma = _non_negative("gamma", gamma)

    def __call__(self, critic, real, fake):
        return 0.5 * self.gamma * jnp.mean(jnp.sum(_grad_x(critic, real) ** 2, axis=-1))


class R2(AbstractPenalty):
    """(γ/2)·mean over the generated samples of ‖∇_x D(x)‖² (Mescheder et al. 2018, eq. 10).

    **Arguments:** `gamma` ≥ 0."""

    gamma: float

    def __init__(self, gamma: float):
        self.gamma = _non_negative("gamma", gamma)

    def __call__(self, critic, real, fake):
        return 0.5 * self.gamma * jnp.mean(jnp.sum(_grad_x(critic, fake) ** 2, axis=-1))


class GradientPenalty(AbstractPenalty):
    """WGAN-GP: γ·mean (‖∇_x D(x̂)‖ − 1)² at interpolates x̂ = u·x + (1 − u)·G(z), u ~ U[0, 1]
    drawn once from `seed` (Gulrajani et al. 2017, "Improved training of Wasserstein GANs",
    eq. 3). On the Dirac-GAN γ(|ψ| − 1)²: the field jumps at ψ = 0, and (0, 0) repels.

    **Arguments:** `gamma` ≥ 0; `seed`, an integer."""

    gamma: float
    seed: int = 0

    def __init__(self, gamma: float, seed: int = 0):
        self.gamma = _non_negative("gamma", gamma)
        self.seed = check_number("seed", seed, int)

    def __call__(self, critic, real, fake):
        norms = _norm(_grad_x(critic, _pairs(real, fake, self.seed)))
        return self.gamma * jnp.mean((norms - 1.0) ** 2)


class OneSidedLipschitz(AbstractPenalty):
    """λ·mean over the real and generated samples of max(‖∇_x D(x)‖ − K, 0)² (Petzka,
    Fischer & Lukovnikov 2018, "On the regularization of Wasserstein GANs", ICLR): zero while
    the critic is K-Lipschitz there. On the Dirac-GAN λ max(|ψ| − K, 0)²: every circle
    r ≤ K is invariant and r(t) → min(r₀, K).

    **Arguments:** `lam` ≥ 0 (λ), `K` > 0."""

    lam: float
    K: float = 1.0

    def __init__(self, lam: float, K: float = 1.0):  # noqa: N803
        self.lam = _non_negative("lam", lam)
        self.K = check_number("K", K)
        if self.K <= 0:
            raise ValueError(f"K must be > 0, got {K}")

    def __call__(self, critic, real, fake):
        norms = _norm(_grad_x(critic, jnp.concatenate([real, fake])))
        return self.lam * jnp.mean(jnp.maximum(norms - self.K, 0.0) ** 2)


class AdversarialLipschitz(AbstractPenalty):
    """Adversarial Lipschitz regularisation: λ·mean over the real and generated samples x of
    max(0, |D(x) − D(x + r)|/‖r‖ − K)², r = ε·d, d the direction after one power step of
    ∇_d |D(x) − D(x + ξd)| from a random unit d₀ (r held constant: no gradient flows through
    it), ε ~ U[`eps`] per sample. d₀ and ε are drawn once from `seed`, so the penalty is a
    deterministic function of the critic. For a linear critic on ℝ it is
    `OneSidedLipschitz(lam, K)` exactly.

    **Arguments:** `lam` ≥ 0 (λ, default 10), `K` > 0 (default 1), `xi` > 0 (ξ, default 10),
    `eps` (lo, hi) with 0 < lo ≤ hi (default (0.1, 10)), `seed`.

    **Reference:** Terjék 2020, "Adversarial Lipschitz Regularization", ICLR, Alg. 1."""

    lam: float = 10.0
    K: float = 1.0
    xi: float = 10.0
    eps: tuple = (0.1, 10.0)
    seed: int = 0

    def __init__(self, lam=10.0, K=1.0, xi=10.0, eps=(0.1, 10.0), seed=0):  # noqa: N803
        self.lam = _non_negative("lam", lam)
        self.K = check_number("K", K)
        self.xi = check_number("xi", xi)
        if self.K <= 0 or self.xi <= 0:
            raise ValueError(f"K and xi must be > 0, got K={K}, xi={xi}")
        lo, hi = (check_number("eps", e) for e in eps)
        if not 0 < lo <= hi:
            raise ValueError(f"eps must be (lo, hi) with 0 < lo <= hi, got {eps!r}")
        self.eps = (lo, hi)
        self.seed = check_number("seed", seed, int)

    def __call__(self, critic, real, fake):
        x = jnp.concatenate([real, fake])
        rng = np.random.default_rng(self.seed)
        d0 = rng.standard_normal(x.shape)
        d0 = d0 / np.linalg.norm(d0, axis=-1, keepdims=True)
        eps = rng.uniform(*self.eps, size=(len(x), 1))

        def gap(z, d):
            return jnp.abs(jnp.squeeze(critic(z)) - jnp.squeeze(critic(z + self.xi * d)))

        g = jax.vmap(jax.grad(gap, argnums=1))(x, jnp.asarray(d0))
        d = jnp.where(_norm(g)[:, None] > 0, g / jnp.maximum(_norm(g), 1e-300)[:, None], d0)
        r = jax.lax.stop_gradient(eps * d)
        quotient = jax.vmap(gap)(x, r / self.xi) / _norm(r)
        return self.lam * jnp.mean(jnp.maximum(quotient - self.K, 0.0) ** 2)


class MoreauYosida(AbstractPenalty):
    """The Moreau–Yosida f-GAN's penalty ((α − 1)/α)(β·L)^{α/(α−1)}, L the critic's Lipschitz
    constant, estimated by the root-mean-square of ‖∇_x D‖ over the real and generated
    samples: a smooth estimate, exact for a linear critic (the largest norm would switch
    between samples, and the flow would chatter on the switching surfaces: measured, the
    mixture GAN's flow stalled at t = 0.2 with 79 % of its steps rejected); α = ∞: β·L.
    On the Dirac-GAN with α = 2, (β²/2)ψ²: R1 with γ = β².

    **Arguments:** `alpha` ∈ (1, ∞] (α = 1, the hard constraint, is `OneSidedLipschitz` with a
    large λ), `beta` ≥ 0.

    **Reference:** Terjék 2021, "Moreau–Yosida f-divergences", ICML, Thm 3 and §5."""

    alpha: float = math.inf
    beta: float = 1.0

    def __init__(self, alpha: float = math.inf, beta: float = 1.0):
        alpha = float(alpha) if alpha == math.inf else check_number("alpha", alpha)
        if not alpha > 1:
            raise ValueError(f"alpha must be > 1 (or inf), got {alpha}")
        self.alpha = alpha
        self.beta = _non_negative("beta", beta)

    def __call__(self, critic, real, fake):
        grads = _grad_x(critic, jnp.concatenate([real, fake]))
        squared = jnp.mean(jnp.sum(grads**2, axis=-1))  # L², smooth where L is not (at 0)
        if self.alpha == math.inf:
            return self.beta * _safe_sqrt(squared)
        q = self.alpha / (self.alpha - 1.0)
        if q == 2:  # α = 2: (β²/2)L², polynomial, R1's linearisation at L = 0
            return 0.5 * self.beta**2 * squared
        # (β²L²)^{q/2} through a guarded power: at L = 0 its gradient (and, for q > 2, its
        # Hessian) is 0, where an unguarded power's chain rule would give 0·∞ = NaN
        positive = squared > 0
        power = self.beta**2 * jnp.where(positive, squared, 1.0)
        return jnp.where(positive, power ** (q / 2), 0.0) / q


class InstanceNoise(eqx.Module):
    """Instance noise N(0, σ²I) added to the real and generated samples, the expectation taken
    by Gauss–Hermite quadrature with `nodes` points per dimension (a tensor grid: nodes^d
    points; exact for polynomials of degree < 2·nodes), not by Monte Carlo. Smooths both
    players' objective. On the Dirac-GAN: eigenvalues f″(0)σ² ± √(f″(0)²σ⁴ − f′(0)²) at (0, 0).

    **Arguments:** `sigma` ≥ 0, `nodes` ≥ 1.

    **Reference:** Sønderby et al. 2017, "Amortised MAP inference for image super-resolution",
    ICLR; Mescheder et al. 2018, §3.1 and Lemma 3.2."""

    sigma: float
    nodes: int = 10

    def __init__(self, sigma: float, nodes: int = 10):
        self.sigma = _non_negative("sigma", sigma)
        self.nodes = check_number("nodes", nodes, int)
        if self.nodes < 1:
            raise ValueError(f"nodes must be an integer >= 1, got {nodes!r}")

    def spread(self, x):
        """(points `(n·q, d)`, weights `(n·q,)` summing to 1) for samples x `(n, d)`,
        q = nodes^d."""
        n, d = x.shape
        z, w = np.polynomial.hermite_e.hermegauss(self.nodes)
        w = w / w.sum()
        grid = np.stack(np.meshgrid(*([z] * d), indexing="ij"), -1).reshape(-1, d)
        weight = np.prod(np.stack(np.meshgrid(*([w] * d), indexing="ij"), -1).reshape(-1, d), -1)
        points = x[:, None, :] + self.sigma * jnp.asarray(grid)[None]
        return points.reshape(-1, d), jnp.tile(jnp.asarray(weight), n) / n
