"""The options of `gradflows run balance` and the settings they resolve to."""

import argparse

from .._options import (
    UsageError,
    add_list,
    bounded,
    note_defaults,
    parse_classes,
    parse_list,
    positive,
    solve_settings,
)
from .._run_folder import add_run_folder_options
from .._sizes import MAX_PARAMETERS, largest_width
from .._sweep_options import add_sweep_options

PARTS = ("logistic", "conservation", "gd", "squared", "homogeneous")
ACTIVATIONS = ("relu", "leaky_relu", "abs")
SOLVERS = {"logistic": "tsit5", "squared": "auto", "homogeneous": "tsit5"}
DRIFT_SOLVERS = ("tsit5", "kvaerno5", "implicit_midpoint", "gauss4")
# Gradient-descent steps of one --etas (--gd-t1/η): 1.2e6 steps take ~8 s on the default
# problem, so 1e8 is ~10 minutes; --gd-t1 1e300 was a 301-digit step count and an int64
# overflow in every task.
MAX_GD_STEPS = 100_000_000
DIGIT_PIXELS = 64  # the input size: scikit-learn's 8×8 digits


def n_parameters(hidden: list[int]) -> int:
    """Weights of the deep linear network 64 → hidden → 1 (no biases)."""
    dims = [DIGIT_PIXELS, *hidden, 1]
    return sum(a * b for a, b in zip(dims[:-1], dims[1:]))


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
    a(
        "--solver",
        default=SOLVERS["logistic"],
        help="solver of the logistic flows at --rtols: any name flows.gradient_flow accepts, "
        "the Gauss–Legendre ones (implicit_midpoint, gauss4, gauss6) included "
        "(default: %(default)s)",
    )
    add_list(
        g,
        "--rtols",
        default="1e-8,1e-11",
        help="two tolerances of the logistic flow (atol = rtol/100); the first also records "
        "alignment, singular values and the margin, and serves the other parts",
    )
    add_list(
        g,
        "--drift-solvers",
        default=",".join(DRIFT_SOLVERS),
        help="part conservation: the solvers whose balancedness drift is compared on the "
        "logistic flow to --t1 (each at every --drift-rtols)",
    )
    add_list(
        g,
        "--drift-rtols",
        default="1e-6,1e-3",
        help="part conservation: tolerances (atol = rtol/100)",
    )
    add_list(g, "--etas", default="0.2,0.1,0.05,0.025", help="gradient-descent steps (flow time)")
    a("--gd-t1", type=float, default=1e4, help="horizon of the gradient-descent runs")
    a("--squared-t1", type=float, default=1e6, help="horizon of the squared-loss flow")
    a("--max-steps", type=int, default=20_000, help="step budget of each deep linear flow")
    add_list(
        g,
        "--activations",
        default=",".join(ACTIVATIONS),
        help=f"part homogeneous: activations of the two-layer nets, from {', '.join(ACTIVATIONS)}",
    )
    a(
        "--homogeneous-t1",
        type=float,
        default=1e4,
        help="horizon of the exact (Filippov) flows of the two-layer ReLU/leaky-ReLU/abs nets",
    )
    a(
        "--homogeneous-max-steps",
        type=int,
        default=100_000,
        help="budget of solver steps plus events of each Filippov flow",
    )
    a(
        "--chatter-t1",
        type=float,
        default=50.0,
        help="horizon of the baseline: the same nets with Tsit5 alone, which chatters at kinks",
    )
    a(
        "--chatter-max-steps",
        type=int,
        default=20_000,
        help="step budget of each Tsit5 baseline flow",
    )
    add_run_folder_options(parser, "balance", progress=True)
    add_sweep_options(parser)
    note_defaults(parser)


def _solvers(flag_name: str, names: list[str]) -> list[str]:
    for name in names:  # the library's rule: an unknown name lists the valid ones
        solve_settings({"solver": flag_name}, solver=name)
    if len(set(names)) < len(names):
        raise UsageError(f"{flag_name}: each solver once, got {','.join(names)}")
    return names


