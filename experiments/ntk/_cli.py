"""Options, checks and the run of `gradflows run ntk`."""

import argparse
import datetime
import math
import os
import resource
import sys
import time

import jax
import numpy as np
from tqdm.auto import tqdm

from .._common import UsageError, run_dir, versions, write_json, write_npz
from . import _compute as compute
from . import _report as report
from ._plots import plot

DESCRIPTION = (
    "NTK of a·s + b·|s| MLPs at the edge of chaos against its infinite-width limit: "
    "error vs width and cond(K∞) vs depth (Terjék & González-Sánchez 2025)"
)
DEFAULT_WIDTHS = [16, 32, 64, 128, 256]
MAX_PARAMETERS = 250_000_000  # 2 GB of float64 weights: peak memory stays under 4 GB


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, help="new run folder (default runs/ntk-<time>)")
    parser.add_argument("--widths", type=int, nargs="+", default=DEFAULT_WIDTHS,
                        help="base widths m, a log grid (default 16 32 64 128 256)")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=10, help="networks per width (default 10)")
    parser.add_argument("--depth", type=int, default=3, help="hidden layers L (default 3)")
    parser.add_argument("--n", type=int, default=32, help="inputs per data set (default 32)")
    parser.add_argument("--cond-depth", type=int, default=256,
                        help="largest depth of the cond(K∞) curve (default 256)")  # fmt: skip
    parser.add_argument("--mixed", type=float, nargs=2, default=[0.6, 0.4], metavar=("A", "B"),
                        help="(a, b) of the mixed activation (default 0.6 0.4)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of data and networks")
    parser.add_argument("--format", choices=("png", "svg", "pdf"), default="png")


def _check(args) -> None:
    widths = args.widths
    if any(m < 1 or m > 100_000 for m in widths):
        raise UsageError(f"--widths must be integers in [1, 100000], got {widths}")
    if len(set(widths)) < 2:
        raise UsageError(
            f"--widths needs at least two different widths to fit a slope, got {widths}"
        )
    if not 2 <= args.seeds <= 10_000:
        raise UsageError(f"--seeds must lie in [2, 10000], got {args.seeds}")
    if not 1 <= args.depth <= 50:
        raise UsageError(f"--depth must lie in [1, 50], got {args.depth}")
    if not 2 <= args.n <= 300:
        raise UsageError(f"--n must lie in [2, 300] (digits 3 and 8 have 357 images), got {args.n}")
    if not 1 <= args.cond_depth <= 10_000:
        raise UsageError(f"--cond-depth must lie in [1, 10000], got {args.cond_depth}")
    a, b = args.mixed
    if not (math.isfinite(a) and math.isfinite(b)) or (a == 0 and b == 0):
        raise UsageError(f"--mixed must be two finite numbers, not both 0, got {args.mixed}")
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    p = compute.parameters(compute.hidden_widths("quadratic", max(widths), args.depth))
    if p > MAX_PARAMETERS:
        raise UsageError(
            f"--widths: the largest network (m = {max(widths)}, m_k = k²·m, depth "
            f"{args.depth}) has {p:.3g} parameters, over {MAX_PARAMETERS:.3g} (4 GB peak)"
        )


def _folder(out: str | None) -> str:
    if out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = os.path.join("runs", f"ntk-{stamp}")
    if os.path.exists(out):
        raise UsageError(f"--out {out!r} already exists: give a new folder")
    return run_dir(out, "ntk")


def run(args) -> int:
    _check(args)
    start = time.perf_counter()
    activations = {**compute.ACTIVATIONS, "mixed": tuple(float(v) for v in args.mixed)}
    widths = np.array(sorted(set(args.widths)), dtype=np.int64)
    depths = np.array(compute.depth_grid(args.cond_depth), dtype=np.int64)
    folder = _folder(args.out)
    config = {
        **{k: v for k, v in vars(args).items() if k != "out"},
        "widths": widths.tolist(),
        "activations": {k: list(v) for k, v in activations.items()},
        "datasets": list(compute.DATASETS),
        "schemes": list(compute.SCHEMES),
        "parameterization": "ntk, weight_std² = 1/(a² + b²) (edge of chaos), no bias",
        "input_norm": "‖x‖² = d = 64",
        "error": "‖K_m − K∞‖₂ / ‖K∞‖₂ (operator norm), K_m = flows.ntk_gram(method='layers')",
        "versions": versions(),
    }
    write_json(os.path.join(folder, "config.json"), config)
    arrays = {"widths": widths, "depths": depths}
    total = len(compute.DATASETS) * len(activations) * len(compute.SCHEMES) * len(widths)
    bar = tqdm(total=total * args.seeds, desc="ntk", unit="net", file=sys.stderr)
    base = jax.random.PRNGKey(args.seed)
    for d, data in enumerate(compute.DATASETS):
        X = compute.inputs(data, args.n, args.seed)
        for i, (act, (a, b)) in enumerate(activations.items()):
            for j, scheme in enumerate(compute.SCHEMES):
                key = jax.random.fold_in(base, 100 * d + 10 * i + j)
                arrays[report.key("errors", data, act, scheme)] = compute.relative_errors(
                    X, a, b, args.depth, scheme, widths.tolist(), args.seeds, key, bar
                )
            arrays[report.key("lambda", data, act)] = np.stack(
                compute.condition_numbers(X, a, b, depths.tolist())
            )
            write_npz(os.path.join(folder, "arrays.npz"), **arrays)  # finished work is kept
    bar.close()
    res = report.results(arrays, compute.DATASETS, activations, compute.SCHEMES)
    res["wall_time_s"] = time.perf_counter() - start
    res["peak_memory_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    write_json(os.path.join(folder, "results.json"), res)
    for path in plot(folder, args.format):
        tqdm.write(path, file=sys.stderr)
    print(report.summary_line(res, folder))
    return 0
