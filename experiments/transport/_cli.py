"""The options of `gradflows run transport` and the settings they resolve to."""

import argparse
import math

from .._options import UsageError, add_list, bounded, flag, parse_list
from .._run_folder import add_run_folder_options
from .._sweep_options import add_sweep_options

DEFAULTS = {
    "n": 100,
    "eps": "1,0.1,0.01,0.001",
    "plan_eps": None,  # the --eps value nearest PLAN_EPS
    "tol": 1e-10,
    "max_iters": 500,
    "flow_n": 60,
    "flow_eps": 0.05,
    "t1": 3.0,
    "seed": 0,
    "format": "png",
}


EPS_MIN = 1e-6  # the smallest ε of --eps, --plan-eps and --flow-eps
# ε of the drawn plans when --plan-eps is not given: the grid's value nearest it (in log);
# a fixed default of 0.01 refused every --eps grid without 0.01 (`--eps 1,0.1` exited 2,
# naming a --plan-eps the user never gave)
PLAN_EPS = 0.01


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    g = p.add_argument_group("measurements")
    g.add_argument("--n", type=int, default=d["n"], help="points per cloud (100)")
    add_list(g, "--eps", default=d["eps"], help=f"the ε grid ({d['eps']})")
    g.add_argument(
        "--plan-eps",
        type=float,
        default=d["plan_eps"],
        help=f"ε of the drawn plans, one of --eps (default: the --eps value nearest {PLAN_EPS:g})",
    )
    g.add_argument("--tol", type=float, default=d["tol"], help="L1 marginal tolerance (1e-10)")
    g.add_argument(
        "--max-iters", type=int, default=d["max_iters"], help="iterations per ε stage (500)"
    )
    g.add_argument(
        "--flow-n", type=int, default=d["flow_n"], help="points of the particle flows (60)"
    )
    g.add_argument(
        "--flow-eps", type=float, default=d["flow_eps"], help="ε of the particle flows (0.05)"
    )
    g.add_argument("--t1", type=float, default=d["t1"], help="flow time of the particle flows (3)")
    g.add_argument("--seed", type=int, default=d["seed"], help="seed of the data (0)")
    g.add_argument(
        "--format", choices=("png", "svg", "pdf"), default=d["format"], help="figures (png)"
    )
    add_run_folder_options(p, "transport", progress=True)
    add_sweep_options(p)


def settings(args) -> dict:
    """The settings of `args`, every one checked before any computation. Raises `UsageError`
    naming the flag."""
    s = {key: getattr(args, key) for key in DEFAULTS}
    s["eps"] = sorted(set(parse_list("--eps", s["eps"], float, unique=True)), reverse=True)
    # below 1e-6 (the cost is ≤ 1 in the unit box) cost/ε reaches float64's limits: --eps
    # 1e-300 made every cell fail with "refusing to write a non-finite number (inf)"
    for e in s["eps"]:
        if not EPS_MIN <= e <= 100:
            raise UsageError(f"--eps: each ε must be in [{EPS_MIN:g}, 100], got {e:g}")
    if s["plan_eps"] is None:
        # a tie (0.1 and 0.001) goes to the larger ε, not to round-off in the logarithms
        s["plan_eps"] = min(s["eps"], key=lambda e: (round(abs(math.log10(e / PLAN_EPS)), 9), -e))
    if not EPS_MIN <= s["plan_eps"] <= 100:
        raise UsageError(f"--plan-eps must be in [{EPS_MIN:g}, 100], got {s['plan_eps']:g}")
    if s["plan_eps"] not in s["eps"]:
        raise UsageError(f"--plan-eps {s['plan_eps']:g} must be one of --eps {s['eps']}")
    for key, low, high in (
        ("n", 2, 5000),
        ("max_iters", 1, 10**7),
        ("flow_n", 1, 2000),
        ("seed", 0, 2**32 - 1),
    ):
        bounded(flag(key), s[key], low, high)
    for key, low, high in (("tol", 1e-15, 1e-2), ("flow_eps", EPS_MIN, 100.0), ("t1", 1e-6, 1e3)):
        if not low <= s[key] <= high:
            raise UsageError(f"{flag(key)} must be in [{low:g}, {high:g}], got {s[key]:g}")
    return s
