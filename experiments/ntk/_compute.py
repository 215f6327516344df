"""The measurements: ‖K_m − K∞‖/‖K∞‖ over widths and seeds, and cond(K∞) over depth."""

import jax
import numpy as np

import flows
import models

from .._data import digits_pair
from ._design import DIM, hidden_widths


def inputs(name: str, n: int, seed: int) -> np.ndarray:
    """n inputs of dimension 64 with ‖x‖² = d: digits 3 and 8 (standardised pixels) or
    standard Gaussians, each row rescaled."""
    if name == "digits":
        X = digits_pair((3, 8), n_train=n, n_test=0, seed=seed)[0]
    else:
        X = np.random.default_rng(seed).standard_normal((n, DIM))
    return X * np.sqrt(X.shape[1]) / np.linalg.norm(X, axis=1, keepdims=True)


def relative_errors(X, a, b, depth, scheme, widths, seeds, key, step=None) -> np.ndarray:
    """‖K_m − K∞‖₂/‖K∞‖₂ for each width m (rows) and seed (columns), (W, S): NTK
    parameterisation at the edge of chaos, no bias; every network has its own key. `step()` is
    called after each network (progress, and the interrupt's safe point)."""
    _, K_inf = flows.ntk_infinite(X, depth=depth, a=a, b=b)
    norm = np.linalg.norm(K_inf, 2)
    phi = models.abs_family(a, b)
    out = np.empty((len(widths), seeds))
    for i, m in enumerate(widths):
        for s in range(seeds):
            net = models.MLP(X.shape[1], hidden_widths(scheme, m, depth), activation=phi,
                             bias=False, parameterization="ntk", weight_std=1 / np.hypot(a, b),
                             key=jax.random.fold_in(key, i * 100_003 + s))  # fmt: skip
            K = flows.ntk_gram(net, X, method="layers")
            out[i, s] = np.linalg.norm(K - K_inf, 2) / norm
            if step is not None:
                step()
    return out


def condition_numbers(X, a, b, depths) -> np.ndarray:
    """(λ_min, λ_max) of K∞ at each depth, shape (2, len(depths))."""
    lo, hi = [], []
    for L in depths:
        lam = np.linalg.eigvalsh(flows.ntk_infinite(X, depth=L, a=a, b=b)[1])
        lo.append(lam[0])
        hi.append(lam[-1])
    return np.array([lo, hi])
