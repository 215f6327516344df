"""Files of a run folder: atomic writes of JSON, `.npz` and figures, JSON-safe values, versions,
fingerprints of the data."""

import hashlib
import importlib.metadata
import json
import math
import os

import numpy as np

from ._atomic import atomic_write


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
    atomic_write(path, "w", lambda f: f.write(text))


def write_npz(path: str, **arrays) -> None:
    """Write arrays to `.npz` atomically."""
    atomic_write(path, "wb", lambda f: np.savez(f, **arrays))


def write_figure(path: str, figure, **savefig) -> None:
    """Save a matplotlib `Figure` atomically; the format is the extension of `path`."""
    fmt = os.path.splitext(path)[1].lstrip(".")
    atomic_write(path, "wb", lambda f: figure.savefig(f, format=fmt, **savefig))


def sha256(*arrays) -> str:
    """SHA-256 of the arrays as float64 bytes: `--resume` refuses data that changed."""
    data = b"".join(np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in arrays)
    return hashlib.sha256(data).hexdigest()
