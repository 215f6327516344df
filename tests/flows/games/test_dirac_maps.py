"""The discrete maps on the Dirac-GAN against Mescheder, Geiger & Nowozin (ICML 2018, §2.2 and
Appendix): SimGD multiplies r² by 1 + η²f′(ψθ)² at every step; AltGD's linearisation has its
eigenvalues on the unit circle while ηf′(0) ≤ 2; SimGD with R1 is stable iff η < γ/f′(0)²."""

import math

import numpy as np
import pytest

from flows import games


def _r2(traj):
    return traj.params[0].theta[:, 0] ** 2 + traj.params[1].psi[:, 0] ** 2


def _fprime(t):  # the GAN's f′(t) = 1/(1 + e^t)
    return 1.0 / (1.0 + np.exp(t))


def test_simgd_multiplies_r2_by_one_plus_eta2_fprime2_every_step():
    eta = 0.3
    loss, pair = games.dirac_gan("gan", theta=1.3, psi=-0.4)
    traj = games.gradient_descent_ascent(loss, pair, 60 * eta, eta=eta, ts=np.arange(61) * eta)
    th, ps = traj.params[0].theta[:, 0], traj.params[1].psi[:, 0]
    factor = 1 + eta**2 * _fprime(ps[:-1] * th[:-1]) ** 2
    assert np.abs(_r2(traj)[1:] / _r2(traj)[:-1] / factor - 1).max() <= 1e-14  # measured 2e-16
    assert np.all(np.diff(_r2(traj)) > 0)  # so it diverges at every η
    np.testing.assert_allclose(traj.ts, np.arange(61) * eta, rtol=0, atol=1e-14)


@pytest.mark.parametrize("eta", [0.1, 1.0, 3.0])
def test_simgd_linearisation_is_one_plus_minus_i_eta_fprime0(eta):
    loss, pair = games.dirac_gan("gan", theta=0.0, psi=0.0)
    values = games.step_eigenvalues(loss, pair, eta=eta, method="simgd")
    expected = np.array([1 + 0.5j * eta, 1 - 0.5j * eta])
    assert np.abs(np.sort_complex(values) - np.sort_complex(expected)).max() <= 1e-14
    assert abs(np.abs(values[0]) - math.sqrt(1 + 0.25 * eta**2)) <= 1e-14


@pytest.mark.parametrize("eta", [0.5, 2.0, 3.9, 4.0, 4.1, 6.0])
def test_altgd_spectral_radius_is_one_while_eta_fprime0_at_most_2(eta):
    loss, pair = games.dirac_gan("gan", theta=0.0, psi=0.0)
    radius = np.abs(games.step_eigenvalues(loss, pair, eta=eta, method="altgd")[0])
    a = eta * 0.5  # ηf′(0)
    expected = 1.0 if a <= 2 else abs(1 - a**2 / 2) + math.sqrt((1 - a**2 / 2) ** 2 - 1)
    assert abs(radius - expected) <= 1e-7 if a == 2 else abs(radius - expected) <= 1e-13


def test_altgd_stays_bounded_and_simgd_does_not():
    """WGAN (f′ ≡ 1, the map linear): AltGD at ηf′(0) = 1.9 stays on its invariant ellipse
    θ² + ψ² + ηθψ = const for 2,000 steps; SimGD multiplies r² by 1 + η² per step."""
    eta = 1.9
    loss, pair = games.dirac_gan("wgan", theta=1.0, psi=0.0)
    alt = games.gradient_descent_ascent(loss, pair, 2000 * eta, eta=eta, alternating=True,
                                        ts=np.arange(0, 2001, 50) * eta)  # fmt: skip
    # ψ ← ψ + ηθ, then θ ← θ − ηψ: the map has det 1 and keeps Q = θ² + ψ² + ηθψ, an
    # ellipse while η < 2 (positive definite), hence bounded
    th, ps = alt.params[0].theta[:, 0], alt.params[1].psi[:, 0]
    q = th**2 + ps**2 + eta * th * ps
    assert np.abs(q - 1.0).max() <= 1e-10
    sim = games.gradient_descent_ascent(loss, pair, 20 * eta, eta=eta, ts=np.array([0, 20 * eta]))
    assert abs(_r2(sim)[-1] - (1 + eta**2) ** 20) <= 1e-10 * (1 + eta**2) ** 20


