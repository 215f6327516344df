"""Data sets that ship with a package: no download."""

import numpy as np


def digits_pair(classes=(3, 8), n_train=100, n_test=100, seed=0):
    """Two classes of scikit-learn's bundled 8×8 handwritten digits, targets ±1.

    Features are standardised with the training set's mean and standard deviation (constant
    pixels are left at zero). Returns `(X_train (n_train, 64), y_train (n_train,),
    X_test (n_test, 64), y_test (n_test,))`, float64; `classes[0]` maps to −1.

    Raises `ValueError` naming `classes`, `n_train` or `n_test` when they cannot be met.
    """
    from sklearn.datasets import load_digits

    a, b = (int(c) for c in classes)
    if a == b or not (0 <= a <= 9 and 0 <= b <= 9):
        raise ValueError(f"classes must be two different digits in 0..9, got {classes}")
    X, y = load_digits(return_X_y=True)
    keep = (y == a) | (y == b)
    X, y = X[keep].astype(np.float64), np.where(y[keep] == a, -1.0, 1.0)
    if n_train < 2 or n_test < 0 or n_train + n_test > len(y):
        raise ValueError(
            f"n_train + n_test must be at most {len(y)} for digits {a} and {b} (n_train >= 2), "
            f"got n_train={n_train}, n_test={n_test}"
        )
    order = np.random.default_rng(seed).permutation(len(y))
    train, test = order[:n_train], order[n_train : n_train + n_test]
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    std = np.where(std > 0, std, 1.0)
    X = (X - mean) / std
    return X[train], y[train], X[test], y[test]
