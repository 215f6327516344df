"""One α of the sweep: a task of `experiments._sweep` that runs `flows.lazy.lazy_comparison`."""

import numpy as np

import flows

from ._inputs import build_model

LOSS = flows.SquaredLoss("sum")  # R(y) = ½‖y − y*‖²: m = M = 1, κ = 1
# Dh is not Lipschitz: no C0; lazy_comparison integrates these by flows.nonsmooth.filippov_flow
NON_SMOOTH = ("relu", "abs", "leaky_relu")
KINK_STATS = ("events", "crossings", "sliding_entries", "sliding_exits", "pieces")
# F_α below ½(PL_FLOOR·ε·‖y*‖)²/α² is round-off (r = αh − y* is computed to ~ε‖y*‖): μ is
# undefined there (the same floor as the loss figure's, experiments/lazy/_plots.py)
PL_FLOOR = 10
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


def smooth(s: dict) -> bool:
    """Whether the run's model is smooth (Dh locally Lipschitz): not a kinked activation of
    the CLI's nets, nor a user's model that `flows.lazy.lazy_comparison` integrates as kinked
    (`s["kinked"]`, set by `experiments.lazy.run`)."""
    return s["activation"] not in NON_SMOOTH and not s.get("kinked", False)


def residual_floor(s: dict, residual) -> float:
    """The residual ‖αh(w) − y*‖ below which the solve of settings `s` does not resolve it:
    1e3·rtol times the initial residual (`residual` `(T,)`, the first at t = 0)."""
    return 1e3 * s["solve"].rtol * float(residual[0])


def _rate(ts, residual, window, floor) -> tuple[float | None, str | None]:
    """`flows.lazy.late_rate` and, when it is None, why."""
    rate = flows.lazy.late_rate(ts, residual, start=window, floor=floor)
    if rate is not None:
        return rate, None
    return None, (
        f"fewer than 3 save times in the window t >= {window:.4g} have a residual above "
        f"{floor:.3g} (1e3·rtol times the initial residual): the loss reached round-off "
        "earlier, so there is no late slope to fit"
    )


def _pl(ts, res, y_norm) -> tuple[dict, dict]:
    """inf_t μ(t) of both flows (record) and the parts of μ over time (arrays)."""
    floor = 0.5 * (PL_FLOOR * np.finfo(np.float64).eps * y_norm / res.alpha) ** 2
    record, arrays = {}, {}
    for suffix, parts in (("", res.pl), ("_linearized", res.pl_linearized)):
        mu = flows.observables.pl_constant(parts, floor=floor)
        defined = int(mu.count())
        record["pl_inf" + suffix] = float(mu.min()) if defined else None
        record["pl_inf_t" + suffix] = float(ts[int(mu.argmin())]) if defined else None
        record["pl_undefined" + suffix] = len(ts) - defined
        arrays["pl_grad_norm_sq" + suffix] = parts["grad_norm_sq"]
        arrays["pl_gap" + suffix] = parts["gap"]
    record["pl_floor"] = floor
    if record["pl_inf"] is None:
        record["pl_note"] = (
            f"F_α <= {floor:.3g} (round-off) at every save time: μ is undefined everywhere"
        )
    return record, arrays


def _kinks(stats) -> dict:
    """The Filippov solve's event counts, or {} for a smooth activation."""
    if "events" not in stats:
        return {}
    sliding = stats["sliding_at_ts"]
    return {
        **{k: stats[k] for k in KINK_STATS},
        "sliding_at_end": sliding[-1],
        "sliding_max": max(sliding),
        "steps_linearized": stats["linearized"]["num_steps"],
    }


def alpha_task(task: dict, shared: dict, ctx) -> tuple[dict, dict | None]:
    """Integrate one α = `task["alpha"]`; return its record and its arrays over time.

    Runs in a sweep worker (or in-process): the model is `shared["model"]` (a user's model,
    `experiments.lazy.run`) or rebuilt from the settings `s = shared["settings"]` (seeded, so
    every worker builds the same weights), which carry the run's one `flows.SolveSettings`,
    `s["solve"]` (pickled to a worker as the object); `shared` also holds the data `X`, `Y`,
    `heldout` and the save times `ts`. A solver failure (MaxStepsReached, a blow-up) is a
    result: a record with `failed` and its `reason`, and no arrays.
    """
    s, ts, alpha = shared["settings"], shared["ts"], task["alpha"]
    model = shared.get("model") or build_model(s, shared["X"].shape[1])
    kinked = not smooth(s)
    remainder = flows.lazy.lazy_remainder_rule(alpha) and not kinked
    form = "Filippov + direct" if kinked else "remainder" if remainder else "direct"
    record = {"alpha": alpha, "form": form}
    try:
        res = flows.lazy.lazy_comparison(
            model,
            (shared["X"], shared["Y"]),
            alpha,
            float(ts[-1]),
            loss=LOSS,
            heldout=shared["heldout"],
            ts=ts,
            settings=s["solve"],  # the run's one SolveSettings, sent with the task
            remainder=remainder,
            nodes=s["nodes"],
            progress=ctx.progress,
            checkpoint=ctx.checkpoint,
            report=lambda t: ctx.report(t, float(ts[-1])),
        )
    except (RuntimeError, FloatingPointError) as e:  # MaxStepsReached is a RuntimeError
        record.update(failed=True, reason=f"{type(e).__name__}: {e}")
        return record, None
    arrays = {k: getattr(res, k) for k in SERIES if getattr(res, k) is not None}
    pl_record, pl_arrays = _pl(ts, res, float(np.linalg.norm(shared["Y"])))
    arrays.update(pl_arrays)
    window = (1 - s["rate_window"]) * ts[-1]
    floor = residual_floor(s, res.residual)
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
        **_kinks(res.stats),
        **pl_record,
    )
    return record, {"ts": ts, **arrays}


def record_of(result) -> dict:
    """The run record of one α from its sweep result (`experiments._sweep.TaskResult`)."""
    if result.failed:  # no worker could finish it: tried again on --resume
        record = {"alpha": result.task["alpha"], "failed": True, "reason": result.error}
    else:
        record = dict(result.record)
    stats = result.stats
    record["wall_s"] = stats.get("wall_s")
    record["task"] = {
        "key": result.key,
        "resumed": result.resumed,
        **{k: stats.get(k) for k in ("cpu_s", "peak_rss_bytes", "worker", "attempts")},
    }
    return record
