"""The ntk run: settings, inputs, the sweep of tasks (each kept as its part), results, figures."""

import resource
import sys
import time

import numpy as np
from tqdm.auto import tqdm

from .. import _interrupt, _sweep
from .._files import sha256, versions, write_json, write_npz
from .._run_folder import check_resumed_digest, open_run
from . import _compute as compute
from . import _report as report
from ._cli import DEFAULTS, settings
from ._design import ACTIVATIONS, DATASETS, SCHEMES, depth_grid, key, tasks
from ._tasks import measure

ARRAYS = "arrays.npz"
PARTS = (
    "part-<key>.json/.npz, key = experiments._sweep.task_key(task), task = {'measure': "
    "'errors', 'data', 'activation', 'scheme', 'width'} or {'measure': 'lambda', 'data', "
    "'activation'}"
)


def run(args) -> int:
    return _sweep.run_with_sweep(args, settings, _run)


def _run(args, s, sweep, start) -> int:
    folder, stored, s = open_run("ntk", args.out, args.resume, args, s, DEFAULTS, settings=settings)
    X = {data: compute.inputs(data, s["n"], s["seed"]) for data in DATASETS}
    inputs_sha256 = sha256(*X.values())
    check_resumed_digest(stored, folder.path, "inputs_sha256", inputs_sha256, "the inputs")
    _interrupt.watch(folder)
    activations = {**ACTIVATIONS, "mixed": tuple(s["mixed"])}
    config = stored or {
        **s,
        "activations": {k: list(v) for k, v in activations.items()},
        "datasets": list(DATASETS),
        "schemes": list(SCHEMES),
        "parameterization": "ntk, weight_std² = 1/(a² + b²) (edge of chaos), no bias",
        "input_norm": "‖x‖² = d = 64",
        "inputs_sha256": inputs_sha256,
        "error": "‖K_m − K∞‖₂ / ‖K∞‖₂ (operator norm), K_m = flows.ntk.ntk_gram(method='layers')",
        "dtype": "float64",
        "versions": versions(),
    }
    folder.start(config)
    config = folder.stored_config()  # as written: with its "experiment"
    results = _measure(sweep, folder, s, X, activations)
    _interrupt.check()
    failed = [r for r in results if r.failed]
    if failed:
        raise RuntimeError(
            f"{len(failed)} of {len(results)} tasks could not be finished (first: "
            f"{failed[0].task}: {failed[0].error}; see {folder.path}/logs/); the other parts "
            f"are kept: {folder.resume_command()}"
        )
    arrays = _assemble(results, s, activations)
    write_npz(folder.file(ARRAYS), **arrays)
    res = {
        "experiment": "ntk",
        "config": config,
        "versions": versions(),
        **report.results(arrays, DATASETS, activations, SCHEMES),
        "wall_time_s": time.perf_counter() - start,
        "wall_time_note": "this invocation only (a resumed run does not count earlier ones)",
        "sweep": sweep.summary(results, parts=PARTS),
        "peak_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_memory_note": "of the client process; each task's peak is in its part's stats",
        "complete": True,
    }
    write_json(folder.file("results.json"), res)
    from ._plots import plot  # matplotlib only when drawing: `gradflows list` stays fast

    for path in plot(folder.path):
        tqdm.write(path, file=sys.stderr)
    print(report.summary_line(res, folder.path))
    return 0


def _measure(sweep, folder, s, X, activations) -> list:
    """Every task whose part is not yet in the folder, on the sweep's backend."""
    todo = tasks(activations, s["widths"], s["depth"])
    finished = [0]

    def kept(result):
        finished[0] += not result.failed
        folder.kept = f"{finished[0]} of {len(todo)} tasks finished (part-<key>.json/.npz)"

    folder.kept = f"0 of {len(todo)} tasks finished"
    shared = {
        "settings": s,
        "X": X,
        "activations": activations,
        "depths": depth_grid(s["cond_depth"]),
    }
    return sweep.run(
        measure, todo, folder.path, shared=shared, desc="ntk", check=_interrupt.check,
        on_result=kept,
    )  # fmt: skip


def _assemble(results, s, activations) -> dict:
    """arrays.npz from the parts: `errors__<data>__<act>__<scheme>` (W, S), one row per base
    width, and `lambda__<data>__<act>` (2, D)."""
    fields = ("measure", "data", "activation", "scheme", "width")
    found = {tuple(r.task.get(f) for f in fields): r.arrays for r in results}
    arrays = {
        "widths": np.array(s["widths"], dtype=np.int64),
        "depths": np.array(depth_grid(s["cond_depth"]), dtype=np.int64),
    }
    for data in DATASETS:
        for act in activations:
            for scheme in SCHEMES:
                rows = [found["errors", data, act, scheme, m]["errors"] for m in s["widths"]]
                arrays[key("errors", data, act, scheme)] = np.stack(rows)
            arrays[key("lambda", data, act)] = found["lambda", data, act, None, None]["lambda"]
    return arrays
