"""GAN objectives on fixed samples (full batch): the losses `gda_flow` and the discrete maps
take, built from the data, the latent samples, an objective and penalties."""

import jax
import jax.numpy as jnp
import numpy as np

from .. import divergences  # the registry shared with optimal transport
from .._checks import check_finite, check_flag
from ._fgan import ACTIVATIONS
from ._penalties import AbstractPenalty, InstanceNoise

#: Mescheder et al.'s objectives (GAN, non-saturating GAN, WGAN) and the f-GAN's, by the
#: names of the f-divergence registry (`flows.divergences`).
OBJECTIVES = ("gan", "ns_gan", "wgan", *ACTIVATIONS)


def mescheder_f(objective: str):
    """f of L = E_z f(D(G(z))) + E_x f(−D(x)) (Mescheder et al. 2018, eq. 1): the GAN's
    f(t) = −log(1 + e^{−t}) (also the non-saturating GAN's), the WGAN's f(t) = t."""
    if objective == "wgan":
        return lambda t: t
    return lambda t: -jnp.logaddexp(0.0, -t)


def _samples(name: str, x) -> jax.Array:
    x = np.asarray(x)
    if x.ndim != 2 or 0 in x.shape:
        raise ValueError(f"{name} must be a non-empty array of samples (n, d), got {x.shape}")
    if x.dtype != np.float64:
        raise ValueError(f"{name} holds {x.dtype} samples; gradflows computes in float64")
    check_finite(name, x)
    return jnp.asarray(x)


def _penalties(penalty) -> tuple[tuple, InstanceNoise | None]:
    items = () if penalty is None else penalty
    items = (items,) if isinstance(items, (AbstractPenalty, InstanceNoise, str)) else items
    try:
        items = tuple(items)
    except TypeError:
        items = (items,)
    noise = [p for p in items if isinstance(p, InstanceNoise)]
    for p in items:
        if not isinstance(p, (AbstractPenalty, InstanceNoise)):
            raise ValueError(
                f"penalty must be a flows.games penalty (R1, R2, GradientPenalty, "
                f"OneSidedLipschitz, AdversarialLipschitz, MoreauYosida, InstanceNoise) or a "
                f"tuple of them, got {p!r}"
            )
    if len(noise) > 1:
        raise ValueError("penalty: at most one InstanceNoise")
    return tuple(p for p in items if not isinstance(p, InstanceNoise)), (noise or [None])[0]


def _spread(noise, x):
    if noise is None:
        return x, jnp.full(len(x), 1.0 / len(x))
    return noise.spread(x)


def _generated(gen, latent, real):
    """The generator's samples, or a `TypeError` naming the player whose shapes do not fit
    the data (was "dot_general requires contracting dimensions to have the same shape")."""
    try:
        fake = jax.vmap(gen)(latent)
    except TypeError as e:
        raise TypeError(
            f"the generator fails on latent samples of shape {latent.shape[1:]} ({e})"
        ) from None
    if fake.shape[1:] != real.shape[1:]:
        raise TypeError(
            f"the generator returns samples of shape {fake.shape[1:]}, the real samples are "
            f"{real.shape[1:]}: they must match"
        )
    return fake


def _score(disc, x):
    """D(x), one number, or a `TypeError` naming the discriminator (a vector output failed
    as "Incompatible shapes for broadcasting: shapes=[(16,), (16, 2)]")."""
    out = disc(x)
    if jnp.size(out) != 1:
        raise TypeError(
            f"the discriminator must return one number per sample (e.g. eqx.nn.MLP(d, "
            f"'scalar', ...)), got shape {jnp.shape(out)}"
        )
    return jnp.squeeze(out)


