"""Checkpoint files of a chunked solve: written atomically after each chunk and, by wall time,
within one (`Pacer`), read to resume only when their fingerprint says they were written for the
same problem."""

import dataclasses
import hashlib
import json
import os
import tempfile
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._solver._solve import save_at, saved_shape

#: Wall seconds between checkpoints (and `report` calls) within a chunk, once stepping.
CHECKPOINT_S = 5.0
#: Steps of a solve's first diffrax call (its wall time is mostly compilation, after which
#: the first checkpoint is written), and the fewest of a call cut for a checkpoint.
FIRST_CALL_STEPS = 8
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


def check_path(path) -> str:
    """Before a solve: `path` (a str or `os.PathLike`) must be a readable checkpoint or a file
    that can be written, so that a bad path fails now, not after the first chunk's work. A
    missing folder is created (with its parents), as `--out` folders are. Returns the path as
    a str. **Raises:** `TypeError` naming `checkpoint` for a value that is not a path (an int
    would name an open file descriptor to `os.path`); `ValueError` naming `checkpoint` for an
    empty path, a folder, or a place that cannot be written."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError(
            f"checkpoint must be the path of an .npz file (a str or os.PathLike), got "
            f"{type(path).__name__} {path!r}"
        )
    if not path or path.endswith(("/", os.sep)):
        raise ValueError(f"checkpoint must be the path of an .npz file, got {path!r}")
    if os.path.exists(path):
        if os.path.isdir(path):
            raise ValueError(f"checkpoint {path!r} is a folder; give the path of an .npz file")
        return path
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, suffix=".npz")
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise ValueError(
            f"checkpoint {path!r}: cannot write in {folder!r} ({e.strerror or e})"
        ) from None
    return path


def load(path: str):
    """`np.load(path)` of a checkpoint (an open `NpzFile`, use it in a `with`). **Raises:**
    `ValueError` naming `checkpoint` when the file is not an .npz archive numpy can read
    without pickles (truncated, or another format): numpy's own error advised
    `allow_pickle`."""
    try:
        ck = np.load(path, allow_pickle=False)
        if isinstance(ck, np.lib.npyio.NpzFile):
            return ck
        reason = "a single .npy array"
    except Exception as e:  # ValueError (a pickle), zipfile.BadZipFile, EOFError, OSError
        reason = f"{type(e).__name__}: {' '.join(str(e).split())}"
        if "pickle" in reason:
            reason = "not a zip archive"
    raise ValueError(
        f"checkpoint {path!r} is not a readable checkpoint ({reason}); it was not written by "
        "a gradflows solve, or was damaged: delete it to start afresh"
    )


def write(path, fingerprint, ts, done, t, phase, y, saved_leaves, stats) -> None:
    """The state of a chunked solve after `done` chunks: time `t`, solver `phase`, state `y`,
    what was saved so far and the counters of `stats`, with the problem's `fingerprint`."""
    atomic_savez(
        path,
        **fingerprint.arrays(),
        ts=ts,
        done=done,
        t=t,
        phase=phase,
        **{f"y{i}": np.asarray(a) for i, a in enumerate(jax.tree.leaves(y))},
        **{f"s{i}": np.concatenate(s) for i, s in enumerate(saved_leaves)},
        **{key: getattr(stats, key) for key in _COUNTERS},
    )


def read(path, fingerprint, y_def, n_saved_leaves, stats):
    """`(done, t, phase, y, saved_leaves)` from `path`, counters restored into `stats`.

    **Raises:** `ValueError` (`Fingerprint.check`) if the file was written for another
    problem."""
    with load(path) as ck:
        fingerprint.check(path, ck)
        y = jax.tree.unflatten(y_def, [jnp.asarray(ck[f"y{i}"]) for i in range(y_def.num_leaves)])
        saved_leaves = [[ck[f"s{i}"]] for i in range(n_saved_leaves)]
        for key in _COUNTERS:
            setattr(stats, key, int(ck[key]))
        return int(ck["done"]), float(ck["t"]), str(ck["phase"]), y, saved_leaves


@eqx.filter_jit
def _at_start(field, save, y0):
    """The field at (0, y0) and what is saved there (its "loss" entry, if it has one)."""
    saved = save_at(save, 0.0, y0, None)  # the solve's own trace of `save`
    if isinstance(saved, dict) and "loss" in saved:
        saved = saved["loss"]
    return field(0.0, y0, None), saved


def fingerprint(field, y0, ts, save, settings) -> "Fingerprint":
    """What a checkpoint of this solve is written for (`Fingerprint`): the start
    state, the settings, the save times, the structure (state, saved values, and the
    parameter pytree of a flattened state) and the data in `field` exactly; the loss (or
    what `save` gives) and the field at the start to 1e-9."""
    spec = getattr(field, "spec", None)
    params = jax.tree.unflatten(spec.treedef, [jax.ShapeDtypeStruct(s, d) for s, d in zip(
        spec.shapes, spec.dtypes)]) if spec is not None else None  # fmt: skip
    shapes = (y0, saved_shape(save, y0), params)
    structure = [leaf_paths(tree) for tree in shapes]
    gradient, loss = _at_start(field, save, y0)
    return Fingerprint(
        digests={
            "the start state": digest(y0),
            "the settings": digest(settings_text(settings)),
            "the save times": digest(np.asarray(ts, np.float64)),
            "the structure": digest(repr(structure)),
            "the data": digest(jax.tree.leaves(eqx.filter(field, eqx.is_array))),
        },
        values={
            "the loss at the start": summary(loss),
            "the gradient at the start": summary(gradient),
        },
    )


