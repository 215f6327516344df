"""The balance run: settings, problem, every flow as a task of the sweep layer, results,
figures, summary.

Each flow is a task of `experiments._sweep` (in-process with `--workers 0`, else on Dask),
written as its own part (`part-<key>.json/.npz`) when it finishes. results.json is assembled
from the parts after every finished task (so it only names files that exist) and once more at
the end; `--resume DIR` skips the tasks whose parts exist and reruns the others, an
interrupted flow going on from its checkpoint.
"""

from tqdm.auto import tqdm

from .. import _interrupt, _sweep
from .._files import sha256, versions, write_json
from .._options import UsageError
from .._run_folder import (
    RunFolder,
    check_recorded,
    check_resumed_digest,
    recheck_settings,
    refuse_changed_options,
)
from ._cli import add_arguments, settings
from ._problem import problem_for
from ._report import _summary
from ._tasks import assemble, balance_task, balance_tasks


def run(args) -> int:
    s = settings(args)
    with _sweep.from_args(args) as sweep:  # an unreachable --scheduler fails here
        return _run(args, s, sweep)


def _data(problem, s) -> dict:
    return {
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


def _run(args, s, sweep) -> int:
    folder = RunFolder.choose("balance", args.out, args.resume)
    if folder.resumed:
        config = folder.stored_config()
        check_recorded(config, folder.path, ["settings"])
        s = config["settings"]
        check_recorded(s, folder.path, ["drift_solvers", "chatter_t1"], where="settings")
        solver = s.get("solver")  # recorded per problem; --solver is the logistic one's
        logistic = solver.get("logistic") if isinstance(solver, dict) else solver
        options = {**s, "solver": logistic or args.solver}
        recheck_settings(settings, args, options, folder.path)
        refuse_changed_options(settings, args, options, folder.path, add_arguments)
    problem = problem_for(s)
    s["dims"] = problem.dims
    data_sha256 = sha256(problem.X_np, problem.y_np)
    stored = config if folder.resumed else None
    check_resumed_digest(stored, folder.path, "data_sha256", data_sha256, "the data")
    _interrupt.watch(folder)
    if not folder.resumed:
        config = {
            "experiment": "balance",
            "settings": s,
            "data_sha256": data_sha256,
            "data": _data(problem, s),
            "versions": versions(),
        }
        folder.start(config)
    tqdm.write(
        f"digits {s['classes']}: {len(problem.y_np)} points, separable through the "
        f"origin, SVM margin {problem.svm.margin:.4g}; dims {problem.dims}; run folder "
        f"{folder.path}; tasks: {sweep.describe()}"
    )
    tasks, order = balance_tasks(s)
    done = []

    def on_result(result):  # results.json after every task: finished work is named on disk
        if result.failed:
            return
        done.append(result)
        folder.kept = f"{len(done)} of {len(tasks)} tasks finished"
        write_json(folder.file("results.json"), {**config, **assemble(s, done), "complete": False})

    folder.kept = f"0 of {len(tasks)} tasks finished"
    results = sweep.run(
        balance_task,
        tasks,
        folder.path,
        shared={"settings": s},
        desc="balance",
        check=_interrupt.check,
        on_result=on_result,
        order=order,
    )
    _interrupt.check()
    failed = [r for r in results if r.failed]
    for r in failed:  # bad settings found by a flow (budget, divergent η): one line, exit 2
        if r.raised(UsageError):
            raise UsageError(r.error_message)
    out = {**config, **assemble(s, results), "sweep": _info(sweep, results)}
    out["failed_tasks"] = [{"task": r.task, "reason": r.error} for r in failed]
    out["complete"] = not failed
    write_json(folder.file("results.json"), out)
    from ._plots import plot  # matplotlib only when drawing

    figures = plot(folder.path)
    _summary(out, figures)
    return 1 if failed else 0


def _info(sweep, results) -> dict:
    """Where the tasks ran and how long they took (results.json's "sweep")."""
    walls = [r.stats["wall_s"] for r in results if "wall_s" in r.stats]
    return {
        "backend": sweep.describe(),
        "tasks": len(results),
        "task_wall_s_total": sum(walls),
        "critical_path_s": max(walls, default=0.0),
        "parts": "part-<key>.json/.npz, key = experiments._sweep.task_key(task), task = "
        "{'part': ..., and its settings}",
    }
