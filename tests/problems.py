"""Shared test problems: a small separable logistic problem for a deep linear network (the
bench on which the flows' invariants, solvers and the "auto" rule are checked and timed), and
a small lazy-training pair shared by the lazy_comparison tests so that they reuse one
compilation per form."""

import numbers
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

import models
from flows._checks import check_positive
from flows._losses import LogisticLoss
from models import DeepLinearNet

TEACHER = (1.0, -2.0, 0.5, 1.0, 0.3)  # labels y_i = sign(⟨TEACHER, x_i⟩)
DIMS = (5, 4, 3, 1)


class SeparableDeepLinear(NamedTuple):
    """What `separable_deep_linear` returns.

    - `loss`: `net -> scalar`, the mean logistic loss (1/n)Σ_i log(1 + exp(−y_i f(x_i)))
      of a `DeepLinearNet` with dims (5, …, 1).
    - `net0`: the initial `DeepLinearNet` 5 → 4 → 3 → 1.
    - `X`: inputs, float64 `(n, 5)`.
    - `y`: labels ±1, float64 `(n,)`.
    """

    loss: Callable[[DeepLinearNet], Float[Array, ""]]
    net0: DeepLinearNet
    X: Float[Array, "n 5"]
    y: Float[Array, " n"]


def separable_deep_linear(
    n_points: int, *, scale: float, data_seed: int = 0, init_seed: int = 1
) -> SeparableDeepLinear:
    """The mean logistic loss of a deep linear net 5 → 4 → 3 → 1 on separable Gaussian data.

    Inputs x_i ~ N(0, I₅) drawn with `jax.random.PRNGKey(data_seed)` as one `(n_points, 5)`
    array, labels y_i = sign(⟨v, x_i⟩) with the fixed teacher v = (1, −2, 0.5, 1, 0.3), so the
    data are linearly separable through the origin (by v). The initial net is
    `models.DeepLinearNet.gaussian((5, 4, 3, 1), scale=scale, key=PRNGKey(init_seed))`: generic
    and unbalanced, entries of W_k i.i.d. N(0, scale²/d_{k−1}). On such data the flow's loss
    falls like 1/t, the layers align and the end-to-end predictor turns to the hard-margin SVM
    direction, while every balancedness C_k stays constant.

    **Arguments:**

    - `n_points`: number of points n, an integer ≥ 2. The inputs depend on n as a whole
      (the first 20 of 30 points are not the 20 points).
    - `scale`: finite > 0 scale of the Gaussian initialisation (1 is the usual fan-in
      scaling; 10 gives a large, stiff start).
    - `data_seed`, `init_seed`: the integer seeds of the inputs and of the initialisation.

    **Returns:**

    A `SeparableDeepLinear` `(loss, net0, X, y)`: `loss(net)` a float64 scalar, `net0` a
    `DeepLinearNet` with weights of shapes (4, 5), (3, 4), (1, 3), `X` of shape `(n, 5)`,
    `y` of shape `(n,)`, all float64.

    **Raises:**

    `ValueError` naming `n_points` if it is not an integer ≥ 2, or `scale` if it is not
    finite and > 0.

    **Reference:**

    Du, Hu & Lee 2018, Thm 2.1 (balancedness is conserved); Soudry, Hoffer, Nacson,
    Gunasekar & Srebro 2018, Thm 3 (the direction turns to the max-margin one); Ji &
    Telgarsky 2019, "Gradient descent aligns the layers of deep linear networks", Thm 2.2
    (the layers align, for deep linear nets under the logistic loss).
    """
    if isinstance(n_points, bool) or not isinstance(n_points, numbers.Integral) or n_points < 2:
        raise ValueError(f"n_points must be an integer >= 2, got {n_points!r}")
    scale = check_positive("scale", scale)
    X = jax.random.normal(jax.random.PRNGKey(data_seed), (int(n_points), DIMS[0]))
    y = jnp.sign(X @ jnp.array(TEACHER))
    logistic = LogisticLoss("mean")

    def loss(net):
        return logistic(jax.vmap(net)(X)[:, 0], y)

    net0 = DeepLinearNet.gaussian(DIMS, scale=scale, key=jax.random.PRNGKey(init_seed))
    return SeparableDeepLinear(loss, net0, X, y)


def lazy_tanh_pair(how: str):
    """The lazy-training problem of tests/flows/test_lazy.py and test_lazy_exprk.py.

    A tanh `TwoLayerNet` 3 → 12 → 1 made zero at init by `models.symmetrize(net, how)`
    (`how`: "doubled" or "centred"), 8 Gaussian training points with Gaussian targets and 5
    held-out inputs, all drawn from `jax.random.PRNGKey(0)`: the same shapes and static
    parts for every call, so solves of it share their compiled programs.

    **Returns:** `(net, (X, Y), X_test)`, with `X` of shape `(8, 3)`, `Y` `(8,)`,
    `X_test` `(5, 3)`, float64.

    **Reference:** Chizat, Oyallon & Bach 2019, §2 (the lazy pair).
    """
    k = jax.random.split(jax.random.PRNGKey(0), 4)
    net = models.symmetrize(models.TwoLayerNet(3, 12, activation="tanh", key=k[0]), how)
    X = jax.random.normal(k[1], (8, 3))
    Y = jax.random.normal(k[2], (8,))
    X_test = jax.random.normal(k[3], (5, 3))
    return net, (X, Y), X_test
