"""The 2-D mixture GAN: 8 Gaussians on a ring (fixed samples, fixed latent samples), small
`models.MLP` players, full batch, so that the GDA flow is an ODE solved to tolerance; the
flow against SimGD, AltGD and the ODE-GAN splitting at matched flow time."""

import math

import equinox as eqx
import jax
import numpy as np

import models
from flows import games

MODES = 8
RADIUS = 2.0
STD = 0.02
NEAR = 0.25  # a generated sample within this distance of a mode's centre counts for it
#: variant ↦ (objective, tight, penalty factory): GAN, WGAN-GP, GAN + R1, and the
#: Moreau–Yosida f-GAN (tight conjugate, α = 2) with two contrasting f.
VARIANTS = {
    "gan": ("gan", False, lambda: None),
    "wgan_gp": ("wgan", False, lambda: games.GradientPenalty(1.0)),
    "r1": ("gan", False, lambda: games.R1(1.0)),
    "my_kl": ("kl", True, lambda: games.MoreauYosida(2.0, 1.0)),
    "my_chi2": ("chi2", True, lambda: games.MoreauYosida(2.0, 1.0)),
}
MAPS = ("simgd", "altgd", "odegan")


def centres() -> np.ndarray:
    """The 8 mode centres `(8, 2)` on the circle of radius 2."""
    angle = 2 * math.pi * np.arange(MODES) / MODES
    return RADIUS * np.stack([np.cos(angle), np.sin(angle)], axis=1)


def data(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(real `(n, 2)`: n/8 samples per mode, std 0.02; latent `(m, 2)` standard normal;
    evaluation latent `(512, 2)`), all drawn once from `seed`."""
    rng = np.random.default_rng(seed)
    which = np.arange(n) % MODES
    real = centres()[which] + STD * rng.standard_normal((n, 2))
    return real, rng.standard_normal((m, 2)), rng.standard_normal((512, 2))


def players(width: int, seed: int):
    """(generator ℝ² → ℝ², critic ℝ² → ℝ): one-hidden-layer tanh MLPs of `width`."""
    kg, kd = jax.random.split(jax.random.PRNGKey(seed))
    gen = models.MLP(2, out_size=2, width=width, depth=1, activation="tanh", key=kg)
    critic = models.MLP(2, width=width, depth=1, activation="tanh", key=kd)
    return gen, critic


def modes_covered(samples: np.ndarray) -> int:
    """Modes with at least 1 % of `samples` `(k, 2)` within 0.25 of their centre."""
    distance = np.linalg.norm(samples[:, None, :] - centres()[None], axis=-1)
    return int(np.sum(np.sum(distance < NEAR, axis=0) >= 0.01 * len(samples)))


def run_variant(variant: str, *, t1, eta, saves, width, n, seed, k, settings) -> dict:
    """Solve the flow and the discrete maps of one variant from the same start, saved at the
    same step times kη; the arrays of its record. The generated samples and the game
    Jacobian's k eigenvalues of largest real part are computed afterwards on the saved
    parameters (one compiled program for all runs)."""
    objective, tight, penalty = VARIANTS[variant]
    real, latent, evaluation = data(n, n, seed)
    loss = games.gan_loss(real, latent, objective, penalty=penalty(), tight=tight)
    pair = players(width, seed)
    steps = np.unique(np.rint(np.linspace(0.0, t1 / eta, saves)).astype(int))
    ts = steps * eta
    runs = {"flow": games.gda_flow(loss, pair, float(ts[-1]), ts=ts, settings=settings)}
    maps = {
        "simgd": lambda: games.gradient_descent_ascent(loss, pair, ts[-1], eta=eta, ts=ts),
        "altgd": lambda: games.gradient_descent_ascent(
            loss, pair, ts[-1], eta=eta, ts=ts, alternating=True
        ),
        "odegan": lambda: games.ode_gan_splitting(loss, pair, ts[-1], eta=eta, ts=ts),
    }
    for name, run in maps.items():
        try:
            runs[name] = run()
        except FloatingPointError as e:  # a divergent map: its finite saves are the result
            runs[name] = getattr(e, "partial", None)
    out = {"ts": ts, "real": real, "centres": centres()}
    flow = _flat(runs["flow"])
    spectrum = _spectrum(loss, k)
    for name, traj in runs.items():
        if traj is None:
            continue
        stacked = jax.tree.map(np.asarray, traj.params)
        out[f"{name}_loss"] = traj.loss
        out[f"{name}_samples"] = np.asarray(_samples(stacked[0], evaluation))
        out[f"{name}_eigs"] = np.asarray(spectrum(stacked))
        out[f"{name}_modes"] = np.array([modes_covered(x) for x in out[f"{name}_samples"]])
        out[f"{name}_gap"] = np.linalg.norm(_flat(traj) - flow[: len(traj.ts)], axis=1)
    out["flow_steps"] = np.array(runs["flow"].stats["num_steps"])
    return out


@eqx.filter_jit
def _samples(generators, latent):
    """G(z) for each saved generator (a leading axis T) on the latent rows: `(T, 512, 2)`."""
    return jax.vmap(lambda g: jax.vmap(g)(latent))(generators)


def _spectrum(loss, k):
    @eqx.filter_jit
    def along(pairs):
        trainable, static = eqx.partition(pairs, eqx.is_array)
        return jax.lax.map(
            lambda t: games.jacobian_eigenvalues(loss, eqx.combine(t, static), k=k), trainable
        )

    return along


def _flat(traj) -> np.ndarray:
    leaves = [np.asarray(x).reshape(len(traj.ts), -1) for x in jax.tree.leaves(traj.params)]
    return np.concatenate(leaves, axis=1)
