"""Save-time grids."""

import numpy as np

from ._checks import check_number, check_positive


def log_times(t1: float, n: int = 100, *, t_min: float = 1e-3, include_zero: bool = True):
    """Log-spaced save times from `t_min` to `t1` that end at `t1` exactly.

    `np.logspace(log10(t_min), log10(t1), n)` can end one round-off above `t1`, and diffrax
    then refuses the grid; this helper clips and pins the last entry.

    **Arguments:**
    - `t1`: final flow time (same units as the ODE, t > 0).
    - `n`: number of log-spaced points (≥ 2).
    - `t_min`: first positive time, 0 < t_min < t1.
    - `include_zero`: prepend t = 0.

    **Returns:** float64 array of shape `(n,)`, or `(n + 1,)` with `include_zero`; strictly
    increasing, last entry exactly `t1`.

    **Raises:** `ValueError` naming `t1`, `n` or `t_min` when they are not numbers (a str
    such as "10" included), not finite, or out of range (`n` not an integer ≥ 2).
    """
    t1 = check_positive("t1", t1)
    n = check_number("n", n, int)
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    t_min = check_number("t_min", t_min)
    if not (0 < t_min < t1):
        raise ValueError(f"t_min must satisfy 0 < t_min < t1={t1}, got {t_min}")
    ts = np.logspace(np.log10(t_min), np.log10(t1), int(n))
    ts = np.minimum(ts, t1)
    ts[-1] = t1
    if include_zero:
        ts = np.concatenate([[0.0], ts])
    return ts
