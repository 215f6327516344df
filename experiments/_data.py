"""Data sets that ship with a package or are generated here (no download), and user files."""

import csv
import os

import numpy as np


def digits_pair(classes=(3, 8), n_train=100, n_test=100, seed=0):
    """Two classes of scikit-learn's bundled 8×8 handwritten digits, targets ±1.

    Features are standardised with the training set's mean and standard deviation (constant
    pixels are left at zero). Returns `(X_train (n_train, 64), y_train (n_train,),
    X_test (n_test, 64), y_test (n_test,))`, float64; `classes[0]` maps to −1.

    Raises `ValueError` naming `classes`, `n_train` or `n_test` when they cannot be met.
    """
    from sklearn.datasets import load_digits

    a, b = (int(c) for c in classes)
    if a == b or not (0 <= a <= 9 and 0 <= b <= 9):
        raise ValueError(f"classes must be two different digits in 0..9, got {classes}")
    X, y = load_digits(return_X_y=True)
    keep = (y == a) | (y == b)
    X, y = X[keep].astype(np.float64), np.where(y[keep] == a, -1.0, 1.0)
    if n_train < 2 or n_test < 0 or n_train + n_test > len(y):
        raise ValueError(
            f"n_train + n_test must be at most {len(y)} for digits {a} and {b} (n_train >= 2), "
            f"got n_train={n_train}, n_test={n_test}"
        )
    return _split_standardised(X, y, n_train, n_test, seed)


def _split_standardised(X, y, n_train, n_test, seed):
    """A random train/test split; features standardised with the training mean and standard
    deviation (constant features are left at zero)."""
    order = np.random.default_rng(seed).permutation(len(y))
    train, test = order[:n_train], order[n_train : n_train + n_test]
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    std = np.where(std > 0, std, 1.0)
    X = (X - mean) / std
    return X[train], y[train], X[test], y[test]


def teacher(n_train=100, n_test=100, dim=16, neurons=3, seed=0):
    """The synthetic set of the lazy-training paper: inputs on the sphere, a ReLU teacher.

    Inputs x are uniform on the unit sphere of R^dim. The teacher is a two-layer ReLU network
    with `neurons` neurons, f*(x) = Σ_j a_j max(0, b_j · x), b_j uniform on the unit sphere and
    a_j = ±1 with random signs; targets are f*(x) divided by their root mean square on the
    training set (so that ‖y*‖² = n_train). Returns `(X_train (n_train, dim), y_train,
    X_test (n_test, dim), y_test)`, float64.

    Raises `ValueError` naming `n_train`, `n_test`, `dim` or `neurons` when out of range.

    Reference: Chizat, Oyallon & Bach 2019, §3 (two-layer ReLU teacher, inputs on the sphere).
    """
    for name, value, low in (
        ("n_train", n_train, 2),
        ("n_test", n_test, 0),
        ("dim", dim, 2),
        ("neurons", neurons, 1),
    ):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value}")
    rng = np.random.default_rng(seed)

    def sphere(k):
        Z = rng.standard_normal((k, dim))
        return Z / np.linalg.norm(Z, axis=1, keepdims=True)

    B, a = sphere(neurons), rng.choice([-1.0, 1.0], size=neurons)
    X = sphere(n_train + n_test)
    y = np.maximum(X @ B.T, 0.0) @ a
    rms = np.sqrt(np.mean(y[:n_train] ** 2))
    if rms == 0:
        raise ValueError(f"the teacher is zero on the training inputs (seed={seed}); change seed")
    y = y / rms
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def _one_line(error) -> str:
    return " ".join(str(error).split())


def _read_table(path, target):
    """(features (n, d), target (n,)) from a CSV with a header row or an NPZ with arrays `X`
    and `target`; every problem is a ValueError naming the file."""
    ext = os.path.splitext(path)[1].lower()
    try:
        if ext == ".csv":
            with open(path, newline="") as f:
                header = next(csv.reader(f), None)
            if not header:
                raise ValueError("empty file (a header row of column names is needed)")
            header = [name.strip() for name in header]
            if target not in header:
                raise ValueError(f"no target column {target!r} (columns: {', '.join(header)})")
            table = np.genfromtxt(path, delimiter=",", skip_header=1, dtype=np.float64, ndmin=2)
            if table.size == 0:
                raise ValueError("no data rows")
            if table.shape[1] != len(header):
                raise ValueError(f"rows have {table.shape[1]} fields, the header {len(header)}")
            j = header.index(target)
            return np.delete(table, j, axis=1), table[:, j]
        if ext == ".npz":
            try:
                npz = np.load(path, allow_pickle=False)
            except ValueError as e:  # not an archive numpy can read without pickles
                raise ValueError(f"cannot read the file as NPZ ({e})") from None
            if not isinstance(npz, np.lib.npyio.NpzFile):
                raise ValueError("cannot read the file as NPZ (it holds a single .npy array)")
            with npz:
                if "X" not in npz.files or target not in npz.files:
                    raise ValueError(
                        f"an NPZ needs arrays 'X' (n, d) and {target!r} (n,); it holds "
                        f"{', '.join(npz.files) or 'nothing'}"
                    )
                X, y = np.asarray(npz["X"], np.float64), np.asarray(npz[target], np.float64)
            if X.ndim != 2 or y.ndim != 1 or len(y) != len(X):
                raise ValueError(f"shapes X {X.shape} and {target} {y.shape}: need (n, d), (n,)")
            return X, y
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


def table(path, target="target", n_train=100, n_test=100, seed=0):
    """A user's data set: a CSV or NPZ file with features and a target column.

    - CSV: a header row of column names, then one row per example, comma-separated numbers;
      the column named `target` is the target, all others are features.
    - NPZ: arrays `X` of shape (n, d) and `target` of shape (n,).

    A target with two distinct values is mapped to ±1 (the smaller to −1); with more, the values
    are used as real-valued regression targets. Rows are split at random (`seed`) into
    `n_train` training and `n_test` held-out rows, and features are standardised with the
    training mean and standard deviation. Returns `(X_train, y_train, X_test, y_test)`.

    Raises `ValueError` naming the file when it cannot be read, has no target column, holds
    NaN or non-numeric entries, a single class, or fewer rows than `n_train + n_test`.
    """
    X, y = _read_table(path, target)
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError(f"--data {path!r}: missing, non-numeric or NaN entries")
    values = np.unique(y)
    if len(values) < 2:
        raise ValueError(f"--data {path!r}: the target {target!r} has a single class")
    if len(values) == 2:
        y = np.where(y == values[0], -1.0, 1.0)
    if n_train < 2 or n_test < 0 or n_train + n_test > len(y):
        raise ValueError(
            f"--data {path!r} has {len(y)} rows: --n-train ({n_train}, >= 2) plus --n-test "
            f"({n_test}) must not exceed it"
        )
    split = _split_standardised(X, y, n_train, n_test, seed)
    if len(np.unique(split[1])) < 2:
        raise ValueError(f"--data {path!r}: the training rows hold a single class (seed={seed})")
    return split
