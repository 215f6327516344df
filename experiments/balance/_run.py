"""The balance run: settings, problem, each part in turn, figures, summary."""

import os

from tqdm.auto import tqdm

from .._common import run_dir, versions, write_json
from ._cli import _settings
from ._gd import _gd_part
from ._homogeneous import _homogeneous_part
from ._logistic import _logistic_part
from ._problem import _Problem
from ._report import _summary
from ._squared import _squared_part

_PART_FUNCTIONS = {
    "logistic": _logistic_part,
    "gd": _gd_part,
    "squared": _squared_part,
    "homogeneous": _homogeneous_part,
}


def run(args) -> int:
    from ._plots import plot

    s = _settings(args)
    problem = _Problem(s)
    out = run_dir(args.out, "balance")
    s["dims"] = problem.dims
    data = {
        "source": "sklearn.datasets.load_digits (bundled)",
        "classes": s["classes"],
        "n_train": len(problem.y_np),
        "features": "standardised pixels (64)",
        "linearly_separable_through_origin": True,
        "separability_check": "scipy.optimize.linprog (HiGHS): y_i<w, x_i> >= 1 feasible",
        "max_margin": {
            "margin": problem.svm.margin,
            "support_size": len(problem.svm.support),
            **problem.svm.solver,
        },
    }
    config = {"experiment": "balance", "settings": s, "data": data, "versions": versions()}
    write_json(os.path.join(out, "config.json"), config)
    results = {**config}
    tqdm.write(
        f"digits {s['classes']}: {len(problem.y_np)} points, separable through the "
        f"origin, SVM margin {problem.svm.margin:.4g}; dims {problem.dims}; run folder {out}"
    )
    for part in s["parts"]:

        def record(value, part=part):  # after every run: finished work survives interruption
            results[part] = value
            write_json(os.path.join(out, "results.json"), results)

        _PART_FUNCTIONS[part](problem, s, out, record)
    figures = plot(out)
    _summary(results, figures)
    return 0
