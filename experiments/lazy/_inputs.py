"""The data set, the symmetrised model and the save times of a lazy run."""

import os

import jax

import models

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
