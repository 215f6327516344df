"""The Dirac-GAN's players (Mescheder, Geiger & Nowozin 2018, §2.1): the generator δ_θ, whose
every sample is the point θ, and the linear critic D_ψ(x) = ψ·x."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float


class DiracGenerator(eqx.Module):
    """G_θ(z) = θ for every latent z: the generated distribution is δ_θ.

    **Fields:** `theta`, float64 `(d,)`."""

    theta: Float[Array, " d"]

    def __call__(self, z):
        return self.theta


class LinearCritic(eqx.Module):
    """D_ψ(x) = ψ·x, a scalar for x of shape `(d,)`.

    **Fields:** `psi`, float64 `(d,)`."""

    psi: Float[Array, " d"]

    def __call__(self, x):
        return jnp.dot(self.psi, x)


def _start(name: str, value):
    """`value` as a float64 array of at least one dimension, or a ValueError naming it ("could
    not convert string to float: 'a'" and "None is not a valid value for jnp.array" named
    neither theta nor psi) or naming its non-finite entries (refused later, by gda_flow, as
    params0's)."""
    try:
        array = jnp.atleast_1d(jnp.asarray(value, dtype=jnp.float64))
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a number or a 1-D array of numbers, got {value!r}"
        ) from None
    if not isinstance(array, jax.core.Tracer) and not bool(jnp.all(jnp.isfinite(array))):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return array


def DiracGAN(theta=1.0, psi=1.0) -> tuple[DiracGenerator, LinearCritic]:  # noqa: N802
    """The Dirac-GAN's pair `(DiracGenerator(θ), LinearCritic(ψ))` in one dimension, the
    players of `flows.games.gda_flow` for the data δ₀ (`flows.games.dirac_data()`).

    **Arguments:** `theta`, `psi`: the start, real numbers (or float64 arrays `(d,)` for the
    d-dimensional version).

    **Returns:** the pair, each holding a float64 `(d,)` array (d = 1 for numbers).

    **Raises:** `ValueError` naming `theta` or `psi` when it is not numeric or not finite,
    or both shapes when they differ or are not 1-D.

    **Reference:** Mescheder, Geiger & Nowozin 2018, "Which training methods for GANs
    actually converge?", ICML, Definition 2.1.
    """
    theta, psi = _start("theta", theta), _start("psi", psi)
    if theta.ndim != 1 or theta.shape != psi.shape:
        raise ValueError(
            f"theta and psi must be numbers or 1-D arrays of one shape, got shapes "
            f"{theta.shape} and {psi.shape}"
        )
    return DiracGenerator(theta), LinearCritic(psi)
