"""One Dirac-GAN variant of `gradflows run gan`: its exact orbit from (1, 1) over its vector
field, SimGD and AltGD from the same start, and its spectrum at (0, 0) against the closed
form (Mescheder, Geiger & Nowozin, ICML 2018); and the R1 root locus against γ."""

import math

import equinox as eqx
import jax
import numpy as np

from flows import games
from flows.games._field import game_field

START = (1.0, 1.0)
WINDOW = 2.0  # the portraits show [−2, 2]²
GRID = 17
MAP_STEPS = 150


def variant(name: str, gamma: float) -> dict:
    """What Dirac variant `name` is: objective, penalty, tight, consensus, and the closed form
    of its eigenvalues at (0, 0) (None where there is none: WGAN-GP's field jumps there)."""
    sigma = math.sqrt(2 * gamma)  # instance noise N(0, σ²) = R1 with γ = σ²/2 for the GAN
    table = {
        "gan": ("gan", None, False, 0.0, {}),
        "ns_gan": ("ns_gan", None, False, 0.0, {}),
        "wgan": ("wgan", None, False, 0.0, {}),
        "fgan_kl": ("kl", None, False, 0.0, {}),
        "fgan_chi2": ("chi2", None, False, 0.0, {}),
        "r1": ("gan", games.R1(gamma), False, 0.0, {"gamma": gamma}),
        "instance_noise": ("gan", games.InstanceNoise(sigma), False, 0.0, {"sigma": sigma}),
        "consensus": ("gan", None, False, gamma, {"consensus": gamma}),
        "wgan_gp": ("wgan", games.GradientPenalty(gamma), False, 0.0, None),
        "one_sided": ("wgan", games.OneSidedLipschitz(1.0, K=1.0), False, 0.0, {}),
        "alp": ("wgan", games.AdversarialLipschitz(1.0, K=1.0), False, 0.0, {}),
        "my_kl": ("kl", games.MoreauYosida(2.0, 1.0), True, 0.0, {"gamma": 1.0}),
    }
    objective, penalty, tight, consensus, closed = table[name]
    # the MY f-GAN's tight objective is −ψθ on the Dirac-GAN: the WGAN's closed forms
    closed_objective = "wgan" if tight else objective
    expected = None if closed is None else games.dirac_eigenvalues(closed_objective, **closed)
    return {"objective": objective, "penalty": penalty, "tight": tight,
            "consensus": consensus, "expected": expected}  # fmt: skip


@eqx.filter_jit
def _field_on(field, ys):
    return jax.vmap(lambda y: field(0.0, y, None))(ys)


def _path(traj):
    return np.stack([traj.params[0].theta[:, 0], traj.params[1].psi[:, 0]], axis=1)


def dirac_variant(name: str, *, t1: float, eta: float, gamma: float, settings) -> dict:
    """The arrays of one panel: `orbit` `(T, 2)` at `ts`, `simgd`, `altgd` `(K + 1, 2)` (fewer
    rows where a map diverged), the field `(GRID, GRID, 2)` on `grid`, `eigenvalues` `(2,)`
    at (0, 0) and `expected` (NaN-free: absent where there is no closed form)."""
    v = variant(name, gamma)
    loss, pair = games.dirac_gan(v["objective"], penalty=v["penalty"], tight=v["tight"],
                                 theta=START[0], psi=START[1])  # fmt: skip
    ts = np.linspace(0.0, t1, 401)
    flow = games.gda_flow(loss, pair, t1, ts=ts, settings=settings, consensus=v["consensus"])
    out = {"ts": ts, "orbit": _path(flow), "flow_steps": np.array(flow.stats["num_steps"])}
    steps = min(MAP_STEPS, int(t1 / eta))
    step_ts = np.arange(steps + 1) * eta
    maps = {"simgd": dict(alternating=False), "altgd": dict(alternating=True)}
    for key, kw in maps.items():
        try:
            if v["consensus"] and key == "simgd":  # the discrete map of the consensus flow
                traj = games.consensus_optimization(loss, pair, step_ts[-1], eta=eta,
                                                    gamma=v["consensus"], ts=step_ts)  # fmt: skip
            else:
                traj = games.gradient_descent_ascent(loss, pair, step_ts[-1], eta=eta,
                                                     ts=step_ts, **kw)  # fmt: skip
        except FloatingPointError as e:
            traj = e.partial
        out[key] = _path(traj) if traj is not None else np.zeros((0, 2))
    axis = np.linspace(-WINDOW, WINDOW, GRID)
    grid = np.stack(np.meshgrid(axis, axis, indexing="xy"), -1).reshape(-1, 2)
    field, _, _ = game_field(loss, pair, v["consensus"])
    out["grid"] = grid.reshape(GRID, GRID, 2)
    out["field"] = np.asarray(_field_on(field, jax.device_put(grid))).reshape(GRID, GRID, 2)
    origin = games.dirac_gan(v["objective"], penalty=v["penalty"], tight=v["tight"],
                             theta=0.0, psi=0.0)[1]  # fmt: skip
    out["eigenvalues"] = np.asarray(
        games.jacobian_eigenvalues(loss, origin, consensus=v["consensus"])
    )
    if v["expected"] is not None:
        out["expected"] = np.asarray(v["expected"])
    return out


def r1_locus(gammas: np.ndarray) -> dict:
    """The eigenvalues `(G, 2)` at (0, 0) of the GAN with R1 for each γ, from the numerical
    Jacobians (the field is affine in γ: J(γ) = J(0) + γ(J(1) − J(0))), and the closed form
    −γ/2 ± √(γ²/4 − f′(0)²)."""
    jacobians = []
    for g in (0.0, 1.0):
        loss, origin = games.dirac_gan("gan", penalty=games.R1(g), theta=0.0, psi=0.0)
        field, y, _ = game_field(loss, origin)
        jacobians.append(np.asarray(jax.jacfwd(lambda w, f=field: f(0.0, w, None))(y)))
    numeric = np.array([np.linalg.eigvals(jacobians[0] + g * (jacobians[1] - jacobians[0]))
                        for g in gammas])  # fmt: skip
    numeric = np.sort_complex(numeric)
    expected = np.sort_complex(np.array([games.dirac_eigenvalues(gamma=g) for g in gammas]))
    return {"gammas": gammas, "numeric": numeric, "expected": expected}
