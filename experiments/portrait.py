"""Phase portraits in the (w1, w2) plane: the seed's lazy picture, flow fields, conservation.

Three figures, each computed into `<name>.npz` in the run folder and drawn from that file:

- `seed`: w ↦ α·f(w) and its linearisation α·f̄(w) at w0 for f(w) = w2·σ(w1·x), on the
  window w0 ± ρ/α, for each scale α (Chizat, Oyallon & Bach 2019, §1).
- `flows`: streamlines of −∇F_α and −∇F̄_α over their level sets, and exact flows of both
  from several starts, one column per α (Chizat et al. 2019, Thm 2.2).
- `conservation`: f(w) = w2·w1·x; exact flows on their hyperbolas w1² − w2² = c, and
  gradient descent with a large step leaving its hyperbola (Du, Hu & Lee 2018).
"""

import argparse
import math
import os

import numpy as np
from tqdm import tqdm

from . import _portraits as portraits
from ._common import UsageError, run_dir, versions, write_json, write_npz

DESCRIPTION = "phase portraits in the plane of two weights: lazy surfaces, flow fields, hyperbolas"

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


def _compute(name: str, args) -> dict:
    net = portraits.TwoWeightNet(args.activation, args.x)
    if name == "seed":
        return portraits.surface_portrait(
            net, args.w0, scales=args.scales, radius=args.radius, grid=args.grid, draw=False
        ).data
    if name == "flows":
        return portraits.lazy_flow_portrait(
            net,
            args.w0,
            args.target,
            alphas=args.alphas,
            radius=args.radius,
            t1=args.t1,
            grid=args.field_grid,
            rtol=args.rtol,
            atol=args.atol,
            draw=False,
        ).data
    linear = portraits.ModelLoss(portraits.ScalarLinearNet(args.x), args.target)
    try:
        return portraits.conservation_portrait(
            linear,
            portraits.balancedness,
            np.array(CONSERVATION_STARTS),
            (-2.5, 2.5, -2.5, 2.5),
            eta=args.eta,
            gd_steps=args.gd_steps,
            t1=2 * args.t1,
            grid=args.grid,
            rtol=args.rtol,
            atol=args.atol,
            draw=False,
        ).data
    except FloatingPointError as e:
        raise UsageError(f"--eta {args.eta}: {e}") from None


def _summary(name: str, data: dict) -> dict:
    """The numbers each figure shows, for results.json."""
    if name == "seed":
        centre = data["output"].shape[-1] // 2
        gap = np.abs(data["output"] - data["output_linearized"])
        return {
            "scales": data["scales"],
            "window_radius": data["radii"],
            "max_output_gap": gap.max(axis=(1, 2)),
            "output_gap_at_w0": gap[:, centre, centre],
        }
    if name == "flows":
        return {
            "alphas": data["alphas"],
            "path_length_from_w0": data["path_length"][:, 0, 0],
            "path_length_from_w0_linearized": data["path_length"][:, 1, 0],
            "chord_over_length_from_w0": data["straightness"][:, 0, 0],
            "max_weight_gap_from_w0": data["weight_gap"][:, 0],
            "max_weight_gap_all_starts": data["weight_gap"].max(axis=1),
            "solver_steps": data["num_steps"],
        }
    q = data["invariant_paths"]
    return {
        "max_flow_drift_of_balancedness": np.abs(q - q[:, :1]).max(),
        "gradient_descent_drift_of_balancedness": float(
            abs(data["invariant_gd"][-1] - data["invariant_gd"][0])
        ),
        "eta": data["eta"],
        "solver_steps": data["num_steps"],
    }


def plot(folder: str, fmt: str = "png", names=FIGURES) -> list[str]:
    """Draw the figures `names` whose `<name>.npz` is in the run folder, as `<name>.<fmt>`;
    returns the files written."""
    draw = {
        "seed": portraits.draw_surfaces,
        "flows": portraits.draw_flows,
        "conservation": portraits.draw_conservation,
    }
    written = []
    for name in names:
        path = os.path.join(folder, f"{name}.npz")
        if not os.path.exists(path):
            continue
        with np.load(path, allow_pickle=False) as saved:
            data = {key: saved[key] for key in saved.files}
        target = os.path.join(folder, f"{name}.{fmt}")
        portraits.save_figure(draw[name](data), target)
        written.append(target)
    return written


def run(args) -> int:
    _check(args)
    folder = run_dir(args.out, "portrait")
    config = {k: v for k, v in vars(args).items() if k not in ("out",)}
    config.update(solver="tsit5", versions=versions())
    write_json(os.path.join(folder, "config.json"), config)
    results = {}
    for name in tqdm(args.figures, desc="portrait", unit="figure"):
        data = _compute(name, args)
        write_npz(os.path.join(folder, f"{name}.npz"), **data)
        results[name] = _summary(name, data)
        write_json(os.path.join(folder, "results.json"), results)
        for path in plot(folder, args.format, names=(name,)):
            tqdm.write(path)
    return 0
