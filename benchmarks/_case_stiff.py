"""Case 9: time to t = 1e4 and 1e6 against scipy's stiff solvers (BDF, LSODA) given the exact
Hessian as Jacobian, and against RK45 (extrapolated where capped)."""

import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

import flows
import models

from . import _scipy_stepped as sp
from ._case_common import _row, problem
from ._timing import timed

FIXED = ("tsit5", "exprb32", "kvaerno5")
REF_RTOL, REF_ATOL = 1e-9, 1e-12  # the reference run's (1000× the compared tolerances)
CHEAP_S = 10.0  # runs faster than this are repeated (best of cfg.repeats), on both sides


def _flat(traj, i):
    trainable, _ = models.partition(traj.at(i))
    return ravel_pytree(trainable)[0]


def tsit5_runs(t1, prob) -> bool:
    """Tsit5 is held at its stability limit (~3.5/λ_max ≈ 0.08 here): about 1.3·10⁵ steps to
    t = 1e4, a minute at p = 1e4; it runs only to t ≤ 1e4 and p ≤ 1e4."""
    return t1 <= 1e4 and prob.params <= 10_000


def _gradflows(prob, solver, t1, repeats):
    """Wall time of `gradient_flow(solver=…)` to t1 (the horizon case's 100 log-spaced save
    times), after one untimed run of the same call (compilation; Tsit5 compiles on a 1e-8
    horizon instead, as its full run takes minutes), best of `repeats` when under CHEAP_S."""
    ts = flows.log_times(t1, 100)
    if solver == "tsit5":
        tiny = flows.log_times(t1 * 1e-8, 100, t_min=t1 * 1e-11)
        cold, _ = timed(lambda: prob.flow(t1=tiny[-1], ts=tiny, solver=solver))
    else:
        cold, _ = timed(lambda: prob.flow(t1=t1, ts=ts, solver=solver))
    best = None
    for _ in range(max(1, repeats)):
        with sp.PeakRSS() as mem:
            seconds, traj = timed(lambda: prob.flow(t1=t1, ts=ts, solver=solver))
        best = seconds if best is None else min(best, seconds)
        if seconds >= CHEAP_S:
            break
    stats = traj.stats
    return {
        "seconds": best,
        "cold_seconds": cold,
        "num_steps": stats["num_steps"],
        "grad_evals": stats["grad_evals"],
        "solvers": stats.get("solvers"),
        "final_loss": float(traj.loss[-1]),
        "peak_rss_delta_mb": (mem.peak - mem.start) / 2**20,
        "_theta": _flat(traj, -1),
    }


def _mem_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def _scipy(prob, method, horizons, cap_s, repeats, jac, blas):
    """`sp.stepped`, repeated (best of `repeats`) while a whole run takes under CHEAP_S; or
    `{"cannot_run": why}` if three dense p×p arrays (the Jacobian, scipy's iteration matrix
    and LU, JAX's Hessian output) do not fit in the memory available."""
    need, have = 3 * prob.params**2 * 8, _mem_available()
    if need > have:
        return {
            "cannot_run": f"needs ≈{need / 2**30:.1f} GiB for three dense {prob.params}² "
            f"arrays, {have / 2**30:.1f} GiB available"
        }
    best = None
    for _ in range(max(1, repeats)):
        run = sp.stepped(
            prob, method, horizons, prob.rtol, prob.atol, cap_s, jac=jac, blas_threads=blas
        )
        if best is None or (not run["capped"] and run["seconds"] < best["seconds"]):
            best = run
        if run["capped"] or run["seconds"] >= CHEAP_S:
            break
    for k in ("t_hist", "wall_hist", "nfev_hist"):
        best[k + "_len"] = len(best[k])
    return best


def _agreement(theta, ref, theta0):
    return float(jnp.linalg.norm(jnp.asarray(theta) - ref) / jnp.linalg.norm(ref - theta0))


