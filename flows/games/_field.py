"""The gradient descent–ascent (GDA) field of a two-player game, and the checks on a game's
inputs: the pair of players and the loss (one zero-sum L, or a pair (L_gen, L_disc)).

The generator descends L_gen, the discriminator (critic) ascends L_disc: the field is
v = (−∇_gen L_gen, +∇_disc L_disc), the gradient field of `gradient_flow` with the
discriminator's sign flipped. With consensus γ > 0 it is w = v − γ∇(½‖v‖²) = v − γJᵀv
(Mescheder, Nowozin & Geiger 2017, "The Numerics of GANs", eq. 6).
"""

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import equinox as eqx
import jax

from .._checks import check_loss, check_number
from .._flat import FlatSpec, trainable_of

GENERATOR, DISCRIMINATOR = 0, 1


@dataclasses.dataclass(frozen=True)
class OnPair:
    """params ↦ fn(params[0], params[1]): a player's loss as a function of the pair, the
    form `gradient_flow`'s recorder and checks take (equal, and hashed alike, for the same
    `fn`, so that a solve's compilation is reused)."""

    fn: Callable

    def __call__(self, params):
        return self.fn(params[0], params[1])


def check_pair(params0) -> tuple:
    """`params0` as the tuple (generator, discriminator), each holding trainable float64
    arrays. **Raises:** `ValueError` naming `params0`."""
    if not isinstance(params0, (tuple, list)) or len(params0) != 2:
        kind = f"a {type(params0).__name__}" + (
            f" of length {len(params0)}" if isinstance(params0, (tuple, list)) else ""
        )
        raise ValueError(
            f"params0 must be a pair (generator, discriminator) of pytrees, got {kind}"
        )
    for i, who in enumerate(("the generator", "the discriminator")):
        trainable_of(f"params0[{i}] ({who})", params0[i])
    return tuple(params0)


def check_game_loss(loss, params) -> tuple:
    """`loss` as the pair (L_gen, L_disc) (a single L: (L, L), zero-sum), each checked to
    return one float64 scalar on `params`. **Raises:** `TypeError` naming `loss`."""
    if callable(loss):
        losses = (loss,)
    elif isinstance(loss, (tuple, list)) and len(loss) == 2 and all(map(callable, loss)):
        losses = tuple(loss)
    else:
        raise TypeError(
            "loss must be a function L(gen, disc) (the generator descends it, the discriminator "
            "ascends it) or a pair (L_gen, L_disc) of such functions, got "
            f"{type(loss).__name__}"
        )
    for i, fn in enumerate(losses):
        name = "loss" if len(losses) == 1 else f"loss[{i}]"
        try:
            check_loss(OnPair(fn), params)
        except TypeError as e:
            raise TypeError(f"{name}: {e}") from None
    return losses


def check_consensus(gamma, name: str = "consensus") -> float:
    """γ ≥ 0 as a float. **Raises:** `ValueError` naming `name`, the argument that holds γ
    (`consensus` of `gda_flow`, `gamma` of `consensus_optimization`, which was told
    "consensus must be >= 0")."""
    gamma = check_number(name, gamma)
    if gamma < 0:
        raise ValueError(f"{name} must be >= 0 (the weight γ of ½‖v‖²), got {gamma}")
    return gamma


class GameField(eqx.Module):
    """v(y) = (−∇_gen L_gen, +∇_disc L_disc), minus γJᵀv with consensus γ, on the trainable
    leaves y of the pair (a flat vector when `spec` is given, as `gradient_flow` solves).
    `losses`: (L,) zero-sum, or (L_gen, L_disc)."""

    losses: tuple = eqx.field(static=True)
    static: Any
    spec: FlatSpec | None = eqx.field(static=True, default=None)
    consensus: float = eqx.field(static=True, default=0.0)
    symmetric_jacobian: ClassVar[bool] = False  # exprb32 and "auto"'s tests use Arnoldi

    def _pair(self, tree):
        return eqx.combine(tree, self.static)

    def player(self, tree, who: int):
        """The GDA velocity of player `who` (0: generator, 1: discriminator) alone, without
        consensus: −∇_gen L_gen or +∇_disc L_disc, a pytree like `tree[who]`."""
        fn = self.losses[min(who, len(self.losses) - 1)]

        def value(part):
            parts = list(tree)
            parts[who] = part
            return fn(*self._pair(tuple(parts)))

        grad = jax.grad(value)(tree[who])
        return jax.tree.map(lambda g: -g, grad) if who == GENERATOR else grad

    def gda(self, tree):
        """v on the trainable pair `tree`: one gradient for a zero-sum loss, two otherwise."""
        if len(self.losses) == 1:
            g_gen, g_disc = jax.grad(lambda tr: self.losses[0](*self._pair(tr)))(tree)
            return (jax.tree.map(lambda g: -g, g_gen), g_disc)
        return (self.player(tree, GENERATOR), self.player(tree, DISCRIMINATOR))

    def velocity(self, tree):
        """v, or v − γJᵀv with consensus γ > 0, on the trainable pair `tree`."""
        if not self.consensus:
            return self.gda(tree)
        v, pullback = jax.vjp(self.gda, tree)
        (jtv,) = pullback(v)
        return jax.tree.map(lambda a, b: a - self.consensus * b, v, jtv)

    def __call__(self, t, y, args):
        if self.spec is None:
            return self.velocity(y)
        return self.spec.ravel(self.velocity(self.spec.unravel(y)))


def game_field(loss, params, consensus: float = 0.0, flat: bool = True):
    """(field, y0, spec): the checked `GameField` of `loss` at the pair `params`, with the
    trainable leaves as one flat vector y0 (`flat`) or as the pytree."""
    params = check_pair(params)
    losses = check_game_loss(loss, params)
    gamma = check_consensus(consensus)
    trainable, static = trainable_of("params0", params)
    spec = FlatSpec.of(trainable)
    field = GameField(losses, static, spec if flat else None, gamma)
    return field, (spec.ravel(trainable) if flat else trainable), spec
