"""Argument checks of the portrait functions: ValueError naming the argument."""

import math

import numpy as np


def _point(name: str, value) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.shape != (2,) or not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be a finite array of shape (2,), got {value!r}")
    return array


def _points(name: str, value) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 2 or len(array) < 1:
        raise ValueError(f"{name} must have shape (S, 2) with S >= 1, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite")
    return array


def _positive(name: str, value) -> float:
    try:  # "abc" and None failed in float() without the name; True was taken as 1
        number = math.nan if isinstance(value, (bool, str, bytes)) else float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not (np.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return number


def _positives(name: str, values) -> np.ndarray:
    array = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if array.ndim != 1 or len(array) < 1 or not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError(f"{name} must be one or more finite numbers > 0, got {values!r}")
    return array


def _integer(name: str, value, low: int) -> int:
    """`value` as an int >= `low`; a bool, str, None, NaN or a fraction is refused naming
    `name` (int("abc") and int(nan) failed without it, None as a TypeError)."""
    integral = isinstance(value, (int, np.integer)) or (
        isinstance(value, (float, np.floating)) and float(value).is_integer()
    )
    if isinstance(value, (bool, np.bool_)) or not integral or int(value) < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _grid_size(grid) -> int:
    return (
        _integer("grid", grid, 5) | 1
    )  # odd, so that the centre of a centred window is a grid point


def _bounds(value) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.shape != (4,) or not np.all(np.isfinite(array)):
        raise ValueError(f"bounds must be (w1_min, w1_max, w2_min, w2_max), got {value!r}")
    if not (array[0] < array[1] and array[2] < array[3]):
        raise ValueError(f"bounds must have w1_min < w1_max and w2_min < w2_max, got {value!r}")
    return array
