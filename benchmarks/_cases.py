"""The benchmark cases. Each returns rows: one measured ratio (or count) with its goal.

A row is a dict: `case`, `title`, `params`, `label`, `value`, `unit`, `goal` (text),
`goal_met` (True/False, or None where no goal applies), `anchor`, `ours`, `theirs` (short
text), `details` (everything measured), `command` (what reproduces it).
"""

import dataclasses
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import flows
import models

from . import _competitors as comp
from . import _problem, _profile
from ._timing import best_of, timed

CASES = ("overhead", "scipy", "torch", "gd", "horizon", "linear", "lazy", "alpha")
TITLES = {
    "overhead": "1. solver overhead",
    "scipy": "2. scipy solve_ivp",
    "torch": "3. torchdiffeq",
    "gd": "4. fixed-step GD",
    "horizon": "5. long horizon",
    "linear": "6. linear branch",
    "lazy": "7. gradflows run lazy",
    "alpha": "8. alpha sweep",
}


@dataclasses.dataclass
class Config:
    """What a run measures: sizes, horizon, repeats. `quick` shrinks everything."""

    params: tuple = (10_000, 100_000)
    t1: float = 100.0
    horizon_t1: float = 1e6
    repeats: int = 3
    gd_halvings: int = 4
    alphas: tuple = (1.0, 10.0, 100.0, 1000.0)
    quick: bool = False
    profile: bool = True
    torch_device: str = "cpu"
    script: str = "python benchmarks/run.py --cases {case}{size}"

    def command(self, case, params=None):
        """The command line that reproduces one case at one size."""
        return self.script.format(case=case, size=f" --params {size(params)}" if params else "")


def size(params) -> str:
    """A parameter count as 1e4, 1.1e4, …"""
    return f"{params:.2g}".replace("e+0", "e").replace("e+", "e")


def _row(cfg, case, params, label, value, unit, *, goal=None, goal_params=None, **fields):
    """`goal` is (op, threshold), op "<=" or ">="; it is judged only at `goal_params`
    (all sizes when None)."""
    applies = goal is not None and (goal_params is None or params == goal_params)
    met = None
    if applies and value is not None:
        met = bool(value <= goal[1]) if goal[0] == "<=" else bool(value >= goal[1])
    goal_text = None
    if goal is not None:
        goal_text = f"{goal[0]} {goal[1]:g}" + (f" at p={size(goal_params)}" if goal_params else "")
    row = {
        "case": case,
        "title": TITLES[case],
        "params": params,
        "label": label,
        "value": value,
        "unit": unit,
        "goal": goal_text,
        "goal_met": met,
        "anchor": None,
        "ours": None,
        "theirs": None,
        "details": {},
        "command": cfg.command(case, params),
    }
    row.update(fields)
    return row


def _skip(cfg, case, params, why):
    return _row(cfg, case, params, "skipped", None, "", note=why)


def _fmt_err(e):
    return f"err {e:.1e}"


# -- shared problem instances (one compilation each per process) ----------------------------------
_PROBLEMS: dict = {}


def problem(kind, params, cfg):
    key = (kind, params)
    if key not in _PROBLEMS:
        if kind == "two_layer":
            _PROBLEMS[key] = _problem.two_layer(params, t1=cfg.t1)
        elif kind == "linearized":
            base = problem("two_layer", params, cfg)
            _PROBLEMS[key] = _problem.Problem(
                models.linearize(base.net),
                base.X,
                base.Y,
                flows.SquaredLoss("sum"),
                t1=cfg.t1,
                name="linearised two-layer tanh, squared",
            )
        elif kind == "deep_linear":
            _PROBLEMS[key] = _problem.deep_linear_logistic(params, t1=cfg.horizon_t1)
        else:
            raise ValueError(kind)
    return _PROBLEMS[key]


def _final_only(prob):
    """The user-level call of cases 1–4: save θ at t = 0 and t1 only, Tsit5."""
    return dict(solver="tsit5", ts=np.array([0.0, prob.t1]))


