"""The options of `gradflows run balance` and the settings they resolve to."""

import argparse

from .._options import (
    UsageError,
    add_list,
    bounded,
    parse_classes,
    parse_list,
    positive,
    solve_settings,
)
from .._run_folder import add_run_folder_options

PARTS = ("logistic", "gd", "squared", "homogeneous")
ACTIVATIONS = ("relu", "leaky_relu", "abs")
SOLVERS = {"logistic": "tsit5", "squared": "auto", "homogeneous": "tsit5"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("data and model")
    a = g.add_argument
    add_list(g, "--parts", default=list(PARTS), help=f"parts to run, from {', '.join(PARTS)}")
    add_list(g, "--classes", default="3,8", help="two digits, linearly separable (checked)")
    a("--n-train", type=int, default=200, help="training points (both classes together)")
    add_list(g, "--hidden", default="16,8", help="hidden widths; depth = their number + 1 (>= 3)")
    a("--scale", type=float, default=1.0, help="Gaussian init: W_k ~ N(0, scale²/d_(k-1))")
    a("--seed", type=int, default=0, help="seed of the data split and the initialisation")
    g = parser.add_argument_group("flows (solver settings validated as flows.SolveSettings)")
    a = g.add_argument
    a("--t1", type=float, default=1e6, help="horizon of the logistic flows (flow time)")
    a("--n-save", type=int, default=120, help="log-spaced save times per flow")
    add_list(
        g,
        "--rtols",
        default="1e-8,1e-11",
        help="two tolerances of the logistic flow (atol = rtol/100); the first also records "
        "alignment, singular values and the margin, and serves the other parts",
    )
    add_list(g, "--etas", default="0.2,0.1,0.05,0.025", help="gradient-descent steps (flow time)")
    a("--gd-t1", type=float, default=1e4, help="horizon of the gradient-descent runs")
    a("--squared-t1", type=float, default=1e6, help="horizon of the squared-loss flow")
    a("--max-steps", type=int, default=20_000, help="step budget of each deep linear flow")
    a(
        "--homogeneous-t-short",
        type=float,
        default=0.5,
        help="short horizon of the two-layer flows (per-neuron invariants checked)",
    )
    a("--homogeneous-t1", type=float, default=50.0, help="long horizon of the two-layer flows")
    a(
        "--homogeneous-max-steps",
        type=int,
        default=20_000,
        help="step budget of each two-layer ReLU/leaky-ReLU/abs flow",
    )
    add_run_folder_options(parser, "balance", progress=False)


def settings(args) -> dict:
    """The settings of `args`, every one checked before any computation; the solver settings
    by `flows.SolveSettings`. Raises `UsageError` naming the flag."""
    parts = parse_list("--parts", args.parts, str)
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise UsageError(
            f"--parts: unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}"
        )
    hidden = parse_list("--hidden", args.hidden, int)
    if len(hidden) < 2 or min(hidden) < 1:
        raise UsageError(
            "--hidden needs at least two widths >= 1 (depth >= 3), got "
            + ",".join(map(str, hidden))
        )
    rtols = parse_list("--rtols", args.rtols, positive=True, count=2)
    etas = sorted(set(parse_list("--etas", args.etas, positive=True)))
    gd_t1 = positive("--gd-t1", args.gd_t1)
    if "gd" in parts and len(etas) < 2:
        raise UsageError("--etas needs at least two steps to fit the drift's exponent")
    if "gd" in parts and max(etas) * 10 > gd_t1:
        raise UsageError(f"--gd-t1 ({gd_t1:g}) must be at least 10 steps of the largest --etas")
    bounded("--n-save", args.n_save, 2, 100_000)
    bounded("--seed", args.seed, 0, 2**32 - 1)
    bounded("--n-train", args.n_train, 2, 10**6)
    for rtol in rtols:  # the library's rule, before any work
        for solver in SOLVERS.values():
            solve_settings(
                {"rtol": "--rtols", "atol": "--rtols"},
                solver=solver,
                rtol=rtol,
                atol=1e-2 * rtol,
                max_steps=args.max_steps,
            )
    solve_settings({"max_steps": "--homogeneous-max-steps"}, max_steps=args.homogeneous_max_steps)
    return {
        "parts": [p for p in PARTS if p in parts],
        "classes": parse_classes(args.classes),
        "n_train": args.n_train,
        "dims": None,  # filled in from the data
        "hidden": hidden,
        "scale": positive("--scale", args.scale),
        "seed": args.seed,
        "t1": positive("--t1", args.t1),
        "n_save": args.n_save,
        "rtols": rtols,
        "atol_over_rtol": 1e-2,
        "etas": etas,
        "gd_t1": gd_t1,
        "squared_t1": positive("--squared-t1", args.squared_t1),
        "max_steps": args.max_steps,
        "homogeneous_t_short": positive("--homogeneous-t-short", args.homogeneous_t_short),
        "homogeneous_t1": positive("--homogeneous-t1", args.homogeneous_t1),
        "homogeneous_max_steps": args.homogeneous_max_steps,
        "losses": {"logistic": "mean", "squared": "mean"},
        "solver": dict(SOLVERS),
    }
