"""The Dirac-GAN's GDA Jacobian at (0, 0) against the closed forms of Mescheder, Geiger &
Nowozin (ICML 2018) and, for the f-GAN, ±i k(0) (Nowozin, Cseke & Tomioka 2016 activations).
Measured errors are ≤ 2e-16; the tolerance 1e-12 leaves four orders of margin."""

import math

import numpy as np
import pytest

from flows import games

TOL = 1e-12
F_GANS = ("kl", "reverse_kl", "chi2", "reverse_chi2", "hellinger2", "js", "jeffreys",
          "triangular", "tv")  # fmt: skip
K0 = {"kl": math.exp(-1), "js": 0.5, "tv": 0.5}  # the other six: 1


def _at_origin(objective="gan", **kw):
    loss, pair = games.dirac_gan(objective, theta=0.0, psi=0.0, **kw)
    return loss, pair


def _close(found, expected):
    found, expected = np.sort_complex(np.asarray(found)), np.sort_complex(np.asarray(expected))
    assert np.abs(found - expected).max() <= TOL, (found, expected)


@pytest.mark.parametrize("objective", ["gan", "ns_gan", "wgan"])
def test_unregularised_gan_is_a_centre_with_rate_f_prime_0(objective):
    a = 1.0 if objective == "wgan" else 0.5
    _close(games.jacobian_eigenvalues(*_at_origin(objective)), [1j * a, -1j * a])


@pytest.mark.parametrize("objective", F_GANS)
def test_f_gan_eigenvalues_are_plus_minus_i_k0(objective):
    k0 = K0.get(objective, 1.0)
    _close(games.jacobian_eigenvalues(*_at_origin(objective)), [1j * k0, -1j * k0])
    _close(games.dirac_eigenvalues(objective), [1j * k0, -1j * k0])


@pytest.mark.parametrize("gamma", [0.3, 1.0, 1.7])  # below, at and above γ = 2f′(0) = 1
@pytest.mark.parametrize("penalty", [games.R1, games.R2])
def test_r1_r2_eigenvalues(penalty, gamma):
    expected = [-gamma / 2 + s * np.sqrt(complex(gamma**2 / 4 - 0.25)) for s in (1, -1)]
    _close(games.jacobian_eigenvalues(*_at_origin(penalty=penalty(gamma))), expected)
    _close(games.dirac_eigenvalues(gamma=gamma), expected)


@pytest.mark.parametrize("gamma", [1e8, 1e300])
def test_r1_eigenvalues_at_large_gamma_keep_the_slow_root(gamma):
    # −γ/2 + √(γ²/4 − ¼) cancelled: γ = 1e8 gave the slow root 0 (it is −¼/γ to 1e-16
    # relative), γ = 1e300 an OverflowError
    slow, fast = games.dirac_eigenvalues(gamma=gamma)
    assert abs(slow / (-0.25 / gamma) - 1) <= 1e-12 and abs(fast / -gamma - 1) <= 1e-12


@pytest.mark.parametrize("sigma", [0.5, 1.2, 2.5])  # complex pair, complex, real (σ² > 2)
def test_instance_noise_eigenvalues_by_gauss_hermite(sigma):
    c = -0.25 * sigma**2
    expected = [c + s * np.sqrt(complex(c**2 - 0.25)) for s in (1, -1)]
    loss, pair = _at_origin(penalty=games.InstanceNoise(sigma, nodes=4))
    _close(games.jacobian_eigenvalues(loss, pair), expected)
    _close(games.dirac_eigenvalues(sigma=sigma), expected)
    # = R1 with γ = σ²/2 for the GAN (f″(0) = −¼)
    _close(games.dirac_eigenvalues(gamma=sigma**2 / 2), expected)


@pytest.mark.parametrize("gamma", [0.2, 3.0])
def test_consensus_eigenvalues(gamma):
    expected = [-gamma * 0.25 + 0.5j, -gamma * 0.25 - 0.5j]
    _close(games.jacobian_eigenvalues(*_at_origin(), consensus=gamma), expected)
    _close(games.dirac_eigenvalues(consensus=gamma), expected)


def test_one_sided_lipschitz_keeps_the_centre():
    loss, pair = _at_origin("wgan", penalty=games.OneSidedLipschitz(5.0, K=0.5))
    _close(games.jacobian_eigenvalues(loss, pair), [1j, -1j])


