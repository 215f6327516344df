"""The transport run: settings, data, the sweep of tasks (each kept as its part), results,
figures."""

import resource
import sys
import time

import numpy as np
from tqdm.auto import tqdm

from .. import _interrupt, _sweep
from .._files import sha256, versions, write_json, write_npz
from .._run_folder import check_resumed_digest, open_run
from . import _report as report
from ._cli import DEFAULTS, settings
from ._data import clouds
from ._design import DIVERGENCES, FLOWS, PLANS, key, tasks
from ._tasks import measure

ARRAYS = "arrays.npz"
PARTS = (
    "part-<key>.json/.npz, key = experiments._sweep.task_key(task), task = {'measure': "
    "'cell', 'divergence', 'eps'} or {'measure': 'flow', 'divergence'}"
)


def run(args) -> int:
    return _sweep.run_with_sweep(args, settings, _run)


def _run(args, s, sweep, start) -> int:
    folder, stored, s = open_run(
        "transport", args.out, args.resume, args, s, DEFAULTS, settings=settings
    )
    x, y = clouds(s["n"], s["seed"])
    data_sha256 = sha256(x, y)
    check_resumed_digest(stored, folder.path, "data_sha256", data_sha256, "the data")
    _interrupt.watch(folder)
    config = stored or {
        **s,
        "divergences": list(DIVERGENCES),
        "plans": list(PLANS),
        "flows": list(FLOWS),
        "data": "sklearn make_moons(n, noise=0.05) against 3 Gaussians (std 0.2), scaled together "
        "into the unit box; uniform weights; c = ½|x − y|²",
        "data_sha256": data_sha256,
        "solver": "flows.transport.sinkhorn, tol = L1 marginal error, ε-scaling over the larger "
        "ε of the grid, max_iters per stage",
        "dtype": "float64",
        "versions": versions(),
    }
    folder.start(config)
    config = folder.stored_config()
    todo = tasks(s["eps"])
    finished = [0]

    def kept(result):
        finished[0] += not result.failed
        folder.kept = f"{finished[0]} of {len(todo)} tasks finished (part-<key>.json/.npz)"

    folder.kept = f"0 of {len(todo)} tasks finished"
    results = sweep.run(measure, todo, folder.path, shared={"settings": s, "x": x, "y": y},
                        desc="transport", check=_interrupt.check, on_result=kept)  # fmt: skip
    _interrupt.check()
    failed = [r for r in results if r.failed]
    if failed:
        raise RuntimeError(
            f"{len(failed)} of {len(results)} tasks could not be finished (first: "
            f"{failed[0].task}: {failed[0].error}; see {folder.path}/logs/); the other parts "
            f"are kept: {folder.resume_command()}"
        )
    arrays = {"x": x, "y": y, "eps": np.array(s["eps"])}
    for r in results:
        for name, value in r.arrays.items():
            arrays[key(name, r.task["divergence"])] = value
    write_npz(folder.file(ARRAYS), **arrays)
    res = {
        "experiment": "transport",
        "config": config,
        "versions": versions(),
        **report.results(results, s),
        "wall_time_s": time.perf_counter() - start,
        "wall_time_note": "this invocation only (a resumed run does not count earlier ones)",
        "sweep": sweep.summary(results, parts=PARTS),
        "peak_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "complete": True,
    }
    write_json(folder.file("results.json"), res)
    from ._plots import plot  # matplotlib only when drawing

    for path in plot(folder.path):
        tqdm.write(path, file=sys.stderr)
    print(report.summary_line(res, folder.path))
    return 0
