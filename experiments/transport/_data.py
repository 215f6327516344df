"""The two clouds: sklearn's two moons against a mixture of three Gaussians, scaled together
into the unit box (so that c = ½|x − y|² ≤ 1 and ε is in units of the largest cost)."""

import numpy as np
from sklearn.datasets import make_moons


def clouds(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, _ = make_moons(n, noise=0.05, random_state=seed)
    centers = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0]])
    y = centers[rng.integers(0, 3, n)] + 0.2 * rng.normal(size=(n, 2))
    lo = np.minimum(x.min(0), y.min(0))
    scale = (np.maximum(x.max(0), y.max(0)) - lo).max()
    return (x - lo) / scale, (y - lo) / scale


def cost(x, y) -> np.ndarray:
    return 0.5 * ((x[:, None] - y[None]) ** 2).sum(-1)
