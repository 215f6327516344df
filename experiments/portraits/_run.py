"""The portrait run: each figure is a task of the sweep layer; its arrays are kept as its part,
then written as `<name>.npz`, summarised in results.json and drawn."""

from .. import _interrupt, _sweep
from .._files import versions, write_json, write_npz
from .._options import UsageError
from .._run_folder import open_recorded_run
from ._cli import SETTINGS, add_arguments, settings
from ._tasks import figure_task

PARTS = "part-<key>.json/.npz, key = experiments._sweep.task_key({'figure': name})"


def run(args) -> int:
    folder, s = open_recorded_run("portrait", args, settings, SETTINGS, add_arguments)
    with _sweep.from_args(args) as sweep:  # an unreachable --scheduler fails here
        return _run(folder, s, sweep)


def _run(folder, s, sweep) -> int:
    _interrupt.watch(folder)
    folder.start({"settings": s, "versions": versions()})
    names = s["figures"]
    finished = [0]

    def kept(result):
        finished[0] += not result.failed
        folder.kept = f"{finished[0]} of {len(names)} figures finished (part-<key>.json/.npz)"

    folder.kept = f"0 of {len(names)} figures finished"
    tasks = [{"figure": name} for name in names]
    results = sweep.run(
        figure_task, tasks, folder.path, shared=s, desc="portrait", check=_interrupt.check,
        on_result=kept,
    )  # fmt: skip
    _interrupt.check()
    for r in results:
        if r.failed:
            raise RuntimeError(
                f"figure {r.task['figure']} could not be finished ({r.error}; see "
                f"{folder.path}/logs/); the other parts are kept: {folder.resume_command()}"
            )
        if r.record.get("failed"):
            raise UsageError(r.record["reason"])
    summary = {"complete": True, "sweep": sweep.summary(results, parts=PARTS)}
    for name, r in zip(names, results):
        write_npz(folder.file(f"{name}.npz"), **r.arrays)
        summary[name] = r.record
    write_json(folder.file("results.json"), summary)
    from ._plots import plot  # matplotlib only when drawing

    for path in plot(folder.path, s["format"], names=names):
        print(path)
    return 0
