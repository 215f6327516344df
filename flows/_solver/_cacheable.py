"""Solve programs that JAX's persistent compilation cache can keep.

JAX writes no program with a host callback to its persistent cache. `diffrax.diffeqsolve`
guards its arguments with `equinox.error_if` (the save times increasing and inside
[t0, t1], the first step's sign), and under equinox's default `EQX_ON_ERROR=raise` each guard
lowers to host callbacks, so every solve program had them and each process compiled anew.

`errors_as_nan` traces with equinox's own alternative, `EQX_ON_ERROR=nan` (a failed guard
returns NaN instead of raising), for the solve programs of `flows` only: their arguments are
checked in Python before any trace (`flows._checks`, `SolveSettings`), so these guards cannot
fire, and a NaN that did reach the state would be caught and raised by `integrate`'s
finiteness checks with the time at which it appeared, as is a NaN from the user's field.
A user's own `EQX_ON_ERROR` other than "raise" is left as set.
"""

import contextlib
import threading

import equinox._errors as _eqx_errors

_LOCK = threading.Lock()
_DEPTH = 0
_SAVED = "raise"


@contextlib.contextmanager
def errors_as_nan():
    """Trace the programs made inside this block with equinox's runtime errors as NaN
    (see the module docstring). Re-entrant and thread-safe: the setting is restored when
    the last open block closes."""
    global _DEPTH, _SAVED
    with _LOCK:
        if _DEPTH == 0:
            _SAVED = _eqx_errors.EQX_ON_ERROR
            if _SAVED == "raise":
                _eqx_errors.EQX_ON_ERROR = "nan"
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0:
                _eqx_errors.EQX_ON_ERROR = _SAVED