def gan_loss(real, latent, objective: str = "gan", *, penalty=None, tight: bool = False):
    """The loss of a GAN on fixed samples, for `gda_flow` and the discrete maps.

    - "gan", "wgan": L(G, D) = mean_z f(D(G(z))) + mean_x f(−D(x)), f(t) = −log(1 + e^{−t})
      or t (Mescheder, Geiger & Nowozin 2018, eq. 1); the generator descends L, the critic
      ascends it. "ns_gan": the generator descends −mean_z f(−D(G(z))) instead.
    - an f-divergence name of `flows.divergences` ("kl", "reverse_kl", "chi2",
      "reverse_chi2", "hellinger2", "js", "jeffreys", "triangular", "tv"): the f-GAN
      F(G, D) = mean_x g_f(D(x)) − mean_z f*(g_f(D(G(z)))) with the output activation g_f
      (Nowozin, Cseke & Tomioka 2016, eq. 6 and Table 2, for the registry's f with
      f′(1) = 0: `flows.games._fgan`); with `tight=True` the Moreau–Yosida f-GAN's tight
      objective mean_x D(x) − Λ(D), Λ(D) = min_γ mean_z f*(D(G(z)) − γ) + γ (Terjék 2021,
      ICML, eq. 9; γ = Γ of `flows.divergences.gamma`), for f of Legendre type.
    - `penalty`: one penalty or a tuple of them (`R1`, `R2`, `GradientPenalty`,
      `OneSidedLipschitz`, `AdversarialLipschitz`, `MoreauYosida`), which the critic's
      objective subtracts, and `InstanceNoise(σ)`, which replaces every sample by its
      Gauss–Hermite spread in both players' objective.

    **Arguments:** `real` float64 `(n, d)`, the data; `latent` float64 `(m, k)`, the fixed
    latent samples (the generator maps a row `(k,)` to `(d,)`, the critic a `(d,)` to a
    scalar); `objective` one of `OBJECTIVES`.

    **Returns:** one function L(gen, disc) (zero-sum: "gan", "wgan", f-GANs without
    penalty) or the pair (L_gen, L_disc).

    **Raises:** `ValueError` naming `objective` (unknown, or `tight` with a non-Legendre f),
    `penalty` (not a penalty), `real` or `latent` (shape, dtype, non-finite); `TypeError`
    naming `tight`.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    tight = check_flag("tight", tight)
    real, latent = _samples("real", real), _samples("latent", latent)
    penalties, noise = _penalties(penalty)
    if tight:
        if objective not in ACTIVATIONS or objective == "tv":
            raise ValueError(
                f"objective={objective!r} with tight=True: the tight conjugate needs an "
                f"f-divergence of Legendre type, one of {tuple(ACTIVATIONS)[:-1]}"
            )
    real_points, real_w = _spread(noise, real)

    def parts(gen, disc):
        fake = _generated(gen, latent, real)
        fake_points, fake_w = _spread(noise, fake)
        d_real = jax.vmap(lambda x: _score(disc, x))(real_points)
        d_fake = jax.vmap(lambda x: _score(disc, x))(fake_points)
        return fake, d_real, d_fake, fake_w

    if objective in ("gan", "ns_gan", "wgan"):
        f = mescheder_f(objective)

        def value(gen, disc):
            _, d_real, d_fake, fake_w = parts(gen, disc)
            return jnp.sum(fake_w * f(d_fake)) + jnp.sum(real_w * f(-d_real))
    else:
        div = divergences.get(objective, where="objective")
        g = ACTIVATIONS[objective]

        def value(gen, disc):
            _, d_real, d_fake, fake_w = parts(gen, disc)
            if tight:
                gamma = divergences.gamma(d_fake, fake_w, div)
                conj = jnp.sum(fake_w * div.f_conj(d_fake - gamma)) + gamma
                return jnp.sum(real_w * d_real) - conj
            return jnp.sum(real_w * g(d_real)) - jnp.sum(fake_w * div.f_conj(g(d_fake)))

    gen_loss = value
    if objective == "ns_gan":
        f = mescheder_f(objective)

        def gen_loss(gen, disc):
            _, _, d_fake, fake_w = parts(gen, disc)
            return -jnp.sum(fake_w * f(-d_fake))

    if not penalties:
        return value if gen_loss is value else (gen_loss, value)

    def disc_loss(gen, disc):
        fake = _generated(gen, latent, real)
        return value(gen, disc) - sum(p(disc, real, fake) for p in penalties)

    return gen_loss, disc_loss