@pytest.mark.parametrize("gamma", [0.2, 0.6])  # below the critical γ = 2f′(0) = 1
def test_simgd_with_r1_is_stable_iff_eta_below_gamma_over_fprime0_squared(gamma):
    loss, pair = games.dirac_gan("gan", penalty=games.R1(gamma), theta=0.0, psi=0.0)
    edge = gamma / 0.25
    for eta, below in ((0.9 * edge, True), (1.1 * edge, False)):
        values = games.step_eigenvalues(loss, pair, eta=eta, method="simgd")
        radius2 = 1 - eta * gamma + eta**2 * 0.25  # |1 + ηλ|², λ = −γ/2 ± i√(¼ − γ²/4)
        assert abs(np.abs(values[0]) ** 2 - radius2) <= 1e-13
        assert (np.abs(values[0]) < 1) == below
    assert abs(np.abs(games.step_eigenvalues(loss, pair, eta=edge)[0]) - 1) <= 1e-13


def test_simgd_with_r1_converges_below_the_edge_and_leaves_above():
    gamma = 0.6
    loss, pair = games.dirac_gan("gan", penalty=games.R1(gamma), theta=0.1, psi=0.1)
    edge = gamma / 0.25
    below = games.gradient_descent_ascent(loss, pair, 400 * 0.8 * edge, eta=0.8 * edge,
                                          ts=np.array([0, 400 * 0.8 * edge]))  # fmt: skip
    assert _r2(below)[-1] <= 1e-10 * _r2(below)[0]
    above = games.gradient_descent_ascent(loss, pair, 400 * 1.2 * edge, eta=1.2 * edge,
                                          ts=np.array([0, 400 * 1.2 * edge]))  # fmt: skip
    # locally unstable: r grows, to a limit cycle (f′ falls away from 0), r² = 0.33 measured
    assert _r2(above)[-1] >= 10 * _r2(above)[0]


def test_consensus_and_extragradient_converge_on_the_dirac_gan():
    """Consensus: |1 + η(−γa² ± ia)| < 1 at η = 1, γ = 2, a = ½; extragradient:
    |1 − η²a² ± iηa|² = 1 − η²a² + η⁴a⁴ < 1 at η = 1. Both contract r to below 1e-6."""
    loss, pair = games.dirac_gan("gan", theta=0.3, psi=0.2)
    ts = np.array([0.0, 400.0])
    consensus = games.consensus_optimization(loss, pair, 400.0, eta=1.0, gamma=2.0, ts=ts)
    for run in (consensus, games.extragradient(loss, pair, 400.0, eta=1.0, ts=ts)):
        assert _r2(run)[-1] <= 1e-12 * _r2(run)[0]
    eg = games.step_eigenvalues(games.dirac_gan("gan", theta=0.0, psi=0.0)[0],
                                games.dirac_gan("gan", theta=0.0, psi=0.0)[1],
                                eta=1.0, method="extragradient")  # fmt: skip
    assert abs(np.abs(eg[0]) ** 2 - (1 - 0.25 + 0.0625)) <= 1e-14


def test_disc_steps_take_that_many_critic_steps():
    """AltGD with n critic steps on the WGAN: ψ ← ψ + nηθ, then θ ← θ − ηψ."""
    loss, pair = games.dirac_gan("wgan", theta=1.0, psi=0.5)
    eta, n = 0.1, 3
    one = games.gradient_descent_ascent(loss, pair, eta, eta=eta, alternating=True,
                                        disc_steps=n, ts=np.array([0.0, eta]))  # fmt: skip
    psi = 0.5 + n * eta * 1.0
    assert abs(one.params[1].psi[-1, 0] - psi) <= 1e-15
    assert abs(one.params[0].theta[-1, 0] - (1.0 - eta * psi)) <= 1e-15
