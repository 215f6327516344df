"""The ntk run: settings, inputs, every unit of work (kept as it finishes), results, figures."""

import os
import resource
import sys
import time

import jax
import numpy as np
from tqdm.auto import tqdm

from .. import _interrupt
from .._files import sha256, versions, write_json, write_npz
from .._options import UsageError
from .._run_folder import RunFolder, resumed_settings
from . import _compute as compute
from . import _report as report
from ._cli import DEFAULTS, settings
from ._design import ACTIVATIONS, DATASETS, SCHEMES, depth_grid, key, units

ARRAYS = "arrays.npz"


def run(args) -> int:
    start = time.perf_counter()
    s = settings(args)
    folder = RunFolder.choose("ntk", args.out, args.resume)
    stored = folder.stored_config() if folder.resumed else None
    if stored is not None:
        s = resumed_settings(stored, folder.path, args, s, DEFAULTS)
    X = {data: compute.inputs(data, s["n"], s["seed"]) for data in DATASETS}
    inputs_sha256 = sha256(*X.values())
    if stored is not None and stored.get("inputs_sha256", inputs_sha256) != inputs_sha256:
        raise UsageError(
            f"--resume {folder.path!r}: the inputs differ from the run's (SHA-256 of the "
            "digits and Gaussian inputs); start a new run"
        )
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
        "error": "‖K_m − K∞‖₂ / ‖K∞‖₂ (operator norm), K_m = flows.ntk_gram(method='layers')",
        "dtype": "float64",
        "versions": versions(),
    }
    folder.start(config)
    config = folder.stored_config()  # as written: with its "experiment"
    arrays = _measure(folder, s, X, activations, progress=not args.no_progress)
    _interrupt.check()
    res = {
        "experiment": "ntk",
        "config": config,
        "versions": versions(),
        **report.results(arrays, DATASETS, activations, SCHEMES),
        "wall_time_s": time.perf_counter() - start,
        "wall_time_note": "this invocation only (a resumed run does not count earlier ones)",
        "peak_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "complete": True,
    }
    write_json(folder.file("results.json"), res)
    from ._plots import plot  # matplotlib only when drawing: `gradflows list` stays fast

    for path in plot(folder.path):
        tqdm.write(path, file=sys.stderr)
    print(report.summary_line(res, folder.path))
    return 0


def _kept(folder, arrays, todo) -> dict:
    """The unit arrays already in the folder's arrays.npz (a resumed run)."""
    path = folder.file(ARRAYS)
    if not os.path.exists(path):
        return arrays
    with np.load(path, allow_pickle=False) as saved:
        for name in saved.files:
            if name in todo:
                arrays[name] = saved[name]
    return arrays


def _measure(folder, s, X, activations, progress) -> dict:
    """Every unit not yet in arrays.npz, in turn; arrays.npz is rewritten after each."""
    widths = np.array(s["widths"], dtype=np.int64)
    depths = np.array(depth_grid(s["cond_depth"]), dtype=np.int64)
    todo = units(activations)
    names = [key(*unit) for unit in todo]
    arrays = _kept(folder, {"widths": widths, "depths": depths}, set(names))

    def kept():
        done = sum(name in arrays for name in names)
        folder.kept = f"{done} of {len(names)} units finished (in {ARRAYS})"

    kept()
    per_unit = len(widths) * s["seeds"]
    missing = sum(unit[0] == "errors" and key(*unit) not in arrays for unit in todo)
    bar = tqdm(total=missing * per_unit, desc="ntk", unit="net", disable=not progress)

    def step():  # after every network: a safe point
        bar.update()
        _interrupt.check()

    base = jax.random.PRNGKey(s["seed"])
    try:
        for unit, name in zip(todo, names):
            if name in arrays:
                continue
            _interrupt.check()
            data, act = unit[1], unit[2]
            a, b = activations[act]
            if unit[0] == "errors":
                d, i, j = DATASETS.index(data), list(activations).index(act), SCHEMES.index(unit[3])
                arrays[name] = compute.relative_errors(
                    X[data], a, b, s["depth"], unit[3], s["widths"], s["seeds"],
                    jax.random.fold_in(base, 100 * d + 10 * i + j), step,
                )  # fmt: skip
            else:
                arrays[name] = compute.condition_numbers(X[data], a, b, depths.tolist())
            write_npz(folder.file(ARRAYS), **arrays)  # finished work is kept
            kept()
    finally:
        bar.close()
    return arrays
