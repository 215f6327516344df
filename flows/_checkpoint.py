"""Checkpoint files of a chunked solve: written atomically after each chunk, read to resume."""

import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np

_COUNTERS = ("num_steps", "num_accepted_steps", "num_rejected_steps", "grad_evals", "jvp_evals")


def atomic_savez(path: str, **arrays) -> None:
    """`np.savez(path, **arrays)` through a temporary file in the same folder and a rename, so
    that an interruption leaves the old file or the new one, never half of one."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".npz")
    os.close(fd)
    np.savez(tmp, **arrays)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are for sharing
    os.replace(tmp, path)


def write(path, ts, done, t, phase, y, saved_leaves, stats) -> None:
    """The state of a chunked solve after `done` chunks: time `t`, solver `phase`, state `y`,
    what was saved so far and the counters of `stats`."""
    atomic_savez(
        path,
        ts=ts,
        done=done,
        t=t,
        phase=phase,
        **{f"y{i}": np.asarray(a) for i, a in enumerate(jax.tree.leaves(y))},
        **{f"s{i}": np.concatenate(s) for i, s in enumerate(saved_leaves)},
        **{key: getattr(stats, key) for key in _COUNTERS},
    )


def read(path, ts, y_def, n_saved_leaves, stats):
    """`(done, t, phase, y, saved_leaves)` from `path`, counters restored into `stats`.

    **Raises:** `ValueError` if the file was written for other save times."""
    with np.load(path, allow_pickle=False) as ck:
        if ck["ts"].shape != ts.shape or not np.array_equal(ck["ts"], ts):
            raise ValueError(f"checkpoint {path!r} was written for other save times `ts`")
        y = jax.tree.unflatten(y_def, [jnp.asarray(ck[f"y{i}"]) for i in range(y_def.num_leaves)])
        saved_leaves = [[ck[f"s{i}"]] for i in range(n_saved_leaves)]
        for key in _COUNTERS:
            setattr(stats, key, int(ck[key]))
        return int(ck["done"]), float(ck["t"]), str(ck["phase"]), y, saved_leaves