# -- 1. overhead -------------------------------------------------------------------------------
def _bare_loop(prob, steps):
    grad = jax.grad(lambda p: prob.loss(eqx.combine(p, prob.static)))

    @jax.jit
    def run(trainable):
        def body(theta, _):
            g = grad(theta)
            return jax.tree.map(lambda w, gw: w - 1e-3 * gw, theta, g), None

        return jax.lax.scan(body, trainable, None, length=steps)[0]

    return run


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


def case_scipy(cfg, params):
    """`solve_ivp` (RK45, DOP853) calling a jitted gradient, at the error gradflows reaches."""
    prob = problem("two_layer", params, cfg)
    ours = _ours(prob, cfg)
    rows = []
    for method in ("RK45", "DOP853"):

        def run(rtol, atol, method=method):
            best = None
            for _ in range(1 if cfg.quick else 2):
                seconds, theta, nfev = comp.scipy_solve(prob, method, rtol, atol)
                best = seconds if best is None else min(best, seconds)
            return best, prob.error(theta), nfev

        match = comp.at_equal_accuracy(run, ours["error"], prob.rtol, prob.atol / prob.rtol)
        same_tol = match["runs"][0]
        value = None if match["seconds"] is None else match["seconds"] / ours["seconds"]
        rows.append(
            _row(
                cfg,
                "scipy",
                params,
                f"{method} time ÷ gradflows time, equal error",
                value,
                "×",
                goal=(">=", 5.0),
                goal_params=100_000,
                anchor="1.8× (0.69 s / 0.38 s at p=1e4)",
                ours=f"{ours['seconds']:.2f} s, {_fmt_err(ours['error'])}",
                theirs=(
                    f"{match['seconds']:.2f} s at equal error"
                    if match["seconds"] is not None
                    else "never reached the error"
                ),
                details={
                    "gradflows": ours,
                    "scipy": match,
                    "same_tolerance_ratio": same_tol["seconds"] / ours["seconds"],
                    "same_tolerance_error": same_tol["error"],
                },
                note=f"same rtol: {same_tol['seconds'] / ours['seconds']:.2f}×, "
                f"{_fmt_err(same_tol['error'])}",
            )
        )
    return rows


# -- 3. torchdiffeq ----------------------------------------------------------------------------
def case_torch(cfg, params):
    """torchdiffeq dopri5, same network in PyTorch (CPU, float64), same tolerances."""
    why = comp.torch_available()
    if why:
        return [_skip(cfg, "torch", params, why)]
    prob = problem("two_layer", params, cfg)
    ours = _ours(prob, cfg)
    device = cfg.torch_device
    threads = comp.torch_fastest_threads(prob) if device == "cpu" else None
    prob.raw("tsit5")
    secs, out = best_of(
        {
            "raw": lambda: prob.raw("tsit5"),
            "torch": lambda: comp.torchdiffeq_solve(prob, prob.rtol, prob.atol, device=device),
        },
        1 if cfg.quick else 2,
    )
    t_torch, theta_torch, nfev = out["torch"]
    t_torch = min(t_torch, secs["torch"])
    err_torch = prob.error(theta_torch)
    err_raw = prob.error(out["raw"][0])
    details = {
        "gradflows": ours,
        "raw_diffrax_tsit5": {
            "seconds": secs["raw"],
            "error": err_raw,
            "grad_evals": out["raw"][1],
        },
        "torchdiffeq_dopri5": {"seconds": t_torch, "error": err_torch, "nfev": nfev},
        "torch_threads": threads,
        "torch_device": device,
        "torchdiffeq_over_raw_diffrax": t_torch / secs["raw"],
    }
    return [
        _row(
            cfg,
            "torch",
            params,
            "torchdiffeq dopri5 time ÷ gradflows time, same tol",
            t_torch / ours["seconds"],
            "×",
            goal=(">=", 7.0),
            anchor="7.4× (raw diffrax 0.42 s vs 3.1 s at p=1e4)",
            ours=f"{ours['seconds']:.2f} s, {_fmt_err(ours['error'])}",
            theirs=f"{t_torch:.2f} s, {_fmt_err(err_torch)}",
            details=details,
            note=f"vs raw diffrax Tsit5: {t_torch / secs['raw']:.2f}× ({_fmt_err(err_raw)})",
        )
    ]


