"""The data, the network and the loss of an eos run, from its settings alone (so that every
worker builds the same problem)."""

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from .._data import split_standardised


@dataclasses.dataclass(frozen=True)
class Problem:
    """`X` (n, 64) standardised pixels or (n, dim) random points, `targets` (n, k) one-hot,
    (n,) labels, ±1 or standard-normal values,
    `loss(params)` the full-batch training loss (a float64 scalar), `net0` the network at
    initialisation, `p` its number of trainable parameters."""

    X: np.ndarray
    targets: np.ndarray
    loss: Callable
    net0: Any
    p: int


def digits(classes, n_train: int, seed: int):
    """`(X (n, 64), labels (n,) in 0..len(classes)-1)`: `n_train` random images of the given
    digit classes of scikit-learn's bundled digits, standardised on themselves."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, classes)
    X, y = X[keep].astype(np.float64), np.searchsorted(classes, y[keep])
    if n_train > len(y):
        raise ValueError(
            f"--n-train must be at most {len(y)} for digits {','.join(map(str, classes))}, "
            f"got {n_train}"
        )
    X_train, y_train, *_ = split_standardised(X, y.astype(np.float64), n_train, 0, seed)
    return X_train, y_train.astype(np.int64)


def random_points(n: int, dim: int, seed: int):
    """`(X (n, dim), y (n,))`, standard-normal inputs and targets: the data of the example of
    alex-damian/central_flows_jax, drawn as `benchmarks/_peer_mlp.py` draws it."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, dim)), rng.standard_normal(n)


def data_of(s: dict):
    """`(X, y)`: the training inputs and labels (digits) or targets (random) of settings `s`.
    Raises `ValueError` naming --n-train where the digit classes have fewer images."""
    if s["data"] == "random":
        return random_points(s["n_train"], s["dim"], s["seed"])
    return digits(s["classes"], s["n_train"], s["seed"])


def describe(s: dict, n: int) -> dict:
    """config.json's "dataset" and "model" lines for settings `s` and `n` training points
    ("data" is the `--data` setting)."""
    if s["data"] == "random":
        data = f"{n} standard-normal points in R^{s['dim']}, standard-normal targets"
        d, out = s["dim"], 1
    else:
        data = (f"scikit-learn digits (bundled), classes {s['classes']}, {n} random images, "
                "standardised pixels (64)")  # fmt: skip
        d, out = 64, 1 if s["task"] == "binary" else len(s["classes"])
    model = (f"models.MLP {s['activation']}, {d} → {s['width']} × {s['depth']} → {out}, "
             f"output layer × {s['output_scale']:g}")  # fmt: skip
    return {"dataset": data, "model": model}


def problem_for(s: dict) -> Problem:
    """The problem of settings `s` (`_cli.settings`): a `models.MLP` (activation
    `s["activation"]`) with `out_size` = the number of classes (1 for `--task binary` and for
    `--data random`), its output layer scaled by `output_scale`, and the mean MSE
    (½‖f − y‖² averaged over the points) or cross-entropy."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    import flows
    import models

    X, labels = data_of(s)
    k = len(s["classes"])
    if s["data"] == "random":
        targets, out = labels, 1
    elif s["task"] == "binary":
        targets, out = np.where(labels == 0, -1.0, 1.0), 1
    elif s["loss"] == "mse":
        targets, out = np.eye(k)[labels], k
    else:
        targets, out = labels, k
    key = jax.random.PRNGKey(s["seed"])
    activation = jax.nn.swish if s["activation"] == "swish" else "tanh"
    net = models.MLP(X.shape[1], s["width"], s["depth"], activation=activation, out_size=out,
                     key=key)  # fmt: skip
    net = eqx.tree_at(lambda m: m.weights[-1], net, net.weights[-1] * s["output_scale"])
    criterion = flows.SquaredLoss("mean") if s["loss"] == "mse" else flows.CrossEntropyLoss("mean")
    Xj, Tj = jnp.asarray(X), jnp.asarray(targets)

    def loss(params):
        return criterion(jax.vmap(params)(Xj), Tj)

    p = sum(a.size for a in jax.tree.leaves(eqx.filter(net, eqx.is_array)))
    return Problem(X, targets, loss, net, int(p))