def _measure(cfg, prob, horizons):
    """Everything the rows need, measured in this order: gradflows (auto and the fixed
    solvers) per horizon, the reference, scipy BDF and LSODA with the exact Hessian, RK45."""
    ours = {}
    for t1 in horizons:
        names = ("auto",) + tuple(s for s in FIXED if s != "tsit5" or tsit5_runs(t1, prob))
        ours[t1] = {s: _gradflows(prob, s, t1, cfg.repeats) for s in names}
    ref_seconds, ref_traj = timed(
        lambda: prob.flow(
            t1=max(horizons),
            ts=np.array([0.0, *horizons]),
            solver="kvaerno5",
            rtol=REF_RTOL,
            atol=REF_ATOL,
        )
    )
    refs = {t1: _flat(ref_traj, i + 1) for i, t1 in enumerate(horizons)}
    jac = sp.dense_neg_hessian(prob)
    blas = sp.fastest_blas_threads(prob.params)
    cap = cfg.scipy_cap_s
    theirs = {
        m: _scipy(prob, m, horizons, cap, cfg.repeats, jac, blas["limit"]) for m in ("BDF", "LSODA")
    }
    rk45 = sp.stepped(prob, "RK45", horizons, prob.rtol, prob.atol, cfg.rk45_cap_s)
    for t1 in horizons:
        for r in ours[t1].values():
            r["difference_to_reference"] = _agreement(r.pop("_theta"), refs[t1], prob.theta0)
        for run in (*theirs.values(), rk45):
            h = run.get("horizons", {}).get(t1)
            if h is not None and "_theta" in h:
                h["difference_to_reference"] = _agreement(h.pop("_theta"), refs[t1], prob.theta0)
    reference = {
        "solver": "gradflows kvaerno5",
        "rtol": REF_RTOL,
        "atol": REF_ATOL,
        "seconds": ref_seconds,
        "num_steps": ref_traj.stats["num_steps"],
    }
    for run in theirs.values():
        run["blas_threads"] = blas
    return ours, theirs, rk45, reference


def _scipy_side(run, t1):
    """(seconds, is_lower_bound, record or None) of a stiff scipy run at horizon t1; seconds
    None if it could not run."""
    if "cannot_run" in run:
        return None, False, None
    h = run["horizons"][t1]
    if h is not None:
        return h["seconds"], False, h
    return run["seconds"], True, None


def _theirs_text(method, run, t1):
    secs, lower, h = _scipy_side(run, t1)
    if secs is None:
        return f"{method} cannot run: {run['cannot_run']}"
    if lower:
        return (
            f"{method} stopped at the {run['cap_s']:.0f} s cap at t={run['reached_t']:.3g} "
            f"({run['steps']} steps, nfev {run['nfev']}, njev {run['njev']}, nlu {run['nlu']}, "
            f"peak RSS +{run['peak_rss_delta_mb']:.0f} MB)"
        )
    return (
        f"{method} {secs:.2f} s, {h['steps']} steps, nfev {h['nfev']}, njev {h['njev']}, "
        f"nlu {h['nlu']}, peak RSS +{h['peak_rss_delta_mb']:.0f} MB, "
        f"diff to ref {h['difference_to_reference']:.1e}, BLAS threads "
        f"{run['blas_threads']['limit'] or 'default'}"
    )


MEMORY_NOTE = (
    "peak RSS: sampled every 2 ms from /proc/self/statm, minus the RSS at the run's start "
    "(includes the jitted Hessian's output)"
)
READ_NOTE = (
    "scipy times read at the first step reaching t in one run to the last horizon "
    "(compilation of the jitted gradient and Hessian excluded)"
)


def case_stiff(cfg, params):
    """Time to t = 1e4 and 1e6 (squared two-layer problem, the shared rtol 1e-6, atol 1e-9):
    gradflows "auto" and its best fixed solver against scipy BDF and LSODA with the exact
    Hessian as Jacobian, and against RK45."""
    prob = problem("two_layer", params, cfg)
    horizons = (1e4, float(cfg.horizon_t1))
    ours, theirs, rk45, reference = _measure(cfg, prob, horizons)
    dense_mb = params**2 * 8 / 2**20
    rows = []
    for t1 in horizons:
        tt = f"{t1:.0e}".replace("e+0", "e")
        auto = ours[t1]["auto"]
        fixed = {s: r for s, r in ours[t1].items() if s != "auto"}
        best_fixed = min(fixed, key=lambda s: fixed[s]["seconds"])
        bf = fixed[best_fixed]
        ours_text = (
            f"auto {auto['seconds']:.2f} s ({auto['num_steps']} steps, {auto['grad_evals']} "
            f"grads, diff to ref {auto['difference_to_reference']:.1e}); best fixed "
            f"{best_fixed} {bf['seconds']:.2f} s"
        )
        common = {
            "t1": t1,
            "gradflows": ours[t1],
            "best_fixed": best_fixed,
            "reference": reference,
            "rtol": prob.rtol,
            "atol": prob.atol,
            "dense_hessian_mb": dense_mb,
            "memory": MEMORY_NOTE,
        }
        sides = {}
        for method, run in theirs.items():
            secs, lower, _ = _scipy_side(run, t1)
            sides[method] = (secs, lower)
            rows.append(_stiff_row(cfg, params, method, run, t1, tt, auto, bf, ours_text, common))
        rows.append(_best_row(cfg, params, sides, tt, auto, bf, ours_text, common))
        rows.append(_rk45_row(cfg, params, rk45, t1, tt, auto, ours_text, common))
    return rows


