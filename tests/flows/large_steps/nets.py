"""The small regression problem the large-step tests share: a tanh MLP on Gaussian data,
L = (1/2n)‖f − y‖² (generic: no symmetry, no balance)."""

import jax
import jax.numpy as jnp
import numpy as np

import models


def tanh_regression(in_size, width, depth, n, *, seed=0, key=0):
    """`(loss, net)`: the mean squared loss on n standard-normal inputs and targets."""
    rng = np.random.default_rng(seed)
    net = models.MLP(in_size, width, depth, activation="tanh", key=jax.random.PRNGKey(key))
    X = jnp.asarray(rng.standard_normal((n, in_size)))
    Y = jnp.asarray(rng.standard_normal(n))

    def loss(m):
        return 0.5 * jnp.mean((jax.vmap(m)(X) - Y) ** 2)

    return loss, net
