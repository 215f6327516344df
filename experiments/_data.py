"""Data sets that ship with a package or are generated here (no download)."""

import functools
import importlib.util
import os

import numpy as np


@functools.cache
def bundled_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8×8 digits, `(X (1797, 64) float64, y (1797,) int)`, read-only:
    the values of `sklearn.datasets.load_digits(return_X_y=True)`, read from the package's own
    `datasets/data/digits.csv.gz` as it does, without importing scikit-learn (about 1.2 s of
    CPU before a run's first result), once per process. Falls back to `load_digits` where
    that file is not."""
    X, y = _read_digits()
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def _read_digits() -> tuple[np.ndarray, np.ndarray]:
    spec = importlib.util.find_spec("sklearn")
    roots = (spec and spec.submodule_search_locations) or []
    for root in roots:
        path = os.path.join(root, "datasets", "data", "digits.csv.gz")
        if os.path.exists(path):
            data = np.loadtxt(path, delimiter=",")
            if data.shape == (1797, 65):  # else a changed file: scikit-learn's own loader
                return data[:, :-1], data[:, -1].astype(int)
    from sklearn.datasets import load_digits

    return load_digits(return_X_y=True)


def digits_available(classes) -> int:
    """How many of scikit-learn's bundled digits belong to the two `classes`."""
    y = bundled_digits()[1]
    return int(np.isin(y, [int(c) for c in classes]).sum())


def digits_pair(classes=(3, 8), n_train=100, n_test=100, seed=0):
    """Two classes of scikit-learn's bundled 8×8 handwritten digits, targets ±1.

    Features are standardised with the training set's mean and standard deviation (constant
    pixels are left at zero). Returns `(X_train (n_train, 64), y_train (n_train,),
    X_test (n_test, 64), y_test (n_test,))`, float64; `classes[0]` maps to −1.

    Raises `ValueError` naming `classes`, `n_train` or `n_test` when they cannot be met.
    """
    a, b = (int(c) for c in classes)
    if a == b or not (0 <= a <= 9 and 0 <= b <= 9):
        raise ValueError(f"classes must be two different digits in 0..9, got {classes}")
    X, y = bundled_digits()
    keep = (y == a) | (y == b)
    X, y = X[keep].astype(np.float64), np.where(y[keep] == a, -1.0, 1.0)
    for name, value, low in (("n_train", n_train, 2), ("n_test", n_test, 0)):
        # said "n_train + n_test must be at most 357" for n_train=0 or 1.5
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if n_train + n_test > len(y):
        raise ValueError(
            f"n_train + n_test must be at most {len(y)} for digits {a} and {b} (n_train >= 2), "
            f"got n_train={n_train}, n_test={n_test}"
        )
    return split_standardised(X, y, n_train, n_test, seed)[:4]


def constant_columns(X: np.ndarray) -> np.ndarray:
    """Columns whose spread is at round-off level: std ≤ 64·eps·max|x| over the rows (an
    exactly constant column included). Such a spread (0.1 + 0.2 against 0.3 gives 3.9e-17) is
    no signal; dividing by it would turn round-off into a ±1 feature. Shape (d,), bool."""
    scale = np.max(np.abs(X), axis=0) if len(X) else np.zeros(X.shape[1])
    return X.std(axis=0) <= 64 * np.finfo(np.float64).eps * scale


def split_standardised(X, y, n_train, n_test, seed):
    """A random train/test split (`seed`); features standardised with the training mean and
    standard deviation. Constant columns (`constant_columns` on the training rows) become 0.
    Returns `(X_train, y_train, X_test, y_test, n_constant)`."""
    order = np.random.default_rng(seed).permutation(len(y))
    train, test = order[:n_train], order[n_train : n_train + n_test]
    constant = constant_columns(X[train])
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    X = (X - mean) / np.where(constant, 1.0, std)
    X[:, constant] = 0.0
    return X[train], y[train], X[test], y[test], int(constant.sum())


def teacher(n_train=100, n_test=100, dim=16, neurons=3, seed=0):
    """The synthetic set of the lazy-training paper: inputs on the sphere, a ReLU teacher.

    Inputs x are uniform on the unit sphere of R^dim. The teacher is a two-layer ReLU network
    with `neurons` neurons, f*(x) = Σ_j a_j max(0, b_j · x), b_j uniform on the unit sphere and
    a_j = ±1 with random signs; targets are f*(x) divided by their root mean square on the
    training set (so that ‖y*‖² = n_train). Returns `(X_train (n_train, dim), y_train,
    X_test (n_test, dim), y_test)`, float64.

    Raises `ValueError` naming `n_train`, `n_test`, `dim` or `neurons` when out of range.

    Reference: Chizat, Oyallon & Bach 2019, §3 (two-layer ReLU teacher, inputs on the sphere).
    """
    for name, value, low in (
        ("n_train", n_train, 2),
        ("n_test", n_test, 0),
        ("dim", dim, 2),
        ("neurons", neurons, 1),
    ):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value}")
    rng = np.random.default_rng(seed)

    def sphere(k):
        Z = rng.standard_normal((k, dim))
        return Z / np.linalg.norm(Z, axis=1, keepdims=True)

    B, a = sphere(neurons), rng.choice([-1.0, 1.0], size=neurons)
    X = sphere(n_train + n_test)
    y = np.maximum(X @ B.T, 0.0) @ a
    rms = np.sqrt(np.mean(y[:n_train] ** 2))
    if rms == 0:
        raise ValueError(f"the teacher is zero on the training inputs (seed={seed}); change seed")
    y = y / rms
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]