def _ratio(secs, base):
    return None if secs is None else secs / base


def _info(run):
    """A scipy run for the row's details: without its per-step histories."""
    info = {k: v for k, v in run.items() if not k.endswith("_hist")}
    if "horizons" in info:
        info["horizons"] = {str(k): v for k, v in run["horizons"].items()}
    return info


def _stiff_row(cfg, params, method, run, t1, tt, auto, bf, ours_text, common):
    secs, lower, _ = _scipy_side(run, t1)
    note = "cannot run" if secs is None else ("lower bound (capped); " if lower else "")
    if secs is not None:
        note += f"÷ best fixed {common['best_fixed']}: {secs / bf['seconds']:.3g}×; " + READ_NOTE
    return _row(
        cfg,
        "stiff",
        params,
        f"scipy {method} (exact Hessian jac) time ÷ gradflows auto, to t={tt}",
        _ratio(secs, auto["seconds"]),
        "×",
        ours=ours_text,
        theirs=_theirs_text(method, run, t1),
        details={**common, "scipy": _info(run), "lower_bound": lower},
        note=note,
    )


def _best_row(cfg, params, sides, tt, auto, bf, ours_text, common):
    ran = {m: v for m, v in sides.items() if v[0] is not None}
    best = min(ran, key=lambda m: ran[m][0]) if ran else None
    secs, lower = ran[best] if ran else (None, False)
    theirs = "neither can run" if best is None else f"{best} {secs:.1f} s"
    note = f"dense Hessian {common['dense_hessian_mb']:.0f} MB; {MEMORY_NOTE}"
    if secs is not None:
        note = f"÷ best fixed {common['best_fixed']}: {secs / bf['seconds']:.3g}×; " + note
    return _row(
        cfg,
        "stiff",
        params,
        f"scipy's best stiff method (BDF/LSODA, exact Hessian) time ÷ gradflows auto, to t={tt}",
        _ratio(secs, auto["seconds"]),
        "×",
        goal=(">=", 100.0) if common["t1"] == 1e4 else None,
        goal_params=10_000,  # the goal: at p = 1e4
        ours=ours_text,
        theirs=theirs + (" (capped: lower bound)" if lower else ""),
        details={**common, "scipy_seconds": sides, "lower_bound": lower},
        note=("lower bound (capped); " if lower else "") + note,
    )


def _rk45_row(cfg, params, run, t1, tt, auto, ours_text, common):
    h = run["horizons"][t1]
    info = _info(run)
    if h is not None:
        secs = h["seconds"]
        theirs = (
            f"RK45 {secs:.1f} s, {h['steps']} steps, nfev {h['nfev']}, "
            f"diff to ref {h['difference_to_reference']:.1e}"
        )
        note = "measured; " + READ_NOTE
        extra = None
    else:
        extra = sp.extrapolate(run, t1)
        secs = extra["seconds"]
        theirs = (
            f"RK45 ≈{secs:.3g} s extrapolated ({extra['steps']:.3g} steps, "
            f"{extra['nfev']:.3g} grads)"
        )
        note = (
            f"extrapolated: RK45 ran {run['seconds']:.0f} s (cap) to t={run['reached_t']:.3g} in "
            f"{run['steps']} steps; over its last quarter (t={extra['from_t']:.3g}–"
            f"{extra['to_t']:.3g}) mean step {extra['mean_step']:.3g}, "
            f"{extra['steps_per_second']:.0f} steps/s, {extra['evals_per_step']:.2f} grads/step; "
            f"steps to t={tt} = steps done + (t − t_reached)/mean step"
        )
    return _row(
        cfg,
        "stiff",
        params,
        f"scipy RK45 time ÷ gradflows auto, to t={tt}",
        secs / auto["seconds"],
        "×",
        ours=ours_text,
        theirs=theirs,
        details={**common, "scipy": info, "extrapolation": extra, "extrapolated": h is None},
        note=note,
    )
