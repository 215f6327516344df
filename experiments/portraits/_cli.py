"""The options of `gradflows run portrait` and their checks."""

import argparse
import math

from .._common import UsageError

FIGURES = ("seed", "flows", "conservation")
FORMATS = ("png", "svg", "pdf")
ACTIVATIONS = ("tanh", "gelu", "softplus")
# Starting points of the conservation figure; the first is also gradient descent's.
CONSERVATION_STARTS = ((2.2, -0.5), (1.6, -1.3), (-1.2, 1.7), (-0.3, 0.4), (0.9, -2.2), (-2.1, 0.9))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, help="run folder (default runs/portrait-<time>)")
    parser.add_argument("--format", choices=FORMATS, default="png", help="figure file format")
    parser.add_argument(
        "--figures", nargs="+", choices=FIGURES, default=list(FIGURES), help="which figures"
    )
    parser.add_argument(
        "--activation", choices=ACTIVATIONS, default="tanh", help="σ in f(w) = w2·σ(w1·x)"
    )
    parser.add_argument("--x", type=float, default=1.0, help="the input x (default 1)")
    parser.add_argument(
        "--w0", type=float, nargs=2, default=[0.5, 1.0], metavar=("W1", "W2"),
        help="initialisation and linearisation point (default 0.5 1)",
    )  # fmt: skip
    parser.add_argument(
        "--scales", type=float, nargs="+", default=[0.1, 10.0], help="α of the seed figure"
    )
    parser.add_argument(
        "--alphas", type=float, nargs="+", default=[0.1, 1.0, 10.0], help="α of the flow figure"
    )
    parser.add_argument(
        "--radius", type=float, default=2.0, help="window half-width ρ; the window is w0 ± ρ/α"
    )
    parser.add_argument("--target", type=float, default=1.0, help="scalar target y*")
    parser.add_argument("--t1", type=float, default=10.0, help="flow time of each trajectory")
    parser.add_argument("--eta", type=float, default=0.35, help="gradient-descent step η")
    parser.add_argument("--gd-steps", type=int, default=12, help="gradient-descent steps")
    parser.add_argument(
        "--grid", type=int, default=101, help="grid points per axis of surfaces and level sets"
    )
    parser.add_argument(
        "--field-grid", type=int, default=41, help="grid points per axis of the streamlines"
    )
    parser.add_argument("--rtol", type=float, default=1e-10, help="solver relative tolerance")
    parser.add_argument("--atol", type=float, default=1e-12, help="solver absolute tolerance")


def _check(args) -> None:
    for name in ("radius", "t1", "eta", "rtol", "atol", "x"):
        value = getattr(args, name)
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"--{name} must be a finite number > 0, got {value}")
    for name in ("scales", "alphas"):
        values = getattr(args, name)
        if not all(math.isfinite(v) and v > 0 for v in values):
            raise UsageError(f"--{name} must be finite numbers > 0, got {values}")
    if not all(math.isfinite(v) for v in args.w0):
        raise UsageError(f"--w0 must be two finite numbers, got {args.w0}")
    if not math.isfinite(args.target):
        raise UsageError(f"--target must be a finite number, got {args.target}")
    for name in ("grid", "field_grid"):
        if not 5 <= getattr(args, name) <= 2000:
            raise UsageError(
                f"--{name.replace('_', '-')} must lie in [5, 2000], got {getattr(args, name)}"
            )
    if not 1 <= args.gd_steps <= 10_000:
        raise UsageError(f"--gd-steps must lie in [1, 10000], got {args.gd_steps}")
