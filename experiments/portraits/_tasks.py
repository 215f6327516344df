"""One figure of `gradflows run portrait` as a task of the sweep layer (`experiments._sweep`)."""

import argparse

import numpy as np

import flows

from ._cli import CONSERVATION_STARTS
from ._conservation import conservation_portrait
from ._flow_fields import lazy_flow_portrait
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
            settings=args.solve,
            draw=False,
        ).data
    linear = ModelLoss(ScalarLinearNet(args.x), args.target)
    return conservation_portrait(
        linear,
        balancedness,
        np.array(CONSERVATION_STARTS),
        (-2.5, 2.5, -2.5, 2.5),
        eta=args.eta,
        gd_steps=args.gd_steps,
        t1=2 * args.t1,
        grid=args.grid,
        settings=args.solve,
        draw=False,
    ).data


def figure_task(task: dict, shared: dict, ctx) -> tuple[dict, dict | None]:
    """Compute the arrays of figure `task["figure"]` for the run's settings `shared`.

    **Returns:** (record, arrays): the numbers the figure shows (results.json's entry) and
    its arrays (`<figure>.npz`). Gradient descent that blows up (a too large `--eta`) is a
    result, not a crash: the record says `failed` with the reason, and there are no arrays.
    """
    name = task["figure"]
    try:
        # the run's one flows.SolveSettings, rebuilt once here from the recorded settings
        solve = flows.SolveSettings(
            solver=shared["solver"], rtol=shared["rtol"], atol=shared["atol"]
        )
        data = _compute(name, argparse.Namespace(**shared, solve=solve))
    except FloatingPointError as e:  # gradient descent (a too large --eta), or a flow
        who = f"--eta {shared['eta']}" if "gradient descent" in str(e) else "a gradient flow"
        return {"failed": True, "reason": f"{who}: {e}"}, None
    return _summary(name, data), data
