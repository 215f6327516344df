"""The data set, the symmetrised model and the save times of a lazy run."""

import os

import jax

import models

from .. import _data
from .._data import digits_table
from .._options import UsageError
from .._tables import Table, table


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


def build_model(s: dict, in_size: int):
    """The symmetrised network of the settings (h(w0) = 0)."""
    key = jax.random.PRNGKey(s["seed"])
    if s["depth"] == 1:
        net = models.TwoLayerNet(in_size, s["width"], activation=s["activation"], key=key)
    else:
        net = models.MLP(
            in_size, s["width"], s["depth"], activation=s["activation"], bias=False, key=key
        )
    return models.symmetrize(net, s["symmetrize"])
