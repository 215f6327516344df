"""The discrete maps of GAN training, on the flow's time axis (step k at t = kη): simultaneous
and alternating gradient descent–ascent (SimGD, AltGD), extragradient, consensus optimisation.
Each is iterated by the loop of `gradient_descent` and `flows.large_steps.optimize`
(`flows._optimize.run` with `make_map`: the same checks, records, save times and divergence
reports), with the map's own step computed as written."""

from collections.abc import Callable
from typing import ClassVar

import equinox as eqx
import jax
import jax.flatten_util
import numpy as np

from .._checks import check_finite, check_flag, check_number, check_positive
from .._flat import trainable_of
from .._flow import Trajectory
from .._optimize import run
from .._settings import SolveSettings
from ._field import (
    DISCRIMINATOR,
    GENERATOR,
    GameField,
    OnPair,
    check_consensus,
    check_game_loss,
    check_pair,
)
from ._spectrum import check_jacobian_finite

#: The maps by name: SimGD, AltGD, extragradient, consensus optimisation (SimGD on v − γJᵀv),
#: and the ODE-GAN splitting (an RK4 step per player, the other held).
METHODS = ("simgd", "altgd", "extragradient", "consensus", "odegan")
_LIMIT = "the stability limit of this map at the current point (its linearisation's "
_LIMIT += "spectral radius exceeds 1: flows.games.step_eigenvalues)"


def _axpy(y, eta, v):
    return jax.tree.map(lambda a, b: a + eta * b, y, v)


class GameMap(eqx.Module):
    """One step of a discrete map of the game `field` (`step(t, y, η)` on the trainable pair
    `y`), in the form `flows._optimize.run` iterates (`make_map`).

    - "simgd": both players step from the same point; the discriminator takes `disc_steps`
      steps against the generator held (Goodfellow et al. 2014's k), the generator one.
    - "altgd": the discriminator takes `disc_steps` steps, then the generator one against the
      updated discriminator (Mescheder et al. 2018, F = F₂ ∘ F₁).
    - "extragradient": y + η v(y + η v(y)) (Korpelevich 1976).
    - "consensus": y + η (v − γJᵀv)(y), `field.consensus` = γ (Mescheder et al. 2017).
    - "odegan": the discriminator takes one classical RK4 step of size η of its own
      velocity with the generator held, then the generator one against the updated
      discriminator: a Lie splitting of the joint ODE, as DeepMind's ODE-GAN code freezes one
      player per stage (Qin et al. 2020), first order in η overall.
    """

    field: GameField
    method: str = eqx.field(static=True)
    disc_steps: int = eqx.field(static=True, default=1)
    symmetric_jacobian: ClassVar[bool] = False

    def __call__(self, t, y, args):
        return self.field(t, y, args)

    def _player(self, y, who):
        if self.field.consensus:
            return self.field.velocity(y)[who]
        return self.field.player(y, who)

    def _rk4(self, y, who, eta):
        """One classical RK4 step of player `who`'s velocity, the other player held."""

        def v(part):
            parts = list(y)
            parts[who] = part
            return self._player(tuple(parts), who)

        x = y[who]
        k1 = v(x)
        k2 = v(_axpy(x, eta / 2, k1))
        k3 = v(_axpy(x, eta / 2, k2))
        k4 = v(_axpy(x, eta, k3))
        slope = jax.tree.map(lambda a, b, c, d: (a + 2 * b + 2 * c + d) / 6, k1, k2, k3, k4)
        return _axpy(x, eta, slope)

    def step(self, t, y, eta):
        if self.method == "odegan":
            disc = self._rk4(y, DISCRIMINATOR, eta)
            return (self._rk4((y[GENERATOR], disc), GENERATOR, eta), disc)
        if self.method == "extragradient":
            return _axpy(y, eta, self.field.velocity(_axpy(y, eta, self.field.velocity(y))))
        if self.disc_steps == 1 and self.method in ("simgd", "consensus"):
            return _axpy(y, eta, self.field.velocity(y))
        gen, disc = y
        for _ in range(self.disc_steps):
            disc = _axpy(disc, eta, self._player((y[GENERATOR], disc), DISCRIMINATOR))
        against = disc if self.method == "altgd" else y[DISCRIMINATOR]
        gen = _axpy(gen, eta, self._player((gen, against), GENERATOR))
        return (gen, disc)


def _check_steps(disc_steps) -> int:
    n = check_number("disc_steps", disc_steps, int)
    if n < 1:
        raise ValueError(f"disc_steps must be an integer >= 1, got {disc_steps!r}")
    return n


def _run(method, loss, params0, t1, *, eta, gamma=0.0, disc_steps=1, ts, settings,
         observables, save_params, progress, overrides) -> Trajectory:  # fmt: skip
    params0 = check_pair(params0)
    losses = check_game_loss(loss, params0)
    check_positive("eta", eta)
    gamma = check_consensus(gamma, "gamma") if method == "consensus" else 0.0
    names = {"simgd": "SimGD", "altgd": "AltGD", "extragradient": "extragradient",
             "consensus": "consensus optimisation", "odegan": "ODE-GAN splitting"}  # fmt: skip
    config = {"game": method, "disc_steps": disc_steps, "consensus": gamma}
    return run(
        OnPair(losses[0]), params0, t1, optimizer=None, eta=eta, ts=ts, settings=settings,
        observables=observables, save_params=save_params, progress=progress,
        overrides=overrides, name=names[method], solver=method, config=config, limit=_LIMIT,
        make_map=lambda static: GameMap(GameField(losses, static, None, gamma), method,
                                        disc_steps),
    )  # fmt: skip


