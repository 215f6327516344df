"""Files of a run folder: atomic writes of JSON and `.npz`, JSON-safe values, versions."""

import importlib.metadata
import json
import math
import os
import tempfile

import numpy as np

from ._run_folder import TEMP_PREFIX  # removed if a run is stopped mid-write


def versions() -> dict:
    """Versions of the libraries a result depends on."""
    out = {}
    for name in (
        "gradflows",
        "jax",
        "jaxlib",
        "diffrax",
        "equinox",
        "optimistix",
        "lineax",
        "numpy",
        "scikit-learn",
    ):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _atomic(path: str, write) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=TEMP_PREFIX, suffix=os.path.splitext(path)[1])
    try:
        with os.fdopen(fd, "w" if write[0] == "text" else "wb") as f:
            write[1](f)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are for sharing
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def plain(value):
    """JSON-safe copy: numpy scalars/arrays to floats/lists; refuses NaN and inf."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (np.floating, float)):
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"refusing to write a non-finite number ({value}) into a result")
        return value
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def write_json(path: str, obj) -> None:
    """Write `obj` as JSON atomically (temporary file, then rename); NaN/inf are refused."""
    text = json.dumps(plain(obj), indent=2)
    _atomic(path, ("text", lambda f: f.write(text)))


def write_npz(path: str, **arrays) -> None:
    """Write arrays to `.npz` atomically."""
    _atomic(path, ("bytes", lambda f: np.savez(f, **arrays)))
