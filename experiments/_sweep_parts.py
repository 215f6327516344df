"""The parts of a sweep: one JSON (and `.npz`) file per finished task, keyed by its settings."""

import dataclasses
import hashlib
import json
import os
import sys
import zipfile
import zlib

import numpy as np

from ._files import plain, write_json, write_npz


def task_key(task: dict) -> str:
    """The key of a task: 16 hex digits of the SHA-256 of its settings as canonical JSON.

    Floats are written by `repr`, so `1e3` and `1000.0` give one key; key order does not matter.
    """
    text = json.dumps(plain(task), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def type_name(cls: type) -> str:
    """The qualified name `module.QualName` of an exception class, as `TaskResult.error_type`
    holds it."""
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclasses.dataclass(frozen=True)
class TaskResult:
    """One task of a sweep, as read back from its part.

    - `record`: the dict the task function returned (None if the task could not be finished);
    - `arrays`: its arrays (`{}` if none or failed);
    - `stats`: wall_s, cpu_s, peak_rss_bytes (and how it was read), worker, host, pid, attempts;
    - `error`: None, or why the task could not be finished (no part is written then, so a
      resumed sweep tries it again): "ExceptionName: message" when the task raised;
    - `error_type`: the qualified name (`type_name`) of the exception class the task raised,
      or None (it finished, or the sweep lost it: a worker died, its part could not be
      written); test it with `raised`;
    - `resumed`: True if the part was already in the folder.
    """

    key: str
    task: dict
    record: dict | None
    arrays: dict
    stats: dict
    error: str | None = None
    error_type: str | None = None
    resumed: bool = False

    @property
    def failed(self) -> bool:
        return self.error is not None

    def raised(self, cls: type) -> bool:
        """Whether the task failed by raising exactly `cls` (not a subclass)."""
        return self.error_type == type_name(cls)

    @property
    def error_message(self) -> str | None:
        """`error` without the "ExceptionName: " the sweep puts before a raised message."""
        if self.error_type is None:
            return self.error
        return self.error.removeprefix(self.error_type.rsplit(".", 1)[-1] + ": ")


def _paths(folder: str, key: str) -> tuple[str, str]:
    base = os.path.join(folder, f"part-{key}")
    return base + ".json", base + ".npz"


def checkpoint_path(folder: str, key: str) -> str:
    """Where task `key` may keep a mid-task checkpoint (`TaskContext.checkpoint`)."""
    return os.path.join(folder, f"part-{key}.checkpoint.npz")


def log(folder: str, key: str, text: str) -> None:
    os.makedirs(os.path.join(folder, "logs"), exist_ok=True)
    with open(os.path.join(folder, "logs", f"{key}.log"), "a") as f:
        f.write(text)


#: What a damaged part file raises when read (a truncated .npz: "File is not a zip file").
DAMAGED = (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile, zlib.error)


def load_part(folder: str, key: str, task: dict) -> TaskResult | None:
    """The finished part of `task`, or None if it is missing, damaged or another task's: its
    task is then computed again. A damaged file (truncated: a full disk, a copy cut short) is
    said on stderr, naming it ("File is not a zip file" stopped `--resume`, naming no file)."""
    path_json, path_npz = _paths(folder, key)
    if not os.path.exists(path_json):
        return None
    path = path_json
    try:
        with open(path_json) as f:
            part = json.load(f)
        if part["task"] != plain(task):
            return None
        arrays, path = {}, path_npz
        if part["arrays"]:
            with np.load(path_npz, allow_pickle=False) as npz:
                arrays = {name: npz[name] for name in part["arrays"]}
    except DAMAGED as e:
        why = " ".join(f"{type(e).__name__}: {e}".split())
        print(f"note: {path} is damaged ({why}); its task {plain(task)} is computed again",
              file=sys.stderr, flush=True)  # fmt: skip
        return None
    return TaskResult(key, task, part["record"], arrays, part["stats"], resumed=True)


def write_part(folder: str, key: str, task: dict, out: dict, attempts: int) -> TaskResult:
    path_json, path_npz = _paths(folder, key)
    stats = {**out["stats"], "attempts": attempts}
    if "error" in out:
        log(folder, key, out["traceback"])
        return TaskResult(
            key, task, None, {}, stats, error=out["error"], error_type=out.get("error_type")
        )
    arrays = {name: np.asarray(a) for name, a in out["arrays"].items()}
    try:
        if arrays:
            write_npz(path_npz, **arrays)
        write_json(path_json, {"key": key, "task": task, "record": out["record"],
                               "arrays": sorted(arrays), "stats": stats})  # fmt: skip
    except ValueError as e:  # a NaN in the record is never written as data
        # logged too: the failure line points at logs/<key>.log, which did not exist
        error = f"cannot write its part: {e}"
        log(folder, key, f"{error}\nrecord: {out['record']!r}\n")
        return TaskResult(key, task, None, {}, stats, error=error)
    if os.path.exists(checkpoint_path(folder, key)):
        os.remove(checkpoint_path(folder, key))
    return dataclasses.replace(load_part(folder, key, task), resumed=False)
