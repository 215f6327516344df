"""The library's progress bars: tqdm's, redrawn rarely when they do not go to a terminal.

tqdm redraws a bar up to ten times a second (`mininterval` 0.1 s); into a log file or a pipe
each redraw is another line, and one lazy run's log grew to 244 KB of them. Off a terminal a
bar is redrawn at most every `PIPED_INTERVAL_S` seconds (its first and last states are always
written).
"""

import sys

from tqdm.auto import tqdm

PIPED_INTERVAL_S = 10.0


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def progress_bar(*args, **kwargs) -> tqdm:
    """`tqdm(*args, **kwargs)`, with `mininterval=PIPED_INTERVAL_S` (unless given) when its
    stream (`file`, default stderr) is not a terminal."""
    stream = kwargs.get("file") or sys.stderr
    if not _is_terminal(stream):
        kwargs.setdefault("mininterval", PIPED_INTERVAL_S)
    return tqdm(*args, **kwargs)
