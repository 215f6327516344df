"""Case 5: a long horizon (t1 = 1e6) with explicit, implicit and automatic solvers."""

import jax.numpy as jnp

import flows

from . import _problem, _profile
from ._case_common import _fmt_err, _row, problem
from ._timing import timed


def _horizon_runs(prob, settings, t1):
    """Warm up each setting on a tiny horizon with the same save-grid shape (so that the timed
    run does not compile), then run each once to t1."""
    ts = flows.log_times(t1, 100)
    tiny = flows.log_times(t1 * 1e-8, 100, t_min=t1 * 1e-11)
    results = {}
    for name, kw in settings.items():
        cold, _ = timed(lambda kw=kw: prob.flow(t1=tiny[-1], ts=tiny, **kw))
        seconds, traj = timed(lambda kw=kw: prob.flow(t1=t1, ts=ts, **kw))
        theta = prob.final(traj)
        grad_norm = float(jnp.linalg.norm(prob.grad_flat(theta)))
        results[name] = {
            "seconds": seconds,
            "warmup_seconds": cold,
            "final_loss": float(traj.loss[-1]),
            "final_grad_norm": grad_norm,
            **{k: traj.stats[k] for k in traj.stats},
            "_theta": theta,
        }
    return results


def _horizon_agreement(prob, results, ref_name):
    ref = results[ref_name].pop("_theta")
    scale = float(jnp.linalg.norm(ref - prob.theta0))
    for r in results.values():
        theta = r.pop("_theta", ref)
        r["difference_to_" + ref_name] = float(jnp.linalg.norm(theta - ref)) / scale


def case_horizon(cfg, params):
    """Steps, gradient evaluations and wall time to t = 1e6 (squared loss: "auto", "auto"
    with flows.Auto(stiff_steps=100), "kvaerno5"; logistic deep linear net: "auto")."""
    t1 = cfg.horizon_t1
    prob = problem("two_layer", params, cfg)
    settings = {
        "kvaerno5": dict(solver="kvaerno5"),
        "auto": dict(solver="auto"),
        "auto_stiff_steps_100": dict(solver=flows.Auto(stiff_steps=100)),
    }
    res = _horizon_runs(prob, settings, t1)
    _horizon_agreement(prob, res, "kvaerno5")
    if cfg.profile:
        kv = res["kvaerno5"]
        kv["implicit_work"] = {
            f"gmres_restart_{r}": _profile.implicit_work(params, t1, restart=r) for r in (20, 5)
        }
        kv["chunks_1"] = _horizon_runs(prob, {"c1": dict(solver="kvaerno5", chunks=1)}, t1)["c1"]
        kv["chunks_1"].pop("_theta")
        kv["carried_step_prototype"] = _profile.carried_step_prototype(prob, "kvaerno5", t1)
    rows = []
    for name, goal in (("auto", ("<=", 100.0)), ("kvaerno5", None), ("auto_stiff_steps_100", None)):
        r = res[name]
        rows.append(
            _row(
                cfg,
                "horizon",
                params,
                f"squared two-layer, solver {name.replace('_stiff_steps_', ', stiff_steps=')}: "
                "steps to t=1e6",
                r["num_steps"],
                "steps",
                goal=goal if goal else None,
                anchor="53 steps (Kvaerno5 + Newton–GMRES)" if name == "kvaerno5" else None,
                ours=f"{r['seconds']:.1f} s, {r['grad_evals']} grad evals (engine count)",
                details={**r, "solver_setting": settings[name], "t1": t1},
                note=(
                    f"switched at t={r['switched_to_stiff_at']:.3g}; "
                    if r["switched_to_stiff_at"] is not None
                    else ""
                )
                + f"loss {r['final_loss']:.1e}, diff to kvaerno5 {r['difference_to_kvaerno5']:.1e}",
            )
        )
    dl = problem("deep_linear", params, cfg)
    res = _horizon_runs(dl, {"auto": dict(solver="auto"), "tsit5": dict(solver="tsit5")}, t1)
    for name in res:
        res[name]["error"] = dl.error(res[name].pop("_theta"))
    r = res["auto"]
    r["reference"] = f"raw diffrax Dopri8, rtol {_problem.REF_RTOL}, atol {_problem.REF_ATOL}"
    if cfg.profile:
        r["chunks_1"] = _horizon_runs(dl, {"c1": dict(solver="auto", chunks=1)}, t1)["c1"]
        r["chunks_1"].pop("_theta")
        r["carried_step_prototype"] = _profile.carried_step_prototype(dl, "tsit5", t1)
    for name, goal in (("auto", ("<=", 300.0)), ("tsit5", None)):
        r = res[name]
        rows.append(
            _row(
                cfg,
                "horizon",
                dl.params,
                f"logistic deep linear (10,h,h,1), solver {name}: steps to t=1e6",
                r["num_steps"],
                "steps",
                goal=goal,
                ours=f"{r['seconds']:.1f} s, {r['grad_evals']} grad evals (engine count)",
                details=r,
                note=f"solvers {r['solvers']}, loss {r['final_loss']:.1e}, {_fmt_err(r['error'])}",
            )
        )
    return rows


# -- 6. linear branch --------------------------------------------------------------------------