def gradient_descent_ascent(
    loss: Callable | tuple,
    params0: tuple,
    t1: float,
    *,
    eta: float,
    alternating: bool = False,
    disc_steps: int = 1,
    ts=None,
    settings: SolveSettings | None = None,
    observables: dict | None = None,
    save_params: bool = True,
    progress: bool = False,
    **overrides,
) -> Trajectory:
    """Gradient descent–ascent with step η: SimGD, or AltGD with `alternating=True`.

    SimGD: gen ← gen − η∇_gen L_gen, disc ← disc + η∇_disc L_disc from the same point (the
    discriminator's `disc_steps` steps against the generator held). AltGD: the discriminator
    takes its `disc_steps` steps first, then the generator steps against it. One outer step
    covers flow time η.

    **Arguments:**
    - `loss`, `params0`: as in `gda_flow` (one zero-sum L or a pair (L_gen, L_disc); the pair
      (generator, discriminator)).
    - `t1`, `eta`, `ts`, `settings`, `**overrides`, `observables`, `save_params`,
      `progress`: as in `flows.gradient_descent`: step k is at flow time t = kη, on the time
      axis of `gda_flow`; `ts` is rounded to the step grid; `max_steps` bounds the steps.
    - `alternating`: AltGD instead of SimGD.
    - `disc_steps`: the discriminator's steps per generator step, an integer ≥ 1.

    **Returns:** a `flows.Trajectory` of the pair at the saved step times; `loss` is L_gen;
    `config["solver"]` and `stats["solvers"]` name the map.

    **Raises:** as `gradient_descent` (`ValueError` naming `eta` ≤ 0, `t1`, `ts`; a divergent
    run: `FloatingPointError` with the step and the value, and `.partial`, the finite saves
    before; `DivergenceWarning`), and as `gda_flow` for `params0` and `loss`; `ValueError` naming
    `disc_steps` (not an integer ≥ 1); `TypeError` naming `alternating` (not a bool).

    **Reference:** Mescheder, Geiger & Nowozin 2018, ICML, §2.2 (SimGD, AltGD).
    """
    alternating = check_flag("alternating", alternating)
    return _run(
        "altgd" if alternating else "simgd", loss, params0, t1, eta=eta,
        disc_steps=_check_steps(disc_steps), ts=ts, settings=settings,
        observables=observables, save_params=save_params, progress=progress,
        overrides=overrides,
    )  # fmt: skip


def extragradient(
    loss: Callable | tuple,
    params0: tuple,
    t1: float,
    *,
    eta: float,
    ts=None,
    settings: SolveSettings | None = None,
    observables: dict | None = None,
    save_params: bool = True,
    progress: bool = False,
    **overrides,
) -> Trajectory:
    """The extragradient method y ← y + η v(y + η v(y)), v the GDA field; a step (two field
    evaluations) covers flow time η.

    **Arguments:**
    - `loss`, `params0`: as in `gda_flow` (one zero-sum L or a pair (L_gen, L_disc); the pair
      (generator, discriminator)).
    - `t1`, `eta`, `ts`, `settings`, `**overrides`, `observables`, `save_params`,
      `progress`: as in `flows.gradient_descent`: step k is at flow time t = kη, on the time
      axis of `gda_flow`; `ts` is rounded to the step grid; `max_steps` bounds the steps.

    **Returns:** a `flows.Trajectory` of the pair at the saved step times; `loss` is L_gen;
    `config["solver"]` and `stats["solvers"]` name the map.

    **Raises:** as `gradient_descent` (`ValueError` naming `eta` ≤ 0, `t1`, `ts`; a divergent
    run: `FloatingPointError` with the step and the value, and `.partial`, the finite saves
    before; `DivergenceWarning`), and as `gda_flow` for `params0` and `loss`.

    **Reference:** Korpelevich 1976, Ekonomika i Matematicheskie Metody 12; on GANs, Gidel
    et al. 2019, "A variational inequality perspective on GANs", ICLR.
    """
    return _run(
        "extragradient", loss, params0, t1, eta=eta, ts=ts, settings=settings,
        observables=observables, save_params=save_params, progress=progress,
        overrides=overrides,
    )  # fmt: skip


