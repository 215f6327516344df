"""The eos run: settings, data, the sweep of tasks (each kept as its part), results, figures."""

import sys
import time

from tqdm.auto import tqdm

from .. import _interrupt, _sweep
from .._files import sha256, versions, write_json
from .._options import UsageError
from .._run_folder import check_resumed_digest, open_run
from ._cli import DEFAULTS, settings
from ._problem import data_of, describe
from ._report import results, summary_line
from ._tasks import eos_task, eos_tasks

PARTS = (
    "part-<key>.json/.npz, key = experiments._sweep.task_key(task), task = "
    "{'part': 'eta', 'eta': η} or {'part': 'catapult'}"
)


def run(args) -> int:
    return _sweep.run_with_sweep(args, settings, _run)


def _run(args, s, sweep, start) -> int:
    folder, stored, s = open_run("eos", args.out, args.resume, args, s, DEFAULTS, settings=settings)
    try:
        X, labels = data_of(s)
    except ValueError as e:
        raise UsageError(str(e)) from None
    data_sha256 = sha256(X, labels)
    check_resumed_digest(stored, folder.path, "data_sha256", data_sha256, "the data")
    _interrupt.watch(folder)
    config = stored or {
        **s,
        **describe(s, len(labels)),
        "data_sha256": data_sha256,
        "dtype": "float64",
        "time": "flow time t = kη (GD step k)",
        "versions": versions(),
    }
    folder.start(config)
    config = folder.stored_config()
    tqdm.write(
        f"eos: {describe(s, len(labels))['dataset']}; η = "
        f"{', '.join(f'{e:g}' for e in s['etas'])} to t = {s['t1']:g}; run folder "
        f"{folder.path}; tasks: {sweep.describe()}",
        file=sys.stderr,
    )
    tasks = eos_tasks(s)
    finished = [0]

    def kept(result):
        finished[0] += not result.failed
        folder.kept = f"{finished[0]} of {len(tasks)} tasks finished (part-<key>.json/.npz)"

    folder.kept = f"0 of {len(tasks)} tasks finished"
    done = sweep.run(
        eos_task, tasks, folder.path, shared={"settings": s}, desc="eos",
        check=_interrupt.check, on_result=kept,
    )  # fmt: skip
    _interrupt.check()
    failed = [r for r in done if r.failed]
    for r in failed:  # bad input a task found (k > p, a loss that is not scalar): one line
        if r.error_type in ("builtins.ValueError", "builtins.TypeError"):
            raise UsageError(r.error_message)
    if failed:
        raise RuntimeError(
            f"{len(failed)} of {len(done)} tasks could not be finished (first: "
            f"{failed[0].task}: {failed[0].error}; see {folder.path}/logs/); the other parts "
            f"are kept: {folder.resume_command()}"
        )
    res = {
        "experiment": "eos",
        "config": config,
        "versions": versions(),
        **results(done),
        "wall_time_s": time.perf_counter() - start,
        "wall_time_note": "this invocation only (a resumed run does not count earlier ones)",
        "sweep": sweep.summary(done, parts=PARTS),
        "complete": True,
    }
    write_json(folder.file("results.json"), res)
    from ._plots import plot  # matplotlib only when drawing

    for path in plot(folder.path):
        tqdm.write(path, file=sys.stderr)
    print(summary_line(res, folder.path))
    return 0
