"""The data set, the symmetrised model and the save times of a lazy run."""

import os

import jax
import numpy as np

import flows
import models

from .. import _data
from .._common import UsageError


def load_data(s: dict):
    """(X_train, y_train, X_test, y_test, description) for the settings `s`."""
    name = s["data"]
    try:
        if name == "digits":
            try:
                classes = tuple(int(c) for c in s["classes"].split(","))
            except ValueError:
                classes = ()
            if len(classes) != 2:
                raise ValueError(f"--classes must be two digits like 3,8, got {s['classes']!r}")
            split = _data.digits_pair(classes, s["n_train"], s["n_test"], s["seed"])
            what = f"scikit-learn digits {classes[0]} (−1) vs {classes[1]} (+1), standardised"
        elif name == "teacher":
            split = _data.teacher(
                s["n_train"], s["n_test"], s["dim"], s["teacher_neurons"], s["seed"]
            )
            what = (
                f"inputs uniform on the sphere in R^{s['dim']}, ReLU teacher with "
                f"{s['teacher_neurons']} neurons, targets scaled to unit RMS"
            )
        elif os.path.exists(name):
            split = _data.table(name, s["target"], s["n_train"], s["n_test"], s["seed"])
            what = f"file {name!r}, target {s['target']!r}, features standardised"
        else:
            raise ValueError(
                f"--data {name!r}: neither 'digits' nor 'teacher', and no such file "
                "(give a .csv or .npz path)"
            )
    except ValueError as e:
        raise UsageError(str(e)) from None
    return (*split, what)


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


def save_times(t1: float, lambda_max: float, n: int) -> np.ndarray:
    """`flows.log_times` from min(10⁻³t1, 10⁻²/λ_max) (the fastest mode's time scale), joined
    with 20 evenly spaced times, so that both the early fall and the late exponential tail are
    resolved."""
    t_min = min(1e-3 * t1, 1e-2 / lambda_max) if lambda_max > 0 else 1e-3 * t1
    return np.union1d(flows.log_times(t1, n, t_min=t_min), np.linspace(0.0, t1, 21)[1:])
