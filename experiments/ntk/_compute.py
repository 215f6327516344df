"""The measurements: ‖K_m − K∞‖/‖K∞‖ over widths and seeds, and cond(K∞) over depth."""

import jax
import numpy as np

import flows
import models

from .._data import digits_pair

# name -> (a, b) of φ(s) = a·s + b·|s|; "mixed" is set from --mixed.
ACTIVATIONS = {"relu": (0.5, 0.5), "abs": (0.0, 1.0)}
SCHEMES = ("constant", "quadratic")
DATASETS = ("digits", "gaussian")
DIM = 64  # digits are 8×8; Gaussian inputs get the same dimension


def inputs(name: str, n: int, seed: int) -> np.ndarray:
    """n inputs of dimension 64 with ‖x‖² = d: digits 3 and 8 (standardised pixels) or
    standard Gaussians, each row rescaled."""
    if name == "digits":
        X = digits_pair((3, 8), n_train=n, n_test=0, seed=seed)[0]
    else:
        X = np.random.default_rng(seed).standard_normal((n, DIM))
    return X * np.sqrt(X.shape[1]) / np.linalg.norm(X, axis=1, keepdims=True)


def hidden_widths(scheme: str, m: int, depth: int) -> tuple[int, ...]:
    """(m, …, m) or m_k = k²·m."""
    return tuple(m * (k * k if scheme == "quadratic" else 1) for k in range(1, depth + 1))


def parameters(widths: tuple[int, ...], d: int = DIM) -> int:
    sizes = (d, *widths, 1)
    return sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))


def relative_errors(X, a, b, depth, scheme, widths, seeds, key, progress=None) -> np.ndarray:
    """‖K_m − K∞‖₂/‖K∞‖₂ for each width m (rows) and seed (columns), (W, S): NTK
    parameterisation at the edge of chaos, no bias; every network has its own key."""
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
            if progress is not None:
                progress.update()
    return out


def depth_grid(max_depth: int) -> list[int]:
    """1, 2, 3, 4, 6, 8, 12, … up to max_depth (included)."""
    grid, k = set(), 0
    while True:
        for c in (1, 1.5):
            value = int(round(c * 2**k))
            if value <= max_depth:
                grid.add(value)
        if 2**k > max_depth:
            break
        k += 1
    grid.add(max_depth)
    return sorted(grid)


def condition_numbers(X, a, b, depths) -> tuple[np.ndarray, np.ndarray]:
    """(λ_min, λ_max) of K∞ at each depth."""
    lo, hi = [], []
    for L in depths:
        lam = np.linalg.eigvalsh(flows.ntk_infinite(X, depth=L, a=a, b=b)[1])
        lo.append(lam[0])
        hi.append(lam[-1])
    return np.array(lo), np.array(hi)
