"""Atomic file writes (temporary file in the same folder, then rename), in plain Python.

`experiments._files` builds its JSON, `.npz` and figure writers on `atomic_write`;
`experiments._run_folder` removes leftover `TEMP_PREFIX` files of a run stopped mid-write.
No numpy here: `--help` imports the run-folder options.
"""

import os
import tempfile

TEMP_PREFIX = ".tmp-"


def atomic_write(path: str, mode: str, write) -> None:
    """Call `write(f)` on a temporary file opened with `mode` ("w" or "wb") next to `path`,
    then rename it to `path`: a reader sees the old file or the whole new one, never a part."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=TEMP_PREFIX, suffix=os.path.splitext(path)[1])
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are for sharing
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
