"""The portrait run: compute each figure into its `.npz`, summarise it, draw it."""

import argparse
import json
import os

import numpy as np
from tqdm import tqdm

from .. import _interrupt
from .._files import versions, write_json, write_npz
from .._options import UsageError
from .._run_folder import RunFolder
from ._cli import CONSERVATION_STARTS, settings
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
    folder = RunFolder.choose("portrait", args.out, args.resume)
    s = folder.stored_config()["settings"] if folder.resumed else settings(args)
    _interrupt.watch(folder)
    folder.start({"settings": s, "versions": versions()})
    results_path = folder.file("results.json")
    results = {"complete": False}
    if os.path.exists(results_path):
        with open(results_path, encoding="utf-8") as f:
            results = json.load(f)
    options = argparse.Namespace(**s)
    for name in tqdm(s["figures"], desc="portrait", unit="figure"):
        _interrupt.check()
        if name not in results or not os.path.exists(folder.file(f"{name}.npz")):
            data = _compute(name, options)
            write_npz(folder.file(f"{name}.npz"), **data)
            results[name] = _summary(name, data)
            write_json(results_path, results)
        folder.kept = (
            f"{sum(f in results for f in s['figures'])} of {len(s['figures'])} figures finished"
        )
        if not os.path.exists(folder.file(f"{name}.{s['format']}")):
            for path in plot(folder.path, s["format"], names=(name,)):
                tqdm.write(path)
    results["complete"] = True
    write_json(results_path, results)
    return 0
