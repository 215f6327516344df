"""The options of `gradflows run portrait` and their checks."""

import argparse
import math

from .._options import (
    UsageError,
    add_list,
    add_solver_options,
    bounded,
    flag,
    note_defaults,
    parse_list,
    positive,
    solve_settings,
)
from .._run_folder import add_run_folder_options
from .._sweep_options import add_sweep_options

FIGURES = ("seed", "flows", "conservation")
FORMATS = ("png", "svg", "pdf")
ACTIVATIONS = ("tanh", "gelu", "softplus")
# Starting points of the conservation figure; the first is also gradient descent's.
CONSERVATION_STARTS = ((2.2, -0.5), (1.6, -1.3), (-1.2, 1.7), (-0.3, 0.4), (0.9, -2.2), (-2.1, 0.9))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("figures")
    g.add_argument("--format", choices=FORMATS, default="png", help="figure file format")
    add_list(
        g, "--figures", default=list(FIGURES), help=f"which figures, from {', '.join(FIGURES)}"
    )
    g.add_argument(
        "--activation", choices=ACTIVATIONS, default="tanh", help="σ in f(w) = w2·σ(w1·x)"
    )
    g.add_argument("--x", type=float, default=1.0, help="the input x")
    add_list(
        g, "--w0", default="0.5,1", metavar="W", help="initialisation and linearisation point "
        "w1,w2",
    )  # fmt: skip
    add_list(g, "--scales", default="0.1,10", help="α of the seed figure")
    add_list(g, "--alphas", default="0.1,1,10", help="α of the flow figure")
    g.add_argument(
        "--radius", type=float, default=2.0, help="window half-width ρ; the window is w0 ± ρ/α"
    )
    g.add_argument("--target", type=float, default=1.0, help="scalar target y*")
    g.add_argument("--t1", type=float, default=10.0, help="flow time of each trajectory")
    g.add_argument("--eta", type=float, default=0.35, help="gradient-descent step η")
    g.add_argument("--gd-steps", type=int, default=12, help="gradient-descent steps")
    g.add_argument(
        "--grid", type=int, default=101, help="grid points per axis of surfaces and level sets"
    )
    g.add_argument(
        "--field-grid", type=int, default=41, help="grid points per axis of the streamlines"
    )
    add_solver_options(parser, solver=None, max_steps=False)
    add_run_folder_options(parser, "portrait", progress=True)
    add_sweep_options(parser)
    note_defaults(parser)


# the entries of settings(args), which a resumed run's config.json must hold
SETTINGS = (
    "figures", "format", "activation", "x", "w0", "scales", "alphas", "radius", "target", "t1",
    "eta", "gd_steps", "grid", "field_grid", "rtol", "atol", "solver",
)  # fmt: skip


def settings(args) -> dict:
    """The settings of `args`, every one checked before any computation (tolerances by
    `flows.SolveSettings`). Raises `UsageError` naming the flag."""
    figures = parse_list("--figures", args.figures, str, unique=True)
    unknown = sorted(set(figures) - set(FIGURES))
    if unknown:
        raise UsageError(
            f"--figures: unknown {', '.join(unknown)}; choose from {', '.join(FIGURES)}"
        )
    for name in ("radius", "t1", "eta", "x"):
        positive(flag(name), getattr(args, name))
    if not math.isfinite(args.target):
        raise UsageError(f"--target must be a finite number, got {args.target}")
    bounded("--grid", args.grid, 5, 2000)
    bounded("--field-grid", args.field_grid, 5, 2000)
    bounded("--gd-steps", args.gd_steps, 1, 10_000)
    solve = solve_settings(solver="tsit5", rtol=args.rtol, atol=args.atol)
    w0 = parse_list("--w0", args.w0, count=2)
    scales = parse_list("--scales", args.scales, positive=True, unique=True)
    alphas = parse_list("--alphas", args.alphas, positive=True, unique=True)
    _check_sizes(args, w0, scales, alphas)
    return {
        "figures": [f for f in FIGURES if f in figures],
        "format": args.format,
        "activation": args.activation,
        "x": args.x,
        "w0": w0,
        "scales": scales,
        "alphas": alphas,
        "radius": args.radius,
        "target": args.target,
        "t1": args.t1,
        "eta": args.eta,
        "gd_steps": args.gd_steps,
        "grid": args.grid,
        "field_grid": args.field_grid,
        "rtol": solve.rtol,
        "atol": solve.atol,
        "solver": "tsit5",
    }


# The toy's numbers stay where its pictures mean something and float64 can draw them: at
# --x 1e300 or --target 1e300 the gradient overflowed (reported as a failure of --eta), at
# --w0 1e300 the window w0 ± ρ/α vanished in round-off, at --alphas 1e300 the level sets
# became NaN, and at --t1 1e300 every flow ran out of its 200000 Tsit5 steps (~2 per unit of
# flow time here) after minutes; each was refused only after all three figures were tried.
MAX_SIZE = 1e3  # |x|, |y*|, |w0|, ρ
ALPHA_RANGE = (1e-4, 1e4)  # --scales, --alphas
MAX_T1 = 1e4
MIN_WINDOW = 1e-6  # the window's half-width ρ/α, relative to max(1, |w0|)


def _check_sizes(args, w0, scales, alphas) -> None:
    """Refuse, naming the flag, numbers outside the ranges above."""
    for name, value in (("--x", args.x), ("--target", args.target), ("--radius", args.radius)):
        if abs(value) > MAX_SIZE:
            raise UsageError(f"{name} must be at most {MAX_SIZE:g} in size, got {value:g}")
    if max(abs(w) for w in w0) > MAX_SIZE:
        raise UsageError(
            f"--w0 must be at most {MAX_SIZE:g} in size, got {','.join(f'{w:g}' for w in w0)}"
        )
    low, high = ALPHA_RANGE
    for name, values in (("--scales", scales), ("--alphas", alphas)):
        for value in values:
            if not low <= value <= high:
                raise UsageError(f"{name} must lie in [{low:g}, {high:g}], got {value:g}")
    if args.t1 > MAX_T1:
        raise UsageError(f"--t1 must be at most {MAX_T1:g} (flow time), got {args.t1:g}")
    width = args.radius / max(scales + alphas)
    if width < MIN_WINDOW * max(1.0, *map(abs, w0)):
        raise UsageError(
            f"--radius {args.radius:g}: the window w0 ± ρ/α is {width:.3g} wide at α = "
            f"{max(scales + alphas):g}, under {MIN_WINDOW:g}·max(1, |w0|): raise --radius"
        )
