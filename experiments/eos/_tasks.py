"""The eos run as sweep tasks (`experiments._sweep`): one per step size η, one for the
catapult panel. A task function runs on a worker (or in-process) from the settings alone."""

import json

from ._catapult import catapult
from ._cli import solve_settings_of
from ._compare import compare
from ._optimizer import optimizer_run
from ._problem import problem_for


def eos_tasks(s: dict) -> list[dict]:
    """`{"part": "eta", "eta": η}` per η (largest first), then `{"part": "catapult"}`."""
    return [{"part": "eta", "eta": eta} for eta in s["etas"]] + [{"part": "catapult"}]


def eos_task(task: dict, shared: dict, ctx) -> tuple[dict, dict]:
    """Run one task of the eos sweep (`experiments._sweep` task function)."""
    s = shared["settings"]
    if task["part"] == "catapult":
        return catapult(s["uv_width"], s["uv_points"], s["uv_steps"], s["seed"])
    problem = _problem(s)
    record, arrays = compare(
        problem.loss,
        problem.net0,
        eta=task["eta"],
        t1=s["t1"],
        k=s["k"],
        every=s["sharpness_every"],
        settings=solve_settings_of(s),
        flows_compared=s["flows"],
        report=ctx.report,
    )
    if s.get("optimizer", "gd") != "gd":
        ctx.report(0.0, s["t1"], s["optimizer"])
        record["optimizer"], more = optimizer_run(
            problem.loss, problem.net0, s=s, eta=task["eta"], report=ctx.report
        )
        arrays.update(more)
    return record, arrays


_PROBLEMS = {}  # one problem (so one loss function, so compiled programs reused) per process


def _problem(s: dict):
    key = json.dumps(s, sort_keys=True)
    if key not in _PROBLEMS:
        _PROBLEMS.clear()
        _PROBLEMS[key] = problem_for(s)
    return _PROBLEMS[key]