# -- 4. gradient descent -----------------------------------------------------------------------
def case_gd(cfg, params):
    """Gradient evaluations fixed-step GD needs for the error the flow reaches at t1."""
    prob = problem("two_layer", params, cfg)
    ours = _ours(prob, cfg)
    lam = prob.lambda_max()
    etas = [1.0 / lam / 2**k for k in range(cfg.gd_halvings)]
    fit = comp.gd_error_fit(prob, etas, ours["error"])
    ratio = fit["grad_evals_needed"] / ours["grad_evals"]
    fit["lambda_max_hessian_at_init"] = lam
    fit["estimated_seconds"] = fit["grad_evals_needed"] * fit["seconds_per_step"]
    return [
        _row(
            cfg,
            "gd",
            params,
            "GD grad evals ÷ flow grad evals, same error at t1",
            ratio,
            "×",
            goal=(">=", 1000.0),
            anchor="2.7e3× (2,500 vs 6.8e6)",
            ours=f"{ours['grad_evals']} evals, {_fmt_err(ours['error'])}",
            theirs=f"{fit['grad_evals_needed']:.2g} evals (extrapolated, slope {fit['slope']:.2f})",
            details={"gradflows": ours, "gd": fit},
            note=f"GD would take ~{fit['estimated_seconds']:.3g} s",
        )
    ]


