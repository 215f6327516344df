"""The data set, the symmetrised model and the save times of a lazy run."""

import os

import jax
import numpy as np

import models
from flows._checks import check_finite, check_number
from flows.lazy._comparison import check_pair

from .. import _data
from .._options import UsageError
from .._sizes import MAX_PARAMETERS, largest_width
from .._tables import Table, digits_table, table


def load_data(s: dict) -> Table:
    """The data of the settings `s` as a `Table` (task and notes included)."""
    name = s["data"]
    if name == "digits":
        classes = [int(c) for c in s["classes"].split(",")]
        return digits_table(classes, s["n_train"], s["n_test"], s["seed"])
    try:
        if name == "teacher":
            split = _data.teacher(
                s["n_train"], s["n_test"], s["dim"], s["teacher_neurons"], s["seed"]
            )
            notes = [
                f"inputs uniform on the sphere in R^{s['dim']}, ReLU teacher with "
                f"{s['teacher_neurons']} neurons, targets scaled to unit RMS"
            ]
            return Table(*split, task="regression", notes=notes)
        if os.path.exists(name):
            return table(name, s["target"], s["n_train"], s["n_test"], s["seed"], s["task"])
    except ValueError as e:
        raise UsageError(str(e)) from None
    raise UsageError(
        f"--data {name!r}: neither 'digits' nor 'teacher', and no such file "
        "(give a .csv or .npz path)"
    )


def describe(s: dict, data: Table) -> str:
    """One line: which data, which task, what was done to it."""
    name = s["data"]
    if name == "digits":
        a, b = s["classes"].split(",")
        what = f"scikit-learn digits {a} (−1) vs {b} (+1), standardised"
    elif name == "teacher":
        what = "teacher"
    else:
        what = f"file {name!r}, target {s['target']!r}, features standardised"
    return "; ".join([what, f"task: {data.task}", *data.notes])


def n_parameters(in_size: int, width: int, depth: int) -> int:
    """Parameters of the symmetrised network (two copies of the net, hidden layers without
    bias): 2·(d·w + (depth − 1)·w² + w)."""
    return 2 * (in_size * width + (depth - 1) * width * width + width)


def max_width(in_size: int, depth: int) -> int:
    """The largest --width whose network has at most `MAX_PARAMETERS` parameters."""
    return largest_width(lambda w: n_parameters(in_size, w, depth))


def build_model(s: dict, in_size: int):
    """The symmetrised network of the settings (h(w0) = 0). Raises `UsageError` naming
    --width/--depth when it would have more than `MAX_PARAMETERS` parameters: the one limit
    of --width, stated as the largest width this data and depth allow."""
    w, depth = s["width"], s["depth"]
    p = n_parameters(in_size, w, depth)
    if p > MAX_PARAMETERS:
        raise UsageError(
            f"--width {w} --depth {depth}: the network would have {p:.3g} parameters "
            f"(input size {in_size}, two copies), over the limit of {MAX_PARAMETERS:.0e}: "
            f"--width at most {max_width(in_size, depth)} at --depth {depth} on this data"
        )
    key = jax.random.PRNGKey(s["seed"])
    if s["depth"] == 1:
        net = models.TwoLayerNet(in_size, s["width"], activation=s["activation"], key=key)
    else:
        net = models.MLP(
            in_size, s["width"], s["depth"], activation=s["activation"], bias=False, key=key
        )
    return models.symmetrize(net, s["symmetrize"])


#: `experiments.lazy.run`'s numeric options and their kinds (the CLI's argparse types them).
USER_NUMBERS = {
    "n_alpha": int, "t1": float, "loss_decades": float, "n_times": int, "rtol": float,
    "atol": float, "max_steps": int, "nodes": int, "rate_window": float, "lip_radius": float,
    "seed": int,
}  # fmt: skip


def _array(name: str, value) -> np.ndarray:
    try:
        out = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        what = type(value).__name__
        raise ValueError(f"{name} must be an array of numbers, got {what}") from None
    check_finite(name, out)
    return out


def _pair(name: str, value, what: str):
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        size = f" of {len(value)}" if isinstance(value, (tuple, list)) else ""
        raise ValueError(f"{name} must be a pair {what}, got a {type(value).__name__}{size}")
    return value


def user_inputs(data, heldout, alphas, options: dict):
    """The checks of `experiments.lazy.run`'s own arguments, before any folder or
    computation: `(X, Y, X_test, Y_test, alphas)` as float64 arrays and a list of floats (or
    None). X `(n, d)`, n ≥ 1; Y `(n,)` or `(n, k)`; `heldout` `(n', d)` or a pair with Y'
    shaped as Y; `alphas` a sequence of numbers (not a str); the numeric `options` numbers
    (`USER_NUMBERS`), `solver` a str. **Raises:** `ValueError` (`TypeError` for `alphas` or
    an option of the wrong type) naming the argument."""
    X, Y = (np.asarray(a) for a in check_pair(data))
    if Y.ndim not in (1, 2):
        raise ValueError(
            f"data targets must have shape ({len(X)},) or ({len(X)}, k), got {Y.shape}"
        )
    X_test, Y_test = None, np.zeros((0,))
    if heldout is not None:
        pair = isinstance(heldout, (tuple, list))
        if pair:
            _pair("heldout", heldout, "(X' (n', d), Y'), or the inputs X' alone")
        name = "heldout inputs" if pair else "heldout"
        X_test = _array(name, heldout[0] if pair else heldout)
        if X_test.ndim != 2 or len(X_test) == 0 or X_test.shape[1] != X.shape[1]:
            raise ValueError(
                f"{name} must have shape (n', {X.shape[1]}) with n' >= 1 (the inputs of data "
                f"have {X.shape[1]} features), got {X_test.shape}"
            )
        if pair:
            Y_test = _array("heldout targets", heldout[1])
            if Y_test.shape != (len(X_test), *Y.shape[1:]):
                raise ValueError(
                    f"heldout targets must have shape {(len(X_test), *Y.shape[1:])} (as data "
                    f"targets), got {Y_test.shape}"
                )
    if alphas is not None:
        if isinstance(alphas, (str, bytes)) or not np.iterable(alphas):
            raise TypeError(
                f"alphas must be a sequence of numbers such as [1, 10, 100], got "
                f"{type(alphas).__name__} {alphas!r:.40}"
            )
        alphas = [check_number("alphas", a) for a in alphas]
    for key, kind in USER_NUMBERS.items():
        if options.get(key) is not None:
            options[key] = check_number(key, options[key], kind)
    if options.get("solver") is not None and not isinstance(options["solver"], str):
        raise TypeError(f"solver must be a str, got {type(options['solver']).__name__}")
    return X, Y, X_test, Y_test, alphas