def digest(tree) -> str:
    """16 hex digits of the SHA-256 of a pytree's structure, and of its leaves' dtypes, shapes
    and bytes (str leaves by their text)."""
    h = hashlib.sha256()
    leaves, treedef = jax.tree.flatten(tree)
    h.update(str(treedef).encode())
    for leaf in leaves:
        if isinstance(leaf, str):
            h.update(b"str:" + leaf.encode())
            continue
        a = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def leaf_paths(tree) -> list:
    """(path, shape, dtype) of each array leaf: the structure of a pytree, without the reprs
    of static fields (which hold function addresses that change from one process to the
    next)."""
    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [
        (jax.tree_util.keystr(p), tuple(np.shape(x)), str(getattr(x, "dtype", type(x).__name__)))
        for p, x in flat
    ]


def settings_text(settings) -> str:
    """The settings that decide a trajectory, as canonical JSON: all but `max_steps`, a budget
    (raise it and resume)."""
    kept = {k: v for k, v in settings.to_dict().items() if k != "max_steps"}
    return json.dumps(kept, sort_keys=True)


@dataclasses.dataclass(frozen=True)
class Fingerprint:
    """What a checkpoint was written for, checked before it is resumed.

    - `digests`: `{what: digest}` of exact inputs (the start state, the settings, the save
      times, the structure, the data in the field), which must agree bit for bit;
    - `values`: `{what: float array}` computed at the start (the loss, the gradient), which
      must agree to 1e-9 relative: their last bits may differ across machines (BLAS, XLA).
    """

    digests: dict
    values: dict

    def arrays(self) -> dict:
        """The fingerprint as `.npz` entries."""
        out = {
            "fp_names": np.array(list(self.digests), dtype=str),
            "fp_digests": np.array(list(self.digests.values()), dtype=str),
            "fpv_names": np.array(list(self.values), dtype=str),
        }
        out.update(
            {f"fpv{i}": np.asarray(v, np.float64) for i, v in enumerate(self.values.values())}
        )
        return out

    def check(self, path: str, ck) -> None:
        """Raise `ValueError` (one line naming `path` and what differs) unless the checkpoint
        `ck` (an open `np.load`) was written for this fingerprint."""
        if "fp_names" not in ck.files:
            raise ValueError(
                f"checkpoint {path!r} holds no fingerprint of the problem it was written for "
                "(an older gradflows wrote it), so it cannot be trusted: delete it to start afresh"
            )
        stored = dict(zip(ck["fp_names"].tolist(), ck["fp_digests"].tolist()))
        differ = [what for what, d in self.digests.items() if stored.get(what) != d]
        stored_values = {name: ck[f"fpv{i}"] for i, name in enumerate(ck["fpv_names"].tolist())}
        for what, value in self.values.items():
            old = stored_values.get(what)
            value = np.asarray(value, np.float64)
            if (
                old is None
                or old.shape != value.shape
                or not np.allclose(old, value, rtol=1e-9, atol=1e-300, equal_nan=True)
            ):
                here = f"{value.flat[0]:.6g}" if value.size else "-"
                there = f"{old.flat[0]:.6g}" if old is not None and old.size else "none"
                differ.append(f"{what} ({here} now, {there} in the file)")
        if differ:
            raise ValueError(
                f"checkpoint {path!r} was written for another problem: {', '.join(differ)} "
                "differ; delete it to start afresh, or give another checkpoint path"
            )


def summary(tree) -> np.ndarray:
    """A few numbers of a pytree of arrays, for `Fingerprint.values`: per leaf its norm and
    two weighted sums (Σx, Σ cos(k)·x_k), which change under any change but round-off."""
    out = []
    for leaf in jax.tree.leaves(tree):
        x = np.asarray(leaf, np.float64).ravel()
        out += [np.linalg.norm(x), np.sum(x), np.dot(np.cos(np.arange(x.size)), x)]
    return np.asarray(out, np.float64)


class Pacer:
    """When a chunked solve (`flows._integrate.integrate`) ends a diffrax call to write a
    checkpoint within a chunk: the first call after `FIRST_CALL_STEPS` steps (its wall time is
    mostly compilation: the first checkpoint then follows the first steps at once), each later
    one when the next checkpoint is due, `CHECKPOINT_S` seconds after the last, at the step
    rate of the last call (it follows the load and the solver). A call cut so carries the
    solver state on: the steps, hence the numbers, are those of an uncut solve."""

    def __init__(self):
        self.rate, self.last, self.calls = None, time.perf_counter(), 0

    def steps(self) -> int:
        """The most steps the next call may take."""
        if self.rate is None:
            return FIRST_CALL_STEPS
        left = CHECKPOINT_S - (time.perf_counter() - self.last)
        return max(FIRST_CALL_STEPS, int(self.rate * left))

    def ran(self, steps: int, seconds: float) -> None:
        """A call took `steps` steps in `seconds` of wall time."""
        self.calls += 1
        if steps:
            self.rate = steps / seconds

    def due(self, cut: bool) -> bool:
        """Whether a checkpoint is due after the call that just ran: the first, one `cut` for
        a checkpoint (it hit `steps()`), or one that ran late."""
        return self.calls == 1 or cut or time.perf_counter() - self.last >= CHECKPOINT_S

    def written(self) -> None:
        """A checkpoint was written now (or would have been: none asked for)."""
        self.last = time.perf_counter()
