"""The portrait run: compute each figure into its `.npz`, summarise it, draw it."""

import os

import numpy as np
from tqdm import tqdm

from .._common import UsageError, run_dir, versions, write_json, write_npz
from ._cli import CONSERVATION_STARTS, _check
from ._conservation import conservation_portrait
from ._flow_fields import lazy_flow_portrait
from ._plots import plot
from ._report import _summary
from ._surface import surface_portrait
from ._toys import ModelLoss, ScalarLinearNet, TwoWeightNet, balancedness


def _compute(name: str, args) -> dict:
    net = TwoWeightNet(args.activation, args.x)
    if name == "seed":
        return surface_portrait(
            net, args.w0, scales=args.scales, radius=args.radius, grid=args.grid, draw=False
        ).data
    if name == "flows":
        return lazy_flow_portrait(
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
    linear = ModelLoss(ScalarLinearNet(args.x), args.target)
    try:
        return conservation_portrait(
            linear,
            balancedness,
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
