"""Case 1: solver overhead against a bare `lax.scan` of the same steps."""

import jax

from . import _profile
from ._case_common import _bare_loop, _final_only, _row, problem
from ._timing import best_of, timed


def case_overhead(cfg, params):
    """Wall time per gradient evaluation inside `gradient_flow` ÷ a bare jitted gradient in
    a `lax.scan`; also raw diffrax Tsit5 (no gradflows layer) to locate the overhead."""
    prob = problem("two_layer", params, cfg)
    steps = int(max(200, min(2000, 2e7 / params)))
    bare = _bare_loop(prob, steps)
    final_kw = _final_only(prob)
    fns = {
        "bare": lambda: jax.block_until_ready(bare(prob.trainable)),
        "raw_diffrax": lambda: prob.raw("tsit5"),
        "gradient_flow": lambda: prob.flow(solver="tsit5"),
        "gradient_flow_final_only": lambda: prob.flow(**final_kw),
    }
    cold = {name: timed(fn)[0] for name, fn in fns.items()}  # compiles
    secs, out = best_of(fns, cfg.repeats)
    evals = {
        "bare": steps,
        "raw_diffrax": out["raw_diffrax"][1],
        "gradient_flow": out["gradient_flow"].stats["grad_evals"],
        "gradient_flow_final_only": out["gradient_flow_final_only"].stats["grad_evals"],
    }
    per_eval = {k: secs[k] / evals[k] for k in fns}
    ratio = {k: per_eval[k] / per_eval["bare"] for k in fns}
    st = out["gradient_flow"].stats
    cold.update(
        {
            k: prob.cold_seconds(**kw)
            for k, kw in (
                ("gradient_flow", dict(solver="tsit5")),
                ("gradient_flow_final_only", final_kw),
            )
        }
    )
    details = {
        "seconds": secs,
        "cold_seconds": cold,
        "grad_evals": evals,
        "us_per_grad_eval": {k: v * 1e6 for k, v in per_eval.items()},
        "ratio_to_bare": ratio,
        "gradient_flow_vs_raw_diffrax": per_eval["gradient_flow"] / per_eval["raw_diffrax"],
        "num_steps": st["num_steps"],
        "chunks": st["chunks"],
        "setting": "gradient_flow(loss, net, t1, solver='tsit5') with default ts (101 save "
        "times), chunks=20, save_params=True; final_only: ts=[0, t1]",
        "t1": prob.t1,
        "rtol": prob.rtol,
        "atol": prob.atol,
    }
    if cfg.profile:
        details["profile"] = {
            "ablations": _profile.flow_ablations(prob, cfg.repeats),
            "host_profile_default_call": _profile.host_profile(lambda: prob.flow(solver="tsit5")),
        }
    return [
        _row(
            cfg,
            "overhead",
            params,
            "time/grad eval: gradient_flow ÷ bare lax.scan",
            ratio["gradient_flow"],
            "×",
            goal=("<=", 1.15),
            anchor="1.30",
            ours=f"{per_eval['gradient_flow'] * 1e6:.0f} µs/eval ({evals['gradient_flow']} evals)",
            theirs=f"{per_eval['bare'] * 1e6:.0f} µs/eval",
            details=details,
            note=f"raw diffrax Tsit5 {ratio['raw_diffrax']:.2f}×, final-only "
            f"{ratio['gradient_flow_final_only']:.2f}×",
        )
    ]


# -- 2. scipy ----------------------------------------------------------------------------------


def _ours(prob, cfg):
    """Warm wall time, error and gradient evaluations of the final-only `gradient_flow` call."""
    kw = _final_only(prob)
    prob.flow(**kw)  # compile
    secs, out = best_of({"ours": lambda: prob.flow(**kw)}, cfg.repeats)
    traj = out["ours"]
    return {
        "seconds": secs["ours"],
        "cold_seconds": prob.cold_seconds(**kw),
        "error": prob.error(prob.final(traj)),
        "grad_evals": traj.stats["grad_evals"],
        "num_steps": traj.stats["num_steps"],
    }