# -- 5. long horizon ---------------------------------------------------------------------------
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
    with stiff_steps=100, "kvaerno5"; logistic deep linear net: "auto")."""
    t1 = cfg.horizon_t1
    prob = problem("two_layer", params, cfg)
    settings = {
        "kvaerno5": dict(solver="kvaerno5"),
        "auto": dict(solver="auto"),
        "auto_stiff_steps_100": dict(solver="auto", stiff_steps=100),
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
                    f"switched at t={r['switched_to_implicit_at']:.3g}; "
                    if r["switched_to_implicit_at"] is not None
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
def case_linear(cfg, params):
    """The linearised two-layer net: `flows.linear_closed_form` (α = 1) against the ODE of
    the same linearised model, time and agreement at 101 save times."""
    prob = problem("linearized", params, cfg)
    base = problem("two_layer", params, cfg)
    ts = flows.log_times(prob.t1, 100)

    def closed_form():
        return flows.linear_closed_form(base.net, (base.X, base.Y), 1.0, ts)

    fns = {"closed_form": closed_form, "ode": lambda: prob.flow(solver="tsit5", ts=ts)}
    cold = {k: timed(f)[0] for k, f in fns.items()}
    secs, out = best_of(fns, cfg.repeats)
    branch, traj = out["closed_form"], out["ode"]
    thetas_cf = np.asarray(base.theta0) + branch.ubar
    trainable, _ = models.partition(traj.params)
    leaves = [np.asarray(x).reshape(len(ts), -1) for x in jax.tree.leaves(trainable)]
    thetas_ode = np.concatenate(leaves, axis=1)
    moved = np.max(np.linalg.norm(branch.ubar, axis=1))
    weight_agreement = float(np.max(np.linalg.norm(thetas_ode - thetas_cf, axis=1)) / moved)
    loss_agreement = float(np.max(np.abs(traj.loss - branch.loss)) / branch.loss[0])
    speed = secs["ode"] / secs["closed_form"]
    return [
        _row(
            cfg,
            "linear",
            params,
            "ODE time ÷ closed-form time (101 save times)",
            speed,
            "×",
            ours=f"flows.linear_closed_form {secs['closed_form']:.3f} s",
            theirs=f"ODE (Tsit5) {secs['ode']:.2f} s, {traj.stats['num_steps']} steps",
            details={
                "seconds": secs,
                "cold_seconds": cold,
                "max_weight_difference_relative_to_distance_moved": weight_agreement,
                "max_loss_difference_relative_to_initial_loss": loss_agreement,
                "ode_stats": traj.stats,
                "closed_form": "flows.linear_closed_form(net, (X, Y), alpha=1, ts)",
            },
            note=f"agree to {weight_agreement:.1e} (weights), {loss_agreement:.1e} (loss)",
        )
    ]


# -- 7. the whole default `gradflows run lazy` ----------------------------------------------------
def _peak_rss_mb(stderr: str):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(m.group(1)) / 1024 if m else None


def case_lazy(cfg, params=None):
    """Wall time and peak memory of the whole default `gradflows run lazy`, in a subprocess."""
    if importlib.util.find_spec("experiments.lazy") is None:
        return [_skip(cfg, "lazy", None, "experiments.lazy is not on this branch yet")]
    if cfg.quick:
        return [_skip(cfg, "lazy", None, "not in --quick (runs the whole default experiment)")]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "experiments", "run", "lazy"]
    gnu_time = shutil.which("time")
    with tempfile.TemporaryDirectory() as work:
        full = [gnu_time, "-v", *cmd] if gnu_time else cmd
        start = time.perf_counter()
        proc = subprocess.run(full, cwd=work, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    peak = _peak_rss_mb(proc.stderr) if gnu_time else None
    if peak is None:
        import resource

        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        return [_skip(cfg, "lazy", None, f"gradflows run lazy failed ({proc.returncode}): {tail}")]
    return [
        _row(
            cfg,
            "lazy",
            None,
            "default `gradflows run lazy`: wall time",
            seconds,
            "s",
            ours=f"{seconds:.1f} s, peak RSS {peak:.0f} MB",
            details={"seconds": seconds, "peak_rss_mb": peak, "command": " ".join(cmd)},
            note=f"peak RSS {peak:.0f} MB",
            command="gradflows run lazy  (timed by " + cfg.command("lazy") + ")",
        )
    ]


# -- 8. α sweep --------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False)
class _AlphaLoss:
    """F_α(w) = R(α(f_w(X) − f_{w0}(X)))/α², with (α, w0) read from a `Frozen` leaf so that
    every α shares one compilation. With `batched`, w and α carry a leading axis and the
    losses are summed: the gradient of the sum is every member's own gradient."""

    X: jax.Array
    Y: jax.Array
    batched: bool

    def single(self, net, alpha, net0):
        h = jax.vmap(net)(self.X) - jax.vmap(net0)(self.X)
        return 0.5 * jnp.sum((alpha * h - self.Y) ** 2) / alpha**2

    def __call__(self, params):
        net, frozen = params
        alpha, net0 = models.read_frozen(frozen)
        if not self.batched:
            return self.single(net, alpha, net0)
        per = eqx.filter_vmap(lambda n, a: self.single(n, a, net0))(net, alpha)
        return jnp.sum(per)


