"""The balance run: settings, problem, each part in turn, figures, summary.

results.json is rewritten after every finished flow (so it only names files that exist);
`finished_parts` lists the parts that are complete. `--resume DIR` skips those and reruns the
others, the interrupted flow going on from its checkpoint.
"""

import json
import os

from tqdm.auto import tqdm

from .. import _interrupt
from .._files import versions, write_json
from .._run_folder import RunFolder
from ._cli import settings
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


def _previous_results(folder: RunFolder) -> dict:
    path = folder.file("results.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def run(args) -> int:
    folder = RunFolder.choose("balance", args.out, args.resume)
    if folder.resumed:
        config = folder.stored_config()
        s = config["settings"]
    else:
        s = settings(args)
    problem = _Problem(s)
    s["dims"] = problem.dims
    _interrupt.watch(folder)
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
    if not folder.resumed:
        config = {"experiment": "balance", "settings": s, "data": data, "versions": versions()}
        folder.start(config)
    results = {**config, "finished_parts": [], **_previous_results(folder), "complete": False}
    tqdm.write(
        f"digits {s['classes']}: {len(problem.y_np)} points, separable through the "
        f"origin, SVM margin {problem.svm.margin:.4g}; dims {problem.dims}; run folder "
        f"{folder.path}"
    )
    for part in s["parts"]:
        if part in results["finished_parts"]:
            continue

        def record(value, part=part):  # after every flow: finished work survives interruption
            results[part] = value
            write_json(folder.file("results.json"), results)
            folder.kept = _kept(results, s, partial=part)
            _interrupt.check()

        _PART_FUNCTIONS[part](problem, s, folder.path, record)
        results["finished_parts"].append(part)
        folder.kept = _kept(results, s)
    results["complete"] = True
    write_json(folder.file("results.json"), results)
    from ._plots import plot  # matplotlib only when drawing

    figures = plot(folder.path)
    _summary(results, figures)
    return 0


def _kept(results, s, partial=None) -> str:
    done = results["finished_parts"]
    text = f"{len(done)} of {len(s['parts'])} parts finished ({', '.join(done) or 'none'})"
    if partial is not None and partial not in done:
        text += f" and the finished flows of part {partial}"
    return text
