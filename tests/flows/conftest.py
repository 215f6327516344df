"""Data shared by the flows tests, built here so that tests/flows never imports experiments
(the layering runs models ← flows ← experiments)."""

import numpy as np
import pytest


def digits(classes=(3, 8), n=200, components=None):
    """The first `n` images of two classes of scikit-learn's bundled 8×8 digits, standardised
    per pixel (constant pixels left at 0), optionally projected on their first `components`
    principal components; targets ±1 (`classes[0]` → −1). Returns `(X (n, d), y (n,))`."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, classes)
    X, y = X[keep][:n].astype(np.float64), np.where(y[keep][:n] == classes[0], -1.0, 1.0)
    std = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    if components is not None:
        X = X @ np.linalg.svd(X, full_matrices=False)[2][:components].T
    return X, y


@pytest.fixture(scope="session")
def digits_3_8():
    return digits((3, 8), n=200)


@pytest.fixture(scope="session")
def digits_3_10_pca3():
    return digits((3, 8), n=10, components=3)