def consensus_optimization(
    loss: Callable | tuple,
    params0: tuple,
    t1: float,
    *,
    eta: float,
    gamma: float,
    ts=None,
    settings: SolveSettings | None = None,
    observables: dict | None = None,
    save_params: bool = True,
    progress: bool = False,
    **overrides,
) -> Trajectory:
    """Consensus optimisation: y ← y + η(v − γ∇½‖v‖²)(y), v the GDA field; forward Euler on
    `gda_flow(..., consensus=gamma)`.

    **Arguments:**
    - `loss`, `params0`: as in `gda_flow` (one zero-sum L or a pair (L_gen, L_disc); the pair
      (generator, discriminator)).
    - `t1`, `eta`, `ts`, `settings`, `**overrides`, `observables`, `save_params`,
      `progress`: as in `flows.gradient_descent`: step k is at flow time t = kη, on the time
      axis of `gda_flow`; `ts` is rounded to the step grid; `max_steps` bounds the steps.
    - `gamma`: γ ≥ 0, the weight of ½‖v‖² (`ValueError` naming `gamma` if < 0).

    **Returns:** a `flows.Trajectory` of the pair at the saved step times; `loss` is L_gen;
    `config["solver"]` and `stats["solvers"]` name the map.

    **Raises:** as `gradient_descent` (`ValueError` naming `eta` ≤ 0, `t1`, `ts`; a divergent
    run: `FloatingPointError` with the step and the value, and `.partial`, the finite saves
    before; `DivergenceWarning`), and as `gda_flow` for `params0` and `loss`.

    **Reference:** Mescheder, Nowozin & Geiger 2017, "The Numerics of GANs", NeurIPS, Alg. 1.
    """
    return _run(
        "consensus", loss, params0, t1, eta=eta, gamma=gamma, ts=ts, settings=settings,
        observables=observables, save_params=save_params, progress=progress,
        overrides=overrides,
    )  # fmt: skip


def ode_gan_splitting(
    loss: Callable | tuple,
    params0: tuple,
    t1: float,
    *,
    eta: float,
    ts=None,
    settings: SolveSettings | None = None,
    observables: dict | None = None,
    save_params: bool = True,
    progress: bool = False,
    **overrides,
) -> Trajectory:
    """The ODE-GAN splitting: per step of size η, one classical RK4 step of the
    discriminator's velocity with the generator held, then one of the generator's against the
    updated discriminator. Each player's stages are fourth order, but the freezing makes the
    map a Lie splitting of the joint GDA ODE: first order in η (`gda_flow` solves the joint
    ODE itself).

    **Arguments:** as `gradient_descent_ascent` (without `alternating`, `disc_steps`).

    **Returns**, **Raises:** as `gradient_descent_ascent`.

    **Reference:** Qin, Kumar, Lanctot, Krakovna & Rosca 2020, "Training Generative
    Adversarial Networks by Solving Ordinary Differential Equations", NeurIPS (their code
    integrates each player with the other frozen per stage).
    """
    return _run(
        "odegan", loss, params0, t1, eta=eta, ts=ts, settings=settings,
        observables=observables, save_params=save_params, progress=progress,
        overrides=overrides,
    )  # fmt: skip


@eqx.filter_jit
def _step_jacobian(game_map, y, eta):
    flat, unravel = jax.flatten_util.ravel_pytree(y)
    return jax.jacfwd(lambda w: jax.flatten_util.ravel_pytree(
        game_map.step(0.0, unravel(w), eta))[0])(flat)  # fmt: skip


def step_eigenvalues(
    loss: Callable | tuple,
    params: tuple,
    *,
    eta: float,
    method: str = "simgd",
    gamma: float = 0.0,
    disc_steps: int = 1,
) -> np.ndarray:
    """The eigenvalues of the Jacobian of one step of a discrete map at `params` (dense,
    for small games), sorted by decreasing modulus: the first one's modulus is the spectral
    radius, which decides the map's local stability at a fixed point (stable below 1).

    **Arguments:** `loss`, `params` as in `gda_flow`; `eta` > 0; `method` one of `METHODS`
    ("simgd", "altgd", "extragradient", "consensus"); `gamma` ≥ 0 the consensus weight
    (method "consensus"); `disc_steps` ≥ 1 (SimGD and AltGD).

    **Returns:** complex `(p,)`, p the trainable entries of the pair.

    **Raises:** `ValueError` naming `method`, `eta`, `consensus` or `disc_steps`, and as
    `gda_flow` for `loss` and `params` (also non-finite `params`); `FloatingPointError` when
    the step's Jacobian is not finite.

    **Reference:** Mescheder, Geiger & Nowozin 2018, §2.2 and Appendix (the Dirac-GAN's maps:
    SimGD 1 ± iηf′(0), AltGD on the unit circle while ηf′(0) ≤ 2).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    params = check_pair(params)
    losses = check_game_loss(loss, params)
    eta = check_positive("eta", eta)
    gamma = check_consensus(gamma, "gamma") if method == "consensus" else 0.0
    trainable, static = trainable_of("params", params)
    game_map = GameMap(GameField(losses, static, None, gamma), method, _check_steps(disc_steps))
    check_finite("params", trainable)
    J = np.asarray(_step_jacobian(game_map, trainable, np.float64(eta)))
    check_jacobian_finite(J)  # numpy's eigvals said "Array must not contain infs or NaNs"
    values = np.linalg.eigvals(J)
    return values[np.argsort(-np.abs(values), kind="stable")]