@pytest.mark.parametrize("beta", [0.5, 1.3])
def test_moreau_yosida_alpha_2_is_r1_with_gamma_beta_squared(beta):
    """The MY f-GAN (tight conjugate, constant on the Dirac-GAN) with α = 2 linearises as the
    WGAN with R1, γ = β² (Terjék 2021)."""
    loss, pair = _at_origin("kl", tight=True, penalty=games.MoreauYosida(2.0, beta))
    expected = games.dirac_eigenvalues("wgan", gamma=beta**2)
    _close(games.jacobian_eigenvalues(loss, pair), expected)
    g2 = beta**2
    _close(expected, [-g2 / 2 + s * np.sqrt(complex(g2**2 / 4 - 1)) for s in (1, -1)])


def test_arnoldi_matches_dense_on_a_larger_game():
    """Arnoldi with a Krylov space as large as the game is exact (to round-off)."""
    import jax

    import models

    real = np.random.default_rng(0).standard_normal((6, 2))
    latent = np.random.default_rng(1).standard_normal((6, 2))
    kg, kd = jax.random.split(jax.random.PRNGKey(0))
    pair = (models.MLP(2, out_size=2, width=4, depth=1, activation="tanh", key=kg),
            models.MLP(2, width=4, depth=1, activation="tanh", key=kd))  # fmt: skip
    loss = games.gan_loss(real, latent, "gan", penalty=games.R1(0.5))
    dense = np.asarray(games.jacobian_eigenvalues(loss, pair, method="dense"))
    p = dense.size
    krylov = np.asarray(games.jacobian_eigenvalues(loss, pair, method="arnoldi", krylov_dim=p))
    error = np.abs(np.sort_complex(dense) - np.sort_complex(krylov)).max()
    assert error <= 1e-9 * np.abs(dense).max()
    assert np.all(np.diff(dense.real) <= 0)  # sorted by decreasing real part


def test_activations_cover_the_registry():
    from flows import divergences

    assert sorted(games.ACTIVATIONS) == sorted(divergences.DIVERGENCES)


def test_adversarial_lipschitz_is_one_sided_for_a_linear_critic():
    """For D(x) = ψx on ℝ, |D(x) − D(x + r)|/|r| = |ψ| for every r (Terjék 2020)."""
    for theta, psi in ((0.3, 0.9), (-1.1, -1.7), (0.2, 0.4)):
        alp = games.dirac_gan("wgan", penalty=games.AdversarialLipschitz(2.0, K=0.5),
                              theta=theta, psi=psi)  # fmt: skip
        one = games.dirac_gan("wgan", penalty=games.OneSidedLipschitz(2.0, K=0.5),
                              theta=theta, psi=psi)  # fmt: skip
        value = float(alp[0][1](*alp[1]))
        assert abs(value - float(one[0][1](*one[1]))) <= 1e-15 * max(1.0, abs(value))
        assert abs(value - (theta * psi - 2.0 * max(abs(psi) - 0.5, 0.0) ** 2)) <= 1e-15


def test_eigenvalues_as_an_observable_along_a_flow():
    """Traced inside gda_flow's recorder (dense and Arnoldi), equal to the direct call at the
    saved points; with R1 the flow spirals into (0, 0) and the spectrum tends to the closed
    form there (the Jacobian is smooth: error O(r), r(20) ≈ 0.07)."""
    loss, pair = games.dirac_gan("gan", penalty=games.R1(0.3), theta=1.0, psi=-0.5)
    observables = {
        "dense": lambda p: games.jacobian_eigenvalues(loss, p),
        "arnoldi": lambda p: games.jacobian_eigenvalues(loss, p, method="arnoldi", krylov_dim=2),
    }
    traj = games.gda_flow(loss, pair, 20.0, ts=np.array([0.0, 5.0, 20.0]), observables=observables)
    for i in range(3):
        direct = np.asarray(games.jacobian_eigenvalues(loss, traj.at(i)))
        assert np.abs(traj.observables["dense"][i] - direct).max() <= 1e-14
        _close_to(traj.observables["arnoldi"][i], direct, 1e-12)
    _close_to(traj.observables["dense"][-1], games.dirac_eigenvalues(gamma=0.3), 0.05)


def _close_to(found, expected, tol):
    found, expected = np.sort_complex(np.asarray(found)), np.sort_complex(np.asarray(expected))
    assert np.abs(found - expected).max() <= tol, (found, expected)
