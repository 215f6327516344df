"""Grids, exact flows of many starts as one product system, gradient descent, path
measures."""

import dataclasses
import functools
import warnings
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

import flows
import models


def _axes(bounds: np.ndarray, grid: int) -> tuple[np.ndarray, np.ndarray]:
    return np.linspace(bounds[0], bounds[1], grid), np.linspace(bounds[2], bounds[3], grid)


def _grid(w1: np.ndarray, w2: np.ndarray) -> Array:
    """Points of the grid, shape (G2, G1, 2); entry [i, j] is (w1[j], w2[i]) (matplotlib's
    layout for contourf and streamplot)."""
    return jnp.stack(jnp.meshgrid(jnp.asarray(w1), jnp.asarray(w2)), axis=-1)


@functools.partial(jax.jit, static_argnums=0)
def _apply_on_grid(fn: Callable, W: Array, args) -> Array:
    return jax.vmap(jax.vmap(lambda w: fn(w, args)))(W)


def _on_grid(fn: Callable, w1: np.ndarray, w2: np.ndarray, args=None) -> np.ndarray:
    """fn(w, args) at every grid point: shape (G2, G1) + fn's output shape. `fn` must be
    hashable (it is a static argument of one cached compilation)."""
    return np.asarray(_apply_on_grid(fn, _grid(w1, w2), args))


@dataclasses.dataclass(frozen=True)
class _Descent:
    """−∇F(w, args): the gradient-flow field of F."""

    objective: Callable

    def __call__(self, w, args):
        return -jax.grad(self.objective)(w, args)


@dataclasses.dataclass(frozen=True)
class _Plain:
    """F(w, args) = objective(w): a user objective with the (w, args) signature; compared
    by the objective's identity, so the same objective reuses its compilation."""

    objective: Callable

    def __call__(self, w, args):
        return jnp.reshape(self.objective(w), ())


class _Points(eqx.Module):
    w: tuple
    args: models.Frozen


@functools.lru_cache(maxsize=64)
def _summed(objectives: tuple) -> Callable:
    """Σ_k Σ_s F_k(w_ks, args): separable, so its flow moves each point along its own −∇F_k."""

    def loss(points: _Points):
        args = models.read_frozen(points.args)
        return sum(
            jnp.sum(jax.vmap(lambda w, F=F: F(w, args))(ws)) for F, ws in zip(objectives, points.w)
        )

    return loss


def _flows(objectives: tuple, starts: np.ndarray, t1: float, args, *, n_times, settings):
    """Exact flows of each objective from each start: ((K, S, T, 2) positions, (T,) times,
    solver stats and config)."""
    ts = flows.log_times(t1, n_times - 1, t_min=1e-3 * t1)
    points = _Points(
        w=tuple(jnp.asarray(starts) for _ in objectives),
        args=models.Frozen(jax.tree.map(jnp.asarray, args)),
    )
    trajectory = flows.gradient_flow(
        _summed(tuple(objectives)),
        points,
        t1,
        ts=ts,
        settings=settings,
        solver="tsit5",
        chunks=1,
    )
    paths = np.stack([np.swapaxes(np.asarray(w), 0, 1) for w in trajectory.params.w])
    return paths, ts, trajectory.stats, trajectory.config


def _gradient_descent(objective: Callable, w0: np.ndarray, eta: float, steps: int) -> np.ndarray:
    """Iterates w ← w − η∇F(w) of `flows.gradient_descent`, every step: shape (steps + 1, 2).
    **Raises:** `FloatingPointError` when they diverge: non-finite, or by the rule of
    `flows.DivergenceWarning` (1e3·|L(0)| above L(0) for 100 steps), raised as the error so
    that the CLI prints one line."""
    t1 = eta * steps
    with warnings.catch_warnings():
        warnings.simplefilter("error", flows.DivergenceWarning)
        try:
            traj = flows.gradient_descent(
                lambda w: jnp.reshape(objective(w), ()),
                jnp.asarray(w0, dtype=jnp.float64),
                t1,
                eta=eta,
                ts=eta * np.arange(steps + 1),
            )
        except flows.DivergenceWarning as e:
            raise FloatingPointError(str(e)) from None
    return np.asarray(traj.params)


# ----------------------------------------------------------------------------- drawing


def _straightness(paths: np.ndarray) -> np.ndarray:
    """Chord over path length of each path (1 = straight); shape paths.shape[:-2]."""
    chord = np.linalg.norm(paths[..., -1, :] - paths[..., 0, :], axis=-1)
    length = np.sum(np.linalg.norm(np.diff(paths, axis=-2), axis=-1), axis=-1)
    return np.where(length > 0, chord / np.where(length > 0, length, 1.0), 1.0)


def _path_lengths(paths: np.ndarray) -> np.ndarray:
    return np.sum(np.linalg.norm(np.diff(paths, axis=-2), axis=-1), axis=-1)
