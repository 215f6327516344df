"""One step size η: gradient descent against the gradient flow, the modified flow (order 1)
and the central flow, on one loss."""

import warnings

import numpy as np

import flows
from flows._checks import check_finite
from flows.large_steps import (
    EdgeLimitReached,
    central_flow,
    modified_flow,
    sharpness_along,
    update_cosine,
)
from models import partition

from ._cli import DEFAULTS, MAX_GD_STEPS, MIN_SAVE_INTERVALS, solve_settings_of
from ._gd import descend

FLOWS = ("gradient_flow", "modified_flow", "central_flow")
_FLOW_NAMES = tuple(f.removesuffix("_flow") for f in FLOWS)  # as `flows_compared` names them
LANCZOS_MAX_ITERS = 40  # warm-started along GD: a few products per save (cheaper than 200)
LANCZOS_TOL = 1e-9  # relative Ritz residual: S to 1e-9 relative, plenty against 2/η
AVERAGE_SIGMA = 50  # GD steps: the Gaussian filter of GD's time-averaged loss (Cohen et al. 2025)


def compare(
    loss,
    params0,
    *,
    eta: float,
    t1: float,
    k: int = 1,
    every: int = 1,
    settings: flows.SolveSettings | None = None,
    flows_compared=("gradient", "modified", "central"),
    central_max_steps: int = 3000,
    report=lambda t, t1, what=None: None,
) -> tuple[dict, dict]:
    """Gradient descent with step `eta` to flow time `t1` (step k at t = kη) against three
    flows from the same `params0`: the gradient flow, the modified flow of order 1
    (Barrett & Dherin 2021) and the central flow (Cohen et al. 2025).

    **Arguments:**
    - `loss`: the full-batch loss, a scalar function of the parameter pytree `params0`.
    - `eta`: the step η > 0 (flow time); `t1` the horizon (> η).
    - `k`: top Hessian eigenvalues recorded along GD (1 ≤ k ≤ p), and the most the central
      flow tracks at 2/η (k < p).
    - `every`: GD steps between sharpness evaluations and flow saves.
    - `settings`: the flows' `flows.SolveSettings` (default: those of `gradflows run eos`,
      Tsit5 at rtol 1e-6, atol 1e-8: `experiments.eos._cli.DEFAULTS`).
    - `flows_compared`: which of "gradient", "modified", "central".
    - `central_max_steps`: the central flow's step budget. It tracks up to k eigenvalues:
      where eigenvalue k + 1 reaches 2/η (`flows.large_steps.EdgeLimitReached`) or the
      budget runs out, it is kept up to the last save before, and
      `record["central_flow"]["stopped"]` says where and why.
    - `report(t, t1, what)`: progress, the time reached by each part in turn ("gradient
      descent", "sharpness", "gradient flow", "modified flow", "central flow").

    **Returns:** `(record, arrays)`. `arrays`: `t_gd` (K+1,), `loss_gd` (K+1,) at every step;
    `t` (T,) the sharpness/flow save times (every `every` steps); `sharpness_gd` (T, k);
    `t_flow` (T',) the flows' save times where GD stopped before `t1` (the flows run to `t1`
    all the same; absent otherwise: they are `t`);
    `update_cosine` (K,) = cos(Δw_t, w_t − w_0) at t_gd[1:]; `distance_gd_from_init` (T,) =
    ‖w_GD(t) − w_0‖ at the save times `t`; per flow `loss_<flow>` (at
    the flows' times), `distance_<flow>` = ‖w_GD(t) − w_flow(t)‖ over the times both
    reached; the central flow's `sharpness_central`, `predicted_loss`, `tracked` (m),
    `next_eigenvalue_central` (λ_(k+1), the first untracked eigenvalue) and
    `loss_gd_averaged` (GD's loss under a Gaussian filter of `AVERAGE_SIGMA` steps, at the
    central flow's saves); `record["central_flow"]["predicted_loss_error"]` compares the
    predicted and averaged losses from GD's first save at 2/η on, 3σ from either end of
    GD's run (and, as `settled`, from 3σ after that first save on). A flow that
    failed has no arrays and its reason in `record["failed"]`. `record` holds the numbers
    of results.json (no NaN).

    **Raises:** `ValueError` naming `eta` (≤ 0), `t1` (not a finite number, < η, or more than
    200,000 steps of η), `every` or `central_max_steps` (not an integer ≥ 1),
    `flows_compared` (a str, or an unknown name: it was ignored), `k` (> p) or the settings;
    `TypeError` naming `loss` (not a float scalar, as the flows do), `settings` (not a
    `flows.SolveSettings`) or `report` (not callable).
    """
    if isinstance(eta, bool) or not isinstance(eta, (int, float)) or not 0 < eta < np.inf:
        raise ValueError(f"eta must be a finite number > 0, got {eta!r}")
    if isinstance(t1, (bool, str)) or not isinstance(t1, (int, float, np.number)):
        raise ValueError(f"t1 must be a number, got {t1!r}")
    if not np.isfinite(t1):  # inf failed as "cannot convert float infinity to integer"
        raise ValueError(f"t1 must be finite, got {t1!r}")  # (NaN: "at least one step")
    if not t1 >= eta:
        raise ValueError(f"t1 must be at least one step eta={eta:g}, got {t1!r}")
    for name, value in (("every", every), ("central_max_steps", central_max_steps)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            # central_max_steps=-1 was found only after GD and the other flows had run,
            # 'x' failed there as "'<' not supported between instances of 'str' and 'int'"
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if not (settings is None or isinstance(settings, flows.SolveSettings)):
        raise TypeError(  # 'x' said "'str' object has no attribute 'to_dict'", after GD
            f"settings must be a flows.SolveSettings or None, got {type(settings).__name__}"
        )
    if not callable(report):  # None failed at the first report
        raise TypeError(f"report must be a callable report(t, t1, what), got {report!r}")
    if isinstance(flows_compared, str) or not set(flows_compared) <= set(_FLOW_NAMES):
        raise ValueError(
            f"flows_compared must be a sequence of {', '.join(map(repr, _FLOW_NAMES))}, "
            f"got {flows_compared!r}"
        )
    check_finite("params0", partition(params0)[0])  # flows.sharpness says "params"
    flows.sharpness(loss, params0, k)  # refuses k > p and a non-scalar loss, by name
    settings = solve_settings_of(DEFAULTS) if settings is None else settings
    steps = int(round(t1 / eta))
    if steps > MAX_GD_STEPS:  # t1=1e12, eta=0.1 ran 1e13 steps, every one kept
        raise ValueError(
            f"t1={t1:g} is {steps:.3g} steps of eta={eta:g}, over {MAX_GD_STEPS} (every "
            "step of gradient descent is kept)"
        )
    if steps // every < MIN_SAVE_INTERVALS:  # t = 0 alone: no flow solved, no edge seen
        raise ValueError(
            f"every={every} leaves {steps // every} save(s) after t = 0 in the {steps} steps "
            f"of eta={eta:g}: at most {steps // MIN_SAVE_INTERVALS}"
        )
    gd = descend(loss, params0, eta=eta, steps=steps,
                 report=lambda t, t1: report(t, t1, "gradient descent"))  # fmt: skip
    traj = gd.trajectory
    K = len(traj.ts) - 1
    idx = np.arange(0, K + 1, every)
    sub = _subsample(traj, idx)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        report(0.0, float(traj.ts[-1]), "sharpness")
        along = sharpness_along(loss, sub, k, tol=LANCZOS_TOL, max_iters=LANCZOS_MAX_ITERS)
    S, products = along.values, along.products
    t = traj.ts[idx]
    arrays = {
        "t_gd": traj.ts,
        "loss_gd": traj.loss,
        "t": t,
        "sharpness_gd": S,
        "update_cosine": update_cosine(traj) if K >= 1 else np.zeros(0),
    }
    record = {
        "eta": eta,
        "edge": 2.0 / eta,
        "steps": K,
        "diverged": gd.diverged,
        "sharpness_initial": float(S[0, 0]),
        "lanczos": {
            "max_iters": LANCZOS_MAX_ITERS,
            "tol": LANCZOS_TOL,
            "products_mean": float(products.mean()),
            "saves_above_tol": len(caught),
        },
        "failed": {},
        "solver": settings.to_dict(),  # the settings used, max_steps resolved
    }
    record.update(_edge_summary(t, S[:, 0], eta))
    w_gd = _flat(sub.params)
    arrays["distance_gd_from_init"] = np.linalg.norm(w_gd - w_gd[0], axis=1)  # the scale
    # The flows run to the requested horizon even where GD stopped early (diverged): they
    # do not depend on GD; ‖GD − flow‖ is over the times both reached.
    t_flow = eta * np.arange(0, steps + 1, every)
    if len(t_flow) > len(t):
        arrays["t_flow"] = t_flow
    t_end = float(t_flow[-1])
    chosen = [f"{f}_flow" for f in flows_compared]
    for name in [f for f in FLOWS if f in chosen] if t_end > 0 else ():
        stopped = None
        what = name.replace("_", " ")
        report(0.0, t_end, what)
        try:
            flow = _flow(name, loss, params0, t_end, t_flow, eta, settings, central_max_steps,
                         lambda t, t1, what=what: report(t, t1, what), k)  # fmt: skip
        except (flows.MaxStepsReached, EdgeLimitReached) as e:
            # The central flow tracks up to k eigenvalues: it stops where one more reaches
            # 2/η (or its step budget runs out); it is kept up to the last save before.
            stopped = {"t": float(e.t), "reason": " ".join(str(e).split())}
            flow = getattr(e, "partial", None)
            if flow is None or len(flow.ts) < 2:
                record["failed"][name] = stopped["reason"]
                continue
        except (FloatingPointError, ValueError) as e:
            record["failed"][name] = " ".join(str(e).split())
            continue
        arrays[f"loss_{name}"] = flow.loss
        n = min(len(w_gd), len(flow.ts))
        dist = np.linalg.norm(w_gd[:n] - _flat(flow.params)[:n], axis=1)
        arrays[f"distance_{name}"] = dist
        record[name] = {
            "num_steps": int(flow.stats["num_steps"]),
            "loss_final": float(flow.loss[-1]),
            "distance_final": float(dist[-1]),
            "distance_max": float(dist.max()),
            "t_final": float(flow.ts[-1]),
            "stopped": stopped,
        }
        if name == "central_flow":
            arrays["sharpness_central"] = flow.observables["sharpness"]
            arrays["predicted_loss"] = flow.observables["predicted_loss"]
            record[name]["events"] = [[float(te), phase] for te, phase in flow.stats["events"]]
            record[name]["predicted_loss_final"] = float(flow.observables["predicted_loss"][-1])
            arrays["tracked"] = np.asarray(flow.observables["tracked"])
            record[name]["tracked_max"] = int(arrays["tracked"].max())
            record[name]["k"] = k
            # λ_(k+1) along the flow, against the edge: below 1 to t1 means that k tracked
            # every eigenvalue that reached 2/η
            arrays["next_eigenvalue_central"] = np.asarray(flow.observables["eigenvalues"])[:, k]
            record[name]["next_eigenvalue_over_edge_max"] = float(
                arrays["next_eigenvalue_central"].max() * eta / 2
            )
            averaged = _averaged(traj.loss, idx, len(flow.ts))
            if averaged is not None:
                arrays["loss_gd_averaged"] = averaged
            record[name]["predicted_loss_error"] = _prediction_error(
                averaged, flow.observables["predicted_loss"], flow.ts, record["t_edge"], idx, K
            )
    record["loss_gd_final"] = float(traj.loss[-1])
    cos = arrays["update_cosine"]
    record["update_cosine_mean_last_half"] = float(cos[len(cos) // 2 :].mean()) if len(cos) else 0.0
    return record, arrays


def _edge_summary(t, S, eta) -> dict:
    """When GD's sharpness first reaches 2/η, and S/(2/η) after it (its hovering)."""
    ratio = S * eta / 2
    above = np.flatnonzero(ratio >= 1.0)
    if not len(above):
        return {"t_edge": None, "hover": None, "ratio_max": float(ratio.max())}
    after = ratio[above[0] :]
    return {
        "t_edge": float(t[above[0]]),
        "ratio_max": float(ratio.max()),
        "hover": {
            "what": "S/(2/η) over the saves from the first at or above 2/η to the end",
            "median": float(np.median(after)),
            "min": float(after.min()),
            "max": float(after.max()),
            "saves": int(len(after)),
        },
    }


def _averaged(loss_gd, idx, n):
    """GD's loss under a Gaussian filter of `AVERAGE_SIGMA` steps (its time average, as the
    central flow predicts it), at the first n saves `idx` that GD reached; None if none."""
    from scipy.ndimage import gaussian_filter1d

    n = min(n, len(idx))
    if n < 1:
        return None
    return gaussian_filter1d(np.asarray(loss_gd), AVERAGE_SIGMA, mode="nearest")[idx[:n]]


def _prediction_error(averaged, predicted, ts, t_edge, steps, last) -> dict | None:
    """|predicted − averaged| / averaged over the saves from GD's first at 2/η (`t_edge`)
    on that both reached and whose filter window lies inside GD's run (steps (n,) of the
    saves at least 3σ from step 0 and from GD's `last` step; nearer, the filter averages
    over steps that were not run): mean, max and where the max is; and the same over
    `settled`, the saves also 3σ or more after the edge, whose window (±3σ) holds only
    steps past the edge (nearer the edge the filter mixes in GD's steps below it, which the
    central flow does not oscillate about). None if no such save; `settled` None if none
    there."""
    if averaged is None or t_edge is None:
        return None
    n = len(averaged)
    steps, reach = np.asarray(steps[:n]), 3 * AVERAGE_SIGMA
    ts = np.asarray(ts[:n])
    inside = (ts >= t_edge) & (steps >= reach) & (steps <= last - reach)
    if not inside.any():
        return None
    rel = np.abs(np.asarray(predicted[:n]) - averaged) / averaged
    settled = inside & (steps >= steps[np.argmax(ts >= t_edge)] + reach)
    return {
        "what": f"|predicted − GD's loss under a Gaussian filter of σ = {AVERAGE_SIGMA} steps| / "
        "the latter, over the central flow's saves from GD's first at 2/η on, at least 3σ "
        "from either end of GD's run",
        "sigma_steps": AVERAGE_SIGMA,
        **_window(rel, ts, inside),
        "settled": {
            "what": "the same from 3σ after GD's first save at 2/η on (the filter's window "
            "past the edge)",
            **_window(rel, ts, settled),
        }
        if settled.any()
        else None,
    }


def _window(rel, ts, where) -> dict:
    """Mean and max of `rel` over the saves `where`, where the max is, the first time."""
    after = np.flatnonzero(where)
    i = int(np.argmax(rel[after]))
    return {
        "mean": float(rel[after].mean()),
        "max": float(rel[after][i]),
        "t_max": float(ts[after[i]]),
        "from_t": float(ts[after[0]]),
        "saves": int(len(after)),
    }


def _flow(name, loss, params0, t1, ts, eta, settings, central_max_steps=None, report=None, k=1):
    if name == "gradient_flow":
        return flows.gradient_flow(loss, params0, t1, ts=ts, settings=settings)
    if name == "modified_flow":
        return modified_flow(loss, params0, t1, eta=eta, order=1, ts=ts, settings=settings)
    if central_max_steps is not None:
        settings = settings.replace(max_steps=min(settings.max_steps, central_max_steps))
    # count=False: no host callbacks, so that later processes load the program from the cache
    return central_flow(loss, params0, t1, eta=eta, k=k, ts=ts, settings=settings,
                        report=report, count=False)  # fmt: skip


def _subsample(traj, idx):
    import dataclasses

    import equinox as eqx
    import jax

    trainable, static = eqx.partition(traj.params, eqx.is_array)
    params = eqx.combine(jax.tree.map(lambda a: a[idx], trainable), static)
    return dataclasses.replace(traj, ts=traj.ts[idx], params=params, loss=traj.loss[idx])


def _flat(params) -> np.ndarray:
    """(T, p): the trainable leaves of a saved trajectory, flattened per save."""
    import equinox as eqx
    import jax

    leaves = jax.tree.leaves(eqx.filter(params, eqx.is_array))
    return np.concatenate([np.asarray(a).reshape(len(leaves[0]), -1) for a in leaves], axis=1)
