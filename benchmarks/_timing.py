"""Wall-clock timing on a shared, noisy machine: interleaved repeats, best of each."""

import os
import time
from collections.abc import Callable


def best_of(
    fns: dict[str, Callable], repeats: int, once_above: float = float("inf")
) -> tuple[dict, dict]:
    """Call each function `repeats` times, interleaved (a, b, a, b, …) so that a burst of load
    from other processes hits all of them alike; keep the fastest wall time of each. A
    function whose best call so far took `once_above` seconds or more is not called again.

    Each function must block until its result is ready. Returns `(seconds, outputs)`: the
    best wall time of each name and its last output.
    """
    best = {name: float("inf") for name in fns}
    out = {}
    for _ in range(max(1, int(repeats))):
        for name, fn in fns.items():
            if name in out and best[name] >= once_above:
                continue
            start = time.perf_counter()
            out[name] = fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best, out


def timed(fn: Callable):
    """`(seconds, fn())` for one call."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def load() -> list[float]:
    """The 1, 5 and 15-minute load averages (how busy the machine was)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []
