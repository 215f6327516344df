"""The GDA flow of a two-player game on the engine of `gradient_flow`."""

from collections.abc import Callable

from .._flow import Trajectory
from .._settings import SolveSettings
from ..large_steps._field_flow import field_flow
from ._field import GameField, OnPair, check_consensus, check_game_loss, check_pair


def gda_flow(
    loss: Callable | tuple,
    params0: tuple,
    t1: float,
    *,
    consensus: float = 0.0,
    settings: SolveSettings | None = None,
    ts=None,
    observables: dict | None = None,
    save_params: bool = True,
    progress: bool = False,
    checkpoint: str | None = None,
    **overrides,
) -> Trajectory:
    """Integrate the gradient descent–ascent flow of a two-player game from `params0` to `t1`:

        d gen/dt = −∇_gen L_gen(gen, disc),   d disc/dt = +∇_disc L_disc(gen, disc),

    with consensus γ > 0 the field v − γ∇(½‖v‖²) instead. This is `gradient_flow`'s engine
    on a field that is not a gradient (its Jacobian is not symmetric: exprb32 and the "auto"
    rule's stiffness tests use Arnoldi): every solver, the Gauss–Legendre ones included
    (they keep quadratic invariants such as θ² + ψ² of the Dirac-GAN to round-off),
    checkpoints, stats and observables, as documented there.

    **Arguments:**
    - `loss`: one function `L(gen, disc) -> scalar`, which the generator descends and the
      discriminator ascends (a zero-sum game), or a pair `(L_gen, L_disc)` (the generator
      descends `L_gen`, the discriminator ascends `L_disc`: a non-saturating GAN, a penalty
      on one player). Each returns one float64 scalar. Keep the same function objects across
      calls to reuse the compilation.
    - `params0`: the pair `(generator, discriminator)`, each any pytree (an equinox Module
      included) with trainable float64 arrays.
    - `t1`, `ts`, `settings`, `**overrides`, `observables`, `save_params`, `progress`,
      `checkpoint`: as in `flows.gradient_flow`; observables are functions of the pair.
    - `consensus`: γ ≥ 0, the weight of ½‖v‖² (0: plain GDA).

    **Returns:** a `flows.Trajectory` of the pair (`traj.at(i)` is `(gen, disc)`); `loss` is
    L_gen along the path; `config` adds `"game": "gda"` and `"consensus"`.

    **Raises:** as `gradient_flow`, and `ValueError` naming `params0` (not a pair, a player
    without trainable float64 arrays) or `consensus` (< 0); `TypeError` naming `loss` (not
    a function or pair of functions, not a float64 scalar).

    **References:** Mescheder, Geiger & Nowozin 2018, "Which training methods for GANs
    actually converge?", ICML (the GDA field, §2); Mescheder, Nowozin & Geiger 2017, "The
    Numerics of GANs", NeurIPS (consensus optimisation).
    """
    params0 = check_pair(params0)
    losses = check_game_loss(loss, params0)
    gamma = check_consensus(consensus)
    return field_flow(
        lambda _, static, spec: GameField(losses, static, spec, gamma),
        OnPair(losses[0]),
        params0,
        t1,
        settings=settings,
        ts=ts,
        observables=observables,
        save_params=save_params,
        progress=progress,
        checkpoint=checkpoint,
        desc="GDA flow",
        config={"game": "gda", "consensus": gamma},
        overrides=overrides,
    )
