"""One α of the sweep: `flows.lazy_comparison`, its part files and their reading back."""

import json
import os
import time

import flows

from .._files import write_json, write_npz
from .._options import solve_settings

LOSS = flows.SquaredLoss("sum")  # R(y) = ½‖y − y*‖²: m = M = 1, κ = 1
NON_SMOOTH = ("relu", "abs", "leaky_relu")  # Dh is not Lipschitz: no C0
SERIES = (
    "loss",
    "loss_linearized",
    "weight_gap",
    "output_gap",
    "heldout_output_gap",
    "distance_from_init",
    "residual",
    "residual_linearized",
)


def _part(folder: str, i: int, ext: str) -> str:
    return os.path.join(folder, f"alpha-{i:02d}.{ext}")


def _rate(ts, residual, window, floor) -> tuple[float | None, str | None]:
    """`flows.late_rate` and, when it is None, why."""
    rate = flows.late_rate(ts, residual, start=window, floor=floor)
    if rate is not None:
        return rate, None
    return None, (
        f"fewer than 3 save times in the window t >= {window:.4g} have a residual above "
        f"{floor:.3g} (1e3·rtol times the initial residual): the loss reached round-off "
        "earlier, so there is no late slope to fit"
    )


def solve_alpha(i, alpha, model, data, heldout, s, ts, folder, progress) -> dict:
    """Run one α, write its part files, return its record."""
    checkpoint = os.path.join(folder, f".alpha-{i:02d}.checkpoint.npz")
    remainder = flows.lazy_remainder_rule(alpha)
    record = {"alpha": alpha, "index": i, "form": "remainder" if remainder else "direct"}
    start = time.perf_counter()
    try:
        res = flows.lazy_comparison(
            model,
            data,
            alpha,
            float(ts[-1]),
            loss=LOSS,
            heldout=heldout,
            ts=ts,
            settings=solve_settings(
                solver=s["solver"], rtol=s["rtol"], atol=s["atol"], max_steps=s["max_steps"]
            ),
            remainder=remainder,
            nodes=s["nodes"],
            progress=progress,
            checkpoint=checkpoint,
        )
    except (RuntimeError, FloatingPointError) as e:  # MaxStepsReached is a RuntimeError
        record.update(failed=True, reason=f"{type(e).__name__}: {e}")
        record["wall_s"] = time.perf_counter() - start
        write_json(_part(folder, i, "json"), record)
        return record
    arrays = {k: getattr(res, k) for k in SERIES if getattr(res, k) is not None}
    window = (1 - s["rate_window"]) * ts[-1]
    floor = 1e3 * s["rtol"] * res.residual[0]
    rate, rate_note = _rate(ts, res.residual, window, floor)
    rate_linearized, rate_linearized_note = _rate(ts, res.residual_linearized, window, floor)
    record.update(
        failed=False,
        sup_weight_gap=res.weight_gap.max(),
        sup_output_gap=res.output_gap.max(),
        sup_heldout_output_gap=(
            None if res.heldout_output_gap is None else res.heldout_output_gap.max()
        ),
        sup_distance_from_init=res.distance_from_init.max(),
        final_loss=res.loss[-1],
        final_loss_linearized=res.loss_linearized[-1],
        loss_fall=res.loss[0] / res.loss[-1] if res.loss[-1] > 0 else None,
        rate=rate,
        rate_note=rate_note,
        rate_linearized=rate_linearized,
        rate_linearized_note=rate_linearized_note,
        steps=res.stats["num_steps"],
        solvers=res.stats["solvers"],
        wall_s=time.perf_counter() - start,
    )
    write_npz(_part(folder, i, "npz"), ts=ts, **arrays)
    write_json(_part(folder, i, "json"), record)
    if os.path.exists(checkpoint):
        os.remove(checkpoint)
    return record


def _finished(folder: str, i: int) -> dict | None:
    path = _part(folder, i, "json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        record = json.load(f)
    if not record.get("failed") and not os.path.exists(_part(folder, i, "npz")):
        return None
    return record
