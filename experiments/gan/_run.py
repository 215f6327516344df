"""The `gradflows run gan` run: each Dirac-GAN variant, the R1 locus and each mixture variant
is a task of the sweep layer, kept as its part as soon as it is computed; then written as
`<name>.npz`, summarised in results.json and drawn."""

from .. import _interrupt, _sweep
from .._files import versions, write_json, write_npz
from .._run_folder import open_recorded_run
from ._cli import SETTINGS, add_arguments, settings
from ._tasks import gan_task, name, tasks

PARTS = "part-<key>.json/.npz, key = experiments._sweep.task_key(task)"


def run(args) -> int:
    folder, s = open_recorded_run("gan", args, settings, SETTINGS, add_arguments)
    with _sweep.from_args(args) as sweep:  # an unreachable --scheduler fails here
        return _run(folder, s, sweep)


def _run(folder, s, sweep) -> int:
    _interrupt.watch(folder)
    folder.start({"settings": s, "versions": versions()})
    todo = tasks(s)
    finished = [0]

    def kept(result):
        finished[0] += not result.failed
        folder.kept = f"{finished[0]} of {len(todo)} tasks finished (part-<key>.json/.npz)"

    folder.kept = f"0 of {len(todo)} tasks finished"
    results = sweep.run(
        gan_task, todo, folder.path, shared=s, desc="gan", check=_interrupt.check,
        on_result=kept,
    )  # fmt: skip
    _interrupt.check()
    for r in results:
        if r.failed:
            raise RuntimeError(
                f"task {name(r.task)} could not be finished ({r.error}; see "
                f"{folder.path}/logs/); the other parts are kept: {folder.resume_command()}"
            )
    summary = {"complete": True, "sweep": sweep.summary(results, parts=PARTS)}
    for r in results:
        write_npz(folder.file(f"{name(r.task)}.npz"), **r.arrays)
        summary[name(r.task)] = r.record
    write_json(folder.file("results.json"), summary)
    from ._plots import plot  # matplotlib only when drawing

    for path in plot(folder.path, s["format"]):
        print(path)
    return 0
