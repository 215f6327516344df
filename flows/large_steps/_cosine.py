"""cos(Δw_t, w_t − w_0) along gradient descent: the cosine between each update and the
cumulative update."""

import jax
import numpy as np

from models import partition

from .._flow import Trajectory


def update_cosine(trajectory) -> np.ndarray:
    """cos(Δw_t, w_t − w_0), Δw_t = w_t − w_{t−1}, at every saved step t ≥ 1 of a
    `gradient_descent` trajectory saved at consecutive steps (`ts = η·arange(K + 1)` and
    `save_params=True`); NaN-free: t = 0 is left out, and a zero update gives 0.

    **Returns:** shape `(T − 1,)`, for `trajectory.ts[1:]`.

    **Raises:** `TypeError` when `trajectory` is not a `Trajectory`; `ValueError` when the
    trajectory has no parameters, or its saves are not consecutive steps.

    This is the plain geometric quantity; it is not the νP of "MLPs at the EOC" (Terjék 2025),
    whose definition is not public.
    """
    if not isinstance(trajectory, Trajectory):
        raise TypeError(
            f"trajectory: expected a flows.Trajectory from flows.gradient_descent, "
            f"got {type(trajectory).__name__}"
        )
    if trajectory.params is None:
        raise ValueError("trajectory: solved with save_params=False; the cosine needs params")
    eta = trajectory.config.get("eta")
    ts = np.asarray(trajectory.ts)
    if eta is None or len(ts) < 2 or not np.allclose(np.diff(ts), eta, rtol=1e-9, atol=0):
        raise ValueError(
            "trajectory: needs gradient descent saved at consecutive steps (ts = eta*arange(K+1))"
        )
    trainable, _ = partition(trajectory.params)
    W = np.concatenate([np.asarray(a).reshape(len(ts), -1) for a in jax.tree.leaves(trainable)], 1)
    step, total = np.diff(W, axis=0), W[1:] - W[0]
    norms = np.linalg.norm(step, axis=1) * np.linalg.norm(total, axis=1)
    dots = np.sum(step * total, axis=1)
    return np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)
