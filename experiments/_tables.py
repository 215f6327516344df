"""A user's data file (CSV or NPZ): read, interpreted as a task, split and standardised, with
every interpretation stated (`Table.notes`) rather than made silently."""

import csv
import os
import zipfile
from typing import NamedTuple

import numpy as np

from ._data import digits_available, digits_pair, split_standardised
from ._options import UsageError

TASKS = ("auto", "classification", "regression")


class Table(NamedTuple):
    """A data file, split: arrays `(n_train, d)`, `(n_train,)`, `(n_test, d)`, `(n_test,)`
    (float64); `task` ("classification" with targets ±1, or "regression"); `notes`, one
    sentence per interpretation made (dropped index column, constant columns, target map)."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    task: str
    notes: list


def _one_line(error) -> str:
    return " ".join(str(error).split())


def _number(text: str) -> float:
    """A CSV field as a float: NaN when empty or not a number (refused later, by name)."""
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _read_csv(path, target, notes):
    # utf-8-sig: a spreadsheet's "CSV UTF-8" starts with a byte order mark, which would
    # otherwise become part of the first column's name.
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if not header:
            raise ValueError("empty file (a header row of column names is needed)")
        header = [name.strip() for name in header]
        rows, texts, lines = [], [], []
        for row in reader:
            if not row or row[0].lstrip().startswith("#"):  # blank lines and comments
                continue
            if len(row) != len(header):  # line_num: the file's line (the header is line 1)
                raise ValueError(
                    f"line {reader.line_num} (data row {len(rows) + 1}) has {len(row)} "
                    f"fields, expected {len(header)}, the header's columns "
                    f"({', '.join(header)})"
                )
            rows.append([_number(field) for field in row])
            texts.append(row)
            lines.append(reader.line_num)
    if not rows:
        raise ValueError("no data rows, only the header row")
    table, offset = np.array(rows, dtype=np.float64), 0
    if header[0] == "" and np.array_equal(table[:, 0], np.arange(len(table))):
        # pandas' to_csv writes its index so: an unnamed first column 0, 1, …, n − 1.
        notes.append("dropped the unnamed first column (a pandas index 0..n−1)")
        header, table, offset = header[1:], table[:, 1:], 1
    unnamed = [j + 1 for j, name in enumerate(header) if name == ""]
    if unnamed:
        raise ValueError(
            f"column(s) {', '.join(map(str, unnamed))} have no name in the header row; name "
            "them (or drop an index column that is not 0..n−1)"
        )
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:  # which column a repeated name means would be a silent guess
        raise ValueError(
            f"column name(s) {', '.join(map(repr, repeated))} appear more than once in the "
            "header row; give each column its own name"
        )
    if target not in header:
        raise ValueError(f"no target column {target!r} (columns: {', '.join(header)})")
    _check_fields(table, header, texts, lines, offset)
    j = header.index(target)
    return np.delete(table, j, axis=1), table[:, j]


def _check_fields(table, header, texts, lines, offset) -> None:
    """Refuse infinite, then missing, non-numeric or NaN fields, naming the first one's line,
    data row and column and its text (the message named neither row nor column)."""
    for bad, what in (
        (np.isinf(table), "infinite entries (inf, or a number beyond float64's range)"),
        (np.isnan(table), "missing, non-numeric or NaN entries"),
    ):
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(
                f"{int(bad.sum())} {what}; the first at line {lines[i]} (data row {i + 1}), "
                f"column {header[j]!r}: {texts[i][j + offset].strip()!r}"
            )


# What a readable NPZ is, said when a file is not one.
NPZ = "a zip archive of .npy arrays, as numpy.savez writes"


def _read_npz(path, target):
    with open(path, "rb") as f:
        head = f.read(6)
    if head == b"\x93NUMPY":
        raise ValueError(f"not a readable NPZ: it holds a single .npy array, not {NPZ}")
    # numpy.load reads a file that starts otherwise as a pickle, and advised allow_pickle
    if not (head.startswith((b"PK\x03\x04", b"PK\x05\x06")) and zipfile.is_zipfile(path)):
        raise ValueError(f"not a readable NPZ (not {NPZ}; truncated or another format)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            if "X" not in npz.files or target not in npz.files:
                raise KeyError(
                    f"an NPZ needs arrays 'X' (n, d) and {target!r} (n,); it holds "
                    f"{', '.join(npz.files) or 'nothing'}"
                )
            for name in ("X", target):
                if np.iscomplexobj(npz[name]):  # float64 would drop the imaginary part
                    raise KeyError(f"array {name!r} is complex ({npz[name].dtype}): give reals")
            X, y = np.asarray(npz["X"], np.float64), np.asarray(npz[target], np.float64)
    except KeyError as e:
        raise ValueError(e.args[0]) from None
    except (ValueError, TypeError, OSError, EOFError, zipfile.BadZipFile) as e:
        why = (
            "an array holds pickled Python objects, which are never loaded"
            if "pickle" in str(e)
            else f"{type(e).__name__}: {_one_line(e)}"
        )
        raise ValueError(f"not a readable NPZ ({why}); it must be {NPZ}, of numbers") from None
    if X.ndim != 2 or y.ndim != 1 or len(y) != len(X):
        raise ValueError(f"shapes X {X.shape} and {target} {y.shape}: need (n, d), (n,)")
    return X, y


def _read(path, target, notes):
    """(features (n, d), target (n,)); every problem is a ValueError naming the file."""
    ext = os.path.splitext(path)[1].lower()
    try:
        if ext == ".csv":
            return _read_csv(path, target, notes)
        if ext == ".npz":
            return _read_npz(path, target)
    except ValueError as e:
        raise ValueError(f"--data {path!r}: {_one_line(e)}") from None
    except (OSError, UnicodeDecodeError, EOFError) as e:
        reason = getattr(e, "strerror", None) or _one_line(e)
        raise ValueError(f"--data {path!r}: cannot read the file ({reason})") from None
    except Exception as e:  # a corrupt archive or table: numpy's own error says why
        raise ValueError(
            f"--data {path!r}: cannot read the file ({type(e).__name__}: {_one_line(e)})"
        ) from None
    raise ValueError(f"--data {path!r}: expected a .csv or .npz file")


def _interpret(y, task, path, target, notes):
    values = np.unique(y)
    if len(values) < 2:
        raise ValueError(f"--data {path!r}: the target {target!r} has a single value")
    if task == "auto":
        task = "classification" if len(values) == 2 else "regression"
    if task == "classification":
        if len(values) != 2:
            raise ValueError(
                f"--task classification: the target {target!r} of {path!r} has {len(values)} "
                "values; two classes are needed (or use --task regression)"
            )
        notes.append(f"classification: target {values[0]:g} → −1, {values[1]:g} → +1")
        return np.where(y == values[0], -1.0, 1.0), task
    integer = bool(np.all(values == np.round(values)))
    hint = (
        f" ({len(values)} integer values: if these are classes, the squared loss treats them as "
        "numbers)"
        if integer and len(values) <= 20
        else ""
    )
    notes.append(f"regression on the values of {target!r}{hint}")
    return y, task


def table(path, target="target", n_train=100, n_test=100, seed=0, task="auto") -> Table:
    """A user's data set: a CSV or NPZ file with features and a target, as a `Table`.

    - CSV: a header row of column names, then one row per example, comma-separated numbers
      (UTF-8, a byte order mark allowed); the column named `target` is the target, all
      others are features. An unnamed first column holding 0..n−1 (pandas' index) is dropped;
      any other unnamed column is refused.
    - NPZ: arrays `X` of shape (n, d) and `target` of shape (n,).

    `task`: "classification" maps a two-valued target to ±1 (the smaller value to −1) and
    refuses any other number of values; "regression" keeps the values; "auto" is
    classification for two values, regression otherwise. Rows are split at random (`seed`)
    into `n_train` training and `n_test` held-out rows; features are standardised with the
    training mean and standard deviation, and columns constant up to round-off become 0.

    Raises `ValueError` naming the file (or `--task`) when it cannot be read, has no target
    column, no feature column or a repeated column name, holds NaN, infinite or non-numeric
    entries, a single value, fewer rows than `n_train + n_test`, features whose spread
    overflows, or no feature that is not constant on the training rows.
    """
    if task not in TASKS:
        raise ValueError(f"--task must be one of {', '.join(TASKS)}, got {task!r}")
    notes = []
    X, y = _read(path, target, notes)
    _check_entries(X, y, path, target)
    y, task = _interpret(y, task, path, target, notes)
    if n_train < 2 or n_test < 0 or n_train + n_test > len(y):
        raise ValueError(
            f"--data {path!r} has {len(y)} rows: --n-train ({n_train}, >= 2) plus --n-test "
            f"({n_test}) must not exceed it"
        )
    *split, n_constant = split_standardised(X, y, n_train, n_test, seed)
    if task == "classification" and len(np.unique(split[1])) < 2:
        raise ValueError(f"--data {path!r}: the training rows hold a single class (seed={seed})")
    if not all(np.all(np.isfinite(part)) for part in split):
        raise ValueError(
            f"--data {path!r}: features not finite after standardising (entries too large "
            "for float64 arithmetic); rescale the file"
        )
    if n_constant == X.shape[1]:  # the network would see only zeros: nothing to learn
        raise ValueError(
            f"--data {path!r}: no informative feature: all {n_constant} feature column(s) "
            "are constant on the training rows (up to round-off) and standardise to 0"
        )
    if n_constant:
        notes.append(
            f"{n_constant} feature column(s) constant on the training rows (up to round-off) "
            "set to 0"
        )
    return Table(*split, task=task, notes=notes)


def _check_entries(X, y, path, target) -> None:
    """Refuses (`ValueError` naming --data) a file without feature columns, with entries that
    are missing, non-numeric, NaN or infinite, or with a feature whose spread overflows."""
    if X.shape[1] == 0:
        raise ValueError(
            f"--data {path!r}: no feature columns, only the target {target!r} (every other "
            "column is a feature)"
        )
    both = np.column_stack([X, y])
    if np.any(np.isinf(both)):
        raise ValueError(
            f"--data {path!r}: {int(np.isinf(both).sum())} infinite entries (inf, or a "
            "number beyond float64's range)"
        )
    if not np.all(np.isfinite(both)):
        raise ValueError(f"--data {path!r}: missing, non-numeric or NaN entries")
    with np.errstate(over="ignore", invalid="ignore"):
        overflow = np.flatnonzero(~np.isfinite(X.std(axis=0)))
    if len(overflow):  # (x − mean)/inf would silently make the column 0
        raise ValueError(
            f"--data {path!r}: feature column(s) {', '.join(str(j + 1) for j in overflow)} "
            "(counted without the target) have a standard deviation beyond float64's range "
            "(entries near 1e308); rescale them"
        )


def digits_table(classes, n_train, n_test, seed):
    """`digits_pair` for the CLI: a `Table` (task classification), and errors that name the
    flags (`--classes`, `--n-train`, `--n-test`) as typed."""
    available = digits_available(classes)
    if n_train < 2 or n_test < 0 or n_train + n_test > available:
        raise UsageError(
            f"--n-train ({n_train}, >= 2) plus --n-test ({n_test}) must not exceed {available}, "
            f"the digits {classes[0]} and {classes[1]} available"
        )
    split = digits_pair(classes, n_train, n_test, seed)
    return Table(*split, task="classification", notes=[])
