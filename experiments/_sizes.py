"""The one parameter limit of the experiments' network sizes, checked before any computation.

Each parameter-sized float64 vector costs 8 bytes per parameter, and a run holds a few dozen of
them (solver stages, saved states, checkpoints): 10⁷ parameters is ~2-3 GB, already far beyond
a 2-core machine's patience. Above it a run dies in the allocator (or aborts inside XLA) instead
of saying why, so the size flags are refused up front, with the largest width that fits.
"""

from collections.abc import Callable

MAX_PARAMETERS = 10_000_000


def largest_width(parameters: Callable[[int], int], limit: int = MAX_PARAMETERS) -> int:
    """The largest width w >= 0 with `parameters(w) <= limit`, for `parameters` increasing in w
    (bisection; 0 when even width 1 is over)."""
    low, high = 0, limit + 1  # parameters(w) >= w > limit at w = high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if parameters(mid) <= limit else (low, mid)
    return low
