"""The example of alex-damian/central_flows_jax (its `examples/mlp.ipynb`), rebuilt with
gradflows' MLP: a swish MLP 8 → 16 → 16 → 1 on 128 standard-normal inputs and targets, the
mean squared error (no ½), gradient descent at η = 0.1 for 1,000 steps (flow time 100).
Its draws differ from the notebook's (flax's `nnx.Rngs(0)`): the same architecture, loss
and η, not the same numbers."""

import jax
import jax.numpy as jnp

import models
from experiments.eos._problem import random_points

N, D, WIDTH, ETA, STEPS = 128, 8, 16, 0.1, 1000


def peer_mlp(seed: int = 0):
    """`(loss, net, eta)`."""
    X, Y = map(jnp.asarray, random_points(N, D, seed))
    net = models.MLP(D, WIDTH, 2, activation=jax.nn.swish, key=jax.random.PRNGKey(seed))

    def loss(m):
        return jnp.mean((jax.vmap(m)(X) - Y) ** 2)

    return loss, net, ETA


def write_result(res: dict, name: str) -> None:
    """Print `res` and write it to `benchmarks/<name>.json`, with the JAX version."""
    import json
    import os

    res["versions"] = {"jax": jax.__version__}
    print(json.dumps(res, indent=1))
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.json"), "w") as f:
        json.dump(res, f, indent=1)