def case_alpha(cfg, params):
    """An α sweep of F_α flows, sequential (one compilation, α traced) against batched: all
    α in one `gradient_flow` (stacked parameters, shared steps), and `jax.vmap` of a raw
    diffrax solve (own steps per member, runs until the slowest finishes)."""
    base = problem("two_layer", params, cfg)
    net, X, Y, t1 = base.net, base.X, base.Y, base.t1
    alphas = jnp.asarray(cfg.alphas)
    A = len(cfg.alphas)
    kw = dict(solver="tsit5", ts=np.array([0.0, t1]), rtol=base.rtol, atol=base.atol)
    loss_seq = _AlphaLoss(X, Y, batched=False)
    loss_bat = _AlphaLoss(X, Y, batched=True)
    trainable, static = models.partition(net)
    stacked = eqx.combine(jax.tree.map(lambda x: jnp.stack([x] * A), trainable), static)

    def flat_final(traj, i=None):
        tr, _ = models.partition(traj.at(-1)[0])
        leaves = jax.tree.leaves(tr)
        if i is not None:
            leaves = [x[i] for x in leaves]
        return jnp.concatenate([jnp.ravel(x) for x in leaves])

    def sequential():
        return [
            flows.gradient_flow(loss_seq, (net, models.Frozen((a, net))), t1, **kw) for a in alphas
        ]

    def stacked_flow():
        return flows.gradient_flow(loss_bat, (stacked, models.Frozen((alphas, net))), t1, **kw)

    def raw_one(alpha):
        tr, st = models.partition((net, models.Frozen((alpha, net))))
        field = _problem._NegGrad(loss_seq, st)
        y1, steps = _problem._raw_solve(
            field,
            _problem.RAW_SOLVERS["tsit5"],
            tr,
            jnp.asarray(t1),
            base.rtol,
            base.atol,
            1_000_000,
        )
        return y1, steps

    raw_vmap = eqx.filter_jit(jax.vmap(raw_one))

    def raw_sequential():
        return [jax.block_until_ready(raw_one(a)) for a in alphas]

    fns = {
        "sequential": sequential,
        "stacked": stacked_flow,
        "raw_sequential": raw_sequential,
        "raw_vmap": lambda: jax.block_until_ready(raw_vmap(alphas)),
    }
    cold = {k: timed(f)[0] for k, f in fns.items()}
    secs, out = best_of(fns, cfg.repeats)
    seq, bat = out["sequential"], out["stacked"]
    moved = [float(jnp.linalg.norm(flat_final(t) - base.theta0)) for t in seq]
    agree = [
        float(jnp.linalg.norm(flat_final(bat, i) - flat_final(s))) / m
        for i, (s, m) in enumerate(zip(seq, moved))
    ]
    ratio = secs["stacked"] / secs["sequential"]
    raw_ratio = secs["raw_vmap"] / secs["raw_sequential"]
    faster = "batched (stacked)" if ratio < 1 else "sequential"
    details = {
        "alphas": list(cfg.alphas),
        "seconds": secs,
        "cold_seconds": cold,
        "compile_seconds_of_a_new_loss_closure": cold["sequential"] - secs["sequential"],
        "steps_sequential": [t.stats["num_steps"] for t in seq],
        "steps_stacked": bat.stats["num_steps"],
        "steps_raw_sequential": [int(s) for _, s in out["raw_sequential"]],
        "steps_raw_vmap": [int(s) for s in out["raw_vmap"][1]],
        "stacked_vs_sequential_difference_relative_to_distance_moved": agree,
        "raw_vmap_over_raw_sequential": raw_ratio,
    }
    if cfg.profile:
        details["lazy_comparison_compile_reuse"] = _lazy_compile_reuse(base, cfg)
    return [
        _row(
            cfg,
            "alpha",
            params,
            f"{A} alphas: batched (stacked) time ÷ sequential time",
            ratio,
            "×",
            ours=f"sequential {secs['sequential']:.2f} s, stacked {secs['stacked']:.2f} s",
            theirs=f"raw vmap {secs['raw_vmap']:.2f} s vs raw loop {secs['raw_sequential']:.2f} s",
            details=details,
            note=f"faster: {faster}; raw vmap/loop {raw_ratio:.2f}×",
        )
    ]


def _lazy_compile_reuse(base, cfg):
    """Time two `lazy_comparison` calls with different α on the same side of
    `remainder_alpha` (30; the remainder form is a static switch): the second should not
    compile."""
    width = 20
    net = models.symmetrize(
        models.TwoLayerNet(_problem.IN_SIZE, width, activation="tanh", key=jax.random.PRNGKey(3)),
        "doubled",
    )
    times = []
    for alpha in (100.0, 1000.0):
        seconds, _ = timed(
            lambda alpha=alpha: flows.lazy_comparison(
                net, (base.X, base.Y), alpha, 1.0, solver="tsit5", rtol=1e-6, atol=1e-9
            )
        )
        times.append(seconds)
    return {
        "width": width,
        "t1": 1.0,
        "alphas": [100.0, 1000.0],
        "first_alpha_s": times[0],
        "second_alpha_s": times[1],
    }


RUNNERS = {
    "overhead": case_overhead,
    "scipy": case_scipy,
    "torch": case_torch,
    "gd": case_gd,
    "horizon": case_horizon,
    "linear": case_linear,
    "lazy": case_lazy,
    "alpha": case_alpha,
}
