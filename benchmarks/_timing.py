"""Wall-clock timing on a shared, noisy machine: interleaved repeats, best of each."""

import os
import time
from collections.abc import Callable

#: A function is called again (interleaved) until its calls add up to this many seconds ...
MIN_TOTAL_S = 1.5
#: ... or it has been called this many times (at least `repeats` all the same).
MAX_CALLS = 30


def best_of(
    fns: dict[str, Callable],
    repeats: int,
    once_above: float = float("inf"),
    min_total: float = MIN_TOTAL_S,
    max_calls: int = MAX_CALLS,
    calls: dict | None = None,
) -> tuple[dict, dict]:
    """Call each function at least `repeats` times, interleaved (a, b, a, b, …) so that a
    burst of load from other processes hits all of them alike, and keep the fastest wall time
    of each. A short function is called again until its calls add up to `min_total` seconds
    or it has been called `max_calls` times (whichever comes first, never fewer than
    `repeats`): the best of three 20-ms solves is noise on a shared machine, the best of 30
    is not. A function whose best call so far took `once_above` seconds or more is not called
    again.

    Each function must block until its result is ready. Returns `(seconds, outputs)`: the
    best wall time of each name and its last output; `calls`, if given a dict, receives the
    number of calls of each name.
    """
    repeats = max(1, int(repeats))
    cap = max(repeats, int(max_calls))
    best = {name: float("inf") for name in fns}
    total = {name: 0.0 for name in fns}
    count = {name: 0 for name in fns}
    out = {}

    def wanted(name):
        if name in out and best[name] >= once_above:
            return False
        return count[name] < repeats or (total[name] < min_total and count[name] < cap)

    while any(wanted(name) for name in fns):
        for name, fn in fns.items():
            if not wanted(name):
                continue
            start = time.perf_counter()
            out[name] = fn()
            seconds = time.perf_counter() - start
            best[name] = min(best[name], seconds)
            total[name] += seconds
            count[name] += 1
    if calls is not None:
        calls.update(count)
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
