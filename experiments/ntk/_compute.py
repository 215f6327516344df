"""The measurements: ‖K_m − K∞‖/‖K∞‖ over seeds at one width, and cond(K∞) over depth."""

import jax
import numpy as np

import flows
import models
from flows._progress import progress_bar

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


def relative_errors(X, a, b, depth, scheme, m, index, seeds, key, progress=False) -> np.ndarray:
    """‖K_m − K∞‖₂/‖K∞‖₂ of `seeds` networks of base width m, shape (S,): NTK
    parameterisation at the edge of chaos, no bias. Network s has the key
    `fold_in(key, index·100003 + s)`, with `index` the place of m in the run's width grid,
    so every network of a run has its own key."""
    _, K_inf = flows.ntk.ntk_infinite(X, depth=depth, a=a, b=b)
    norm = np.linalg.norm(K_inf, 2)
    phi = models.abs_family(a, b)
    out = np.empty(seeds)
    for s in progress_bar(range(seeds), desc=f"m = {m}", unit="net", disable=not progress):
        net = models.MLP(X.shape[1], hidden_widths(scheme, m, depth), activation=phi,
                         bias=False, parameterization="ntk", weight_std=1 / np.hypot(a, b),
                         key=jax.random.fold_in(key, index * 100_003 + s))  # fmt: skip
        K = flows.ntk.ntk_gram(net, X, method="layers")
        out[s] = np.linalg.norm(K - K_inf, 2) / norm
    return out


def condition_numbers(X, a, b, depths) -> np.ndarray:
    """(λ_min, λ_max) of K∞ at each depth, shape (2, len(depths))."""
    lo, hi = [], []
    for L in depths:
        lam = np.linalg.eigvalsh(flows.ntk.ntk_infinite(X, depth=L, a=a, b=b)[1])
        lo.append(lam[0])
        hi.append(lam[-1])
    return np.array([lo, hi])