def settings(args) -> dict:
    """The settings of `args`, every one checked before any computation; the solver settings
    by `flows.SolveSettings`. Raises `UsageError` naming the flag."""
    parts = parse_list("--parts", args.parts, str, unique=True)
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise UsageError(
            f"--parts: unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}"
        )
    activations = parse_list("--activations", args.activations, str)
    if set(activations) - set(ACTIVATIONS) or len(set(activations)) < len(activations):
        raise UsageError(
            f"--activations: each of {', '.join(ACTIVATIONS)} at most once, got "
            + ",".join(activations)
        )
    hidden = parse_list("--hidden", args.hidden, int)
    if len(hidden) < 2 or min(hidden) < 1:
        raise UsageError(
            "--hidden needs at least two widths >= 1 (depth >= 3), got "
            + ",".join(map(str, hidden))
        )
    p = n_parameters(hidden)
    if p > MAX_PARAMETERS:  # 100000,100000 aborted inside XLA, allocating the first layer
        k = len(hidden)
        raise UsageError(
            f"--hidden {','.join(map(str, hidden))}: the network would have {p:.3g} parameters, "
            f"over the limit of {MAX_PARAMETERS:.0e}: widths at most "
            f"{largest_width(lambda w: n_parameters([w] * k))} each at {k} hidden layers"
        )
    rtols = parse_list("--rtols", args.rtols, positive=True, count=2, unique=True)
    drift_rtols = sorted(parse_list("--drift-rtols", args.drift_rtols, positive=True, unique=True))
    etas = sorted(parse_list("--etas", args.etas, positive=True, unique=True))
    gd_t1 = positive("--gd-t1", args.gd_t1)
    if "gd" in parts and len(etas) < 2:
        raise UsageError("--etas needs at least two steps to fit the drift's exponent")
    if "gd" in parts and max(etas) * 10 > gd_t1:
        raise UsageError(f"--gd-t1 ({gd_t1:g}) must be at least 10 steps of the largest --etas")
    if "gd" in parts and gd_t1 / min(etas) > MAX_GD_STEPS:  # each step is one gradient
        raise UsageError(
            f"--gd-t1 {gd_t1:g} is {gd_t1 / min(etas):.3g} steps of the smallest --etas "
            f"({min(etas):g}), over {MAX_GD_STEPS:.0e}"
        )
    bounded("--n-save", args.n_save, 2, 100_000)
    bounded("--seed", args.seed, 0, 2**32 - 1)
    bounded("--n-train", args.n_train, 2, 10**6)
    solvers = {**SOLVERS, "logistic": args.solver}
    _solvers("--solver", [args.solver])
    drift_solvers = _solvers(
        "--drift-solvers", parse_list("--drift-solvers", args.drift_solvers, str)
    )
    for rtol in rtols:  # the library's rule, before any work
        for solver in solvers.values():
            solve_settings(
                {"rtol": "--rtols", "atol": "--rtols"},
                solver=solver,
                rtol=rtol,
                atol=1e-2 * rtol,
                max_steps=args.max_steps,
            )
    for rtol in drift_rtols:
        flags = {"rtol": "--drift-rtols", "atol": "--drift-rtols"}
        solve_settings(flags, rtol=rtol, atol=1e-2 * rtol)
    solve_settings({"max_steps": "--homogeneous-max-steps"}, max_steps=args.homogeneous_max_steps)
    solve_settings({"max_steps": "--chatter-max-steps"}, max_steps=args.chatter_max_steps)
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
        "drift_solvers": drift_solvers,
        "drift_rtols": drift_rtols,
        "etas": etas,
        "gd_t1": gd_t1,
        "squared_t1": positive("--squared-t1", args.squared_t1),
        "max_steps": args.max_steps,
        "activations": [a for a in ACTIVATIONS if a in activations],
        "homogeneous_t1": positive("--homogeneous-t1", args.homogeneous_t1),
        "homogeneous_max_steps": args.homogeneous_max_steps,
        "chatter_t1": positive("--chatter-t1", args.chatter_t1),
        "chatter_max_steps": args.chatter_max_steps,
        "losses": {"logistic": "mean", "squared": "mean"},
        "solver": solvers,
    }
