"""`gradflows run balance`: balancedness of deep linear networks over long horizons.

Claims checked on two classes of scikit-learn's bundled digits:
- C_k = W_kW_kᵀ − W_{k+1}ᵀW_{k+1} is constant under the gradient flow (Du, Hu & Lee 2018,
  Thm 2.2): the drift stays at solver tolerance to t = 10⁶, at two tolerances;
- gradient descent with step η breaks it by η²(G_kG_kᵀ − G_{k+1}ᵀG_{k+1}) per step, a drift
  linear in η at a fixed horizon;
- with the logistic loss on separable data the layers align, the normalised layers approach
  rank one, the loss falls like 1/t (up to logarithms) and the end-to-end vector turns to the
  hard-margin SVM direction (Soudry et al. 2018; Ji & Telgarsky 2019);
- the squared-loss flow is stiff near its minimum and finishes with the implicit solver;
- two-layer ReLU, leaky-ReLU and absolute-value nets conserve ‖b_j‖² − a_j² per neuron, and
  exact ReLU-type flows chatter at the kinks (a step budget stops them with a clear message).
"""

import argparse
import hashlib
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

import flows
import models

from ._common import UsageError, run_dir, versions, write_json, write_npz
from ._data import digits_pair

DESCRIPTION = (
    "deep linear nets on digits: balancedness to t=1e6, layer alignment, max-margin "
    "direction, GD drift linear in eta"
)
PARTS = ("logistic", "gd", "squared", "homogeneous")
ACTIVATIONS = ("relu", "leaky_relu", "abs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a(
        "--out",
        default=None,
        help="run folder (default runs/balance-<time>); rerunning into the "
        "same folder resumes interrupted flows from their checkpoints",
    )
    a("--parts", default=",".join(PARTS), help=f"comma list of parts to run, from {PARTS}")
    a("--classes", default="3,8", help="two digits, linearly separable (checked)")
    a("--n-train", type=int, default=200, help="training points (both classes together)")
    a("--hidden", default="16,8", help="hidden widths; depth = number of widths + 1 (>= 3)")
    a("--scale", type=float, default=1.0, help="Gaussian init: W_k ~ N(0, scale²/d_(k-1))")
    a("--seed", type=int, default=0, help="seed of the data split and the initialisation")
    a("--t1", type=float, default=1e6, help="horizon of the logistic flows (flow time)")
    a("--n-save", type=int, default=120, help="log-spaced save times per flow")
    a(
        "--rtols",
        default="1e-8,1e-11",
        help="two tolerances of the logistic flow (atol = "
        "rtol/100); the first also records alignment, singular values and the margin",
    )
    a("--etas", default="0.2,0.1,0.05,0.025", help="gradient-descent steps (flow-time units)")
    a("--gd-t1", type=float, default=1e4, help="horizon of the gradient-descent runs")
    a("--squared-t1", type=float, default=1e6, help="horizon of the squared-loss flow")
    a("--max-steps", type=int, default=20_000, help="step budget of each deep linear flow")
    a(
        "--homogeneous-t-short",
        type=float,
        default=0.5,
        help="short horizon of the two-layer flows (per-neuron invariants checked)",
    )
    a("--homogeneous-t1", type=float, default=50.0, help="long horizon of the two-layer flows")
    a(
        "--homogeneous-max-steps",
        type=int,
        default=20_000,
        help="step budget of each two-layer ReLU/leaky-ReLU/abs flow",
    )


# ---------------------------------------------------------------- arguments


def _list(name, text, kind):
    try:
        values = [kind(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{name} must be a comma list of {kind.__name__}s, got {text!r}") from None
    if not values:
        raise UsageError(f"{name} must not be empty")
    return values


def _positive(name, value):
    if not (np.isfinite(value) and value > 0):
        raise UsageError(f"{name} must be finite and > 0, got {value}")
    return float(value)


def _settings(args) -> dict:
    parts = _list("--parts", args.parts, str)
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise UsageError(f"--parts: unknown part(s) {unknown}; choose from {list(PARTS)}")
    classes = _list("--classes", args.classes, int)
    if len(classes) != 2:
        raise UsageError(f"--classes must name two digits, got {args.classes!r}")
    hidden = _list("--hidden", args.hidden, int)
    if len(hidden) < 2 or min(hidden) < 1:
        raise UsageError(f"--hidden needs at least two widths >= 1 (depth >= 3), got {hidden}")
    rtols = [_positive("--rtols", r) for r in _list("--rtols", args.rtols, float)]
    if len(rtols) != 2 or not all(1e-14 <= r <= 1e-3 for r in rtols):
        raise UsageError(f"--rtols must be two tolerances in [1e-14, 1e-3], got {args.rtols!r}")
    etas = sorted({_positive("--etas", e) for e in _list("--etas", args.etas, float)})
    t1 = _positive("--t1", args.t1)
    gd_t1 = _positive("--gd-t1", args.gd_t1)
    if "gd" in parts and len(etas) < 2:
        raise UsageError("--etas needs at least two steps to fit the drift's exponent")
    if "gd" in parts and max(etas) * 10 > gd_t1:
        raise UsageError(f"--gd-t1 ({gd_t1}) must be at least 10 steps of the largest eta")
    if args.n_save < 2:
        raise UsageError(f"--n-save must be >= 2, got {args.n_save}")
    if not 0 <= args.seed <= 2**32 - 1:
        raise UsageError(f"--seed must lie in [0, 2**32 - 1], got {args.seed}")
    for name, value in (
        ("--max-steps", args.max_steps),
        ("--homogeneous-max-steps", args.homogeneous_max_steps),
    ):
        if value < 1:
            raise UsageError(f"{name} must be >= 1, got {value}")
    return {
        "parts": [p for p in PARTS if p in parts],
        "classes": classes,
        "n_train": args.n_train,
        "dims": None,  # filled in from the data
        "hidden": hidden,
        "scale": _positive("--scale", args.scale),
        "seed": args.seed,
        "t1": t1,
        "n_save": args.n_save,
        "rtols": rtols,
        "atol_over_rtol": 1e-2,
        "etas": etas,
        "gd_t1": gd_t1,
        "squared_t1": _positive("--squared-t1", args.squared_t1),
        "max_steps": args.max_steps,
        "homogeneous_t_short": _positive("--homogeneous-t-short", args.homogeneous_t_short),
        "homogeneous_t1": _positive("--homogeneous-t1", args.homogeneous_t1),
        "homogeneous_max_steps": args.homogeneous_max_steps,
        "losses": {"logistic": "mean", "squared": "mean"},
        "solver": {"logistic": "tsit5", "squared": "auto", "homogeneous": "tsit5"},
    }


# ---------------------------------------------------------------- problem


class _Problem:
    """Data, initialisation and objectives, built once (one compilation per objective)."""

    def __init__(self, s: dict):
        try:
            X, y, _, _ = digits_pair(s["classes"], n_train=s["n_train"], n_test=0, seed=s["seed"])
        except ValueError as e:
            raise UsageError(f"--classes/--n-train: {e}") from None
        if not flows.is_linearly_separable(X, y):
            raise UsageError(
                f"--classes {s['classes']}: the {len(y)} training points are not "
                "linearly separable through the origin; choose other digits"
            )
        self.X_np, self.y_np = X, y
        self.X, self.y = jnp.asarray(X), jnp.asarray(y)
        self.dims = [X.shape[1], *s["hidden"], 1]
        self.net0 = models.DeepLinearNet.gaussian(
            self.dims, scale=s["scale"], key=jax.random.PRNGKey(s["seed"])
        )
        self.svm = flows.max_margin(X, y)
        self._logistic = flows.LogisticLoss(s["losses"]["logistic"])
        self._squared = flows.SquaredLoss(s["losses"]["squared"])
        drift = flows.balancedness_drift(self.net0)
        drift_relative = flows.balancedness_drift(self.net0, relative=True)
        self.drift_observables = {"drift": drift, "drift_relative": drift_relative}
        self.observables = {
            **self.drift_observables,
            "singular_values": flows.layer_singular_values,
            "alignment": flows.adjacent_alignment,
            "sigma_ratio": flows.singular_value_ratio,
            "stable_rank": flows.stable_rank,
            "end_to_end": flows.end_to_end,
            "margin": flows.normalised_margin(X, y),
            "angle": flows.max_margin_angle(self.svm.direction),
        }

    def logistic(self, net):
        return self._logistic(jax.vmap(net)(self.X)[:, 0], self.y)

    def squared(self, net):
        return self._squared(jax.vmap(net)(self.X)[:, 0], self.y)


def _flat(observables: dict) -> dict:
    """Observables as flat npz arrays: tuples (singular values per layer) become name_k."""
    out = {}
    for name, value in observables.items():
        if isinstance(value, (tuple, list)):
            out.update({f"{name}_{k}": np.asarray(v) for k, v in enumerate(value)})
        else:
            out[name] = np.asarray(value)
    return out


def _stats(traj) -> dict:
    keep = ("num_steps", "num_rejected_steps", "grad_evals", "solvers", "switched_to_implicit_at")
    return {k: traj.stats[k] for k in keep if k in traj.stats}


def _flow(problem, loss, t1, s, out, tag, *, rtol, solver, observables):
    ts = flows.log_times(t1, s["n_save"], t_min=1e-3 * min(1.0, t1))
    # Keyed by the settings, so a rerun into the same folder resumes only its own solve.
    key = hashlib.sha1(json.dumps(s, sort_keys=True).encode()).hexdigest()[:10]
    checkpoint = os.path.join(out, f".{tag}-{key}.checkpoint.npz")
    try:
        traj = flows.gradient_flow(
            loss,
            problem.net0,
            t1,
            ts=ts,
            solver=solver,
            rtol=rtol,
            atol=s["atol_over_rtol"] * rtol,
            max_steps=s["max_steps"],
            observables=observables,
            save_params=False,
            progress=True,
            checkpoint=checkpoint,
        )
    except flows.MaxStepsReached as e:
        raise UsageError(f"--max-steps: {tag}: {e}") from None
    write_npz(
        os.path.join(out, f"{tag}.npz"), ts=traj.ts, loss=traj.loss, **_flat(traj.observables)
    )
    if os.path.exists(checkpoint):
        os.remove(checkpoint)
    return traj


# ---------------------------------------------------------------- parts


def _logistic_part(problem, s, out, record) -> None:
    runs = []
    for i, rtol in enumerate(s["rtols"]):
        tag = f"logistic_rtol{rtol:.0e}"
        tqdm.write(f"logistic flow to t={s['t1']:.3g}, rtol={rtol:g} ({s['solver']['logistic']})")
        observables = problem.observables if i == 0 else problem.drift_observables
        traj = _flow(
            problem,
            problem.logistic,
            s["t1"],
            s,
            out,
            tag,
            rtol=rtol,
            solver=s["solver"]["logistic"],
            observables=observables,
        )
        obs = traj.observables
        run = {
            "file": f"{tag}.npz",
            "rtol": rtol,
            "atol": s["atol_over_rtol"] * rtol,
            "solver": s["solver"]["logistic"],
            **_stats(traj),
            "drift_max": obs["drift"].max(axis=0),
            "drift_relative_max": obs["drift_relative"].max(axis=0),
            "drift_relative_max_over_rtol": float(obs["drift_relative"].max() / rtol),
            "loss_final": traj.loss[-1],
            "loss_times_t_final": traj.loss[-1] * traj.ts[-1],
        }
        if i == 0:
            i1 = min(int(np.searchsorted(traj.ts, 1.0)), len(traj.ts) - 1)
            run.update(
                {
                    "alignment_initial": obs["alignment"][0],
                    "alignment_final": obs["alignment"][-1],
                    "sigma_ratio_initial": obs["sigma_ratio"][0],
                    "sigma_ratio_final": obs["sigma_ratio"][-1],
                    "stable_rank_final": obs["stable_rank"][-1],
                    "top_singular_values_final": [
                        float(sv[-1, 0]) for sv in obs["singular_values"]
                    ],
                    "normalised_margin_final": obs["margin"][-1],
                    "angle_to_max_margin_at_unit_time": obs["angle"][i1],
                    "angle_to_max_margin_final": obs["angle"][-1],
                    "train_accuracy_final": float(
                        np.mean(np.sign(problem.X_np @ obs["end_to_end"][-1, 0]) == problem.y_np)
                    ),
                }
            )
        runs.append(run)
        record({"t1": s["t1"], "runs": runs})


def _gd_part(problem, s, out, record) -> None:
    runs, T = [], s["gd_t1"]
    loss0 = float(problem.logistic(problem.net0))
    for eta in sorted(s["etas"], reverse=True):
        tqdm.write(f"gradient descent to t={T:.3g}, eta={eta:g} ({round(T / eta)} steps)")
        try:
            traj = flows.gradient_descent(
                problem.logistic,
                problem.net0,
                T,
                eta=eta,
                ts=flows.log_times(T, max(2, s["n_save"] // 2), t_min=eta),
                max_steps=max(1, round(T / eta)),
                observables=problem.drift_observables,
                save_params=False,
                progress=True,
            )
        except FloatingPointError as e:
            raise UsageError(f"--etas: {e}") from None
        tag = f"gd_eta{eta:g}"
        write_npz(
            os.path.join(out, f"{tag}.npz"), ts=traj.ts, loss=traj.loss, **_flat(traj.observables)
        )
        drift_T = float(traj.observables["drift"][-1].sum())
        runs.append(
            {
                "file": f"{tag}.npz",
                "eta": eta,
                "num_steps": traj.stats["num_steps"],
                "drift_at_t1": drift_T,
                "drift_at_t1_over_eta": drift_T / eta,
                "loss_final": traj.loss[-1],
            }
        )
        record({"t1": T, "loss_initial": loss0, "runs": runs})
    etas = np.array([r["eta"] for r in runs])
    drifts = np.array([r["drift_at_t1"] for r in runs])
    exponent = float(np.polyfit(np.log(etas), np.log(drifts), 1)[0])
    small = etas <= np.median(etas)
    exponent_small = (
        float(np.polyfit(np.log(etas[small]), np.log(drifts[small]), 1)[0])
        if small.sum() >= 2
        else None
    )
    record(
        {
            "t1": T,
            "loss_initial": loss0,
            "runs": runs,
            "drift_exponent_in_eta": exponent,
            "drift_exponent_in_eta_smaller_half": exponent_small,
            "note": "drift = sum_k ||C_k(t1) - C_k(0)||_F; per step DC_k = eta^2 (G_k G_k^T - "
            "G_(k+1)^T G_(k+1)), first order in eta over a fixed horizon",
        }
    )


def _squared_part(problem, s, out, record) -> None:
    T = s["squared_t1"]
    tqdm.write(f"squared-loss flow to t={T:.3g} (solver auto: Tsit5, then Kvaerno5 when stiff)")
    rtol = s["rtols"][0]
    traj = _flow(
        problem,
        problem.squared,
        T,
        s,
        out,
        "squared",
        rtol=rtol,
        solver=s["solver"]["squared"],
        observables={**problem.drift_observables, "end_to_end": flows.end_to_end},
    )
    beta_ls = np.linalg.lstsq(problem.X_np, problem.y_np, rcond=None)[0]
    loss_ls = float(problem.squared(models.DeepLinearNet([jnp.asarray(beta_ls)[None, :]])))
    record(
        {
            "file": "squared.npz",
            "t1": T,
            "rtol": rtol,
            "atol": s["atol_over_rtol"] * rtol,
            "solver": s["solver"]["squared"],
            "max_steps": s["max_steps"],
            **_stats(traj),
            "loss_final": traj.loss[-1],
            "loss_least_squares": loss_ls,
            # The digits have constant (zeroed) pixels, so β is unique only up to X's null
            # space: compare predictions, not vectors.
            "prediction_rms_error_vs_least_squares": float(
                np.sqrt(
                    np.mean((problem.X_np @ (traj.observables["end_to_end"][-1, 0] - beta_ls)) ** 2)
                )
            ),
            "drift_max": traj.observables["drift"].max(axis=0),
            "drift_relative_max_over_rtol": float(traj.observables["drift_relative"].max() / rtol),
        }
    )


def _homogeneous_data(problem, n=10, d=3):
    """A tiny problem from the same digits: n points, their top-d principal components."""
    X = problem.X_np[:n] - problem.X_np[:n].mean(axis=0)
    _, _, vt = np.linalg.svd(X, full_matrices=False)
    Z = X @ vt[:d].T
    return jnp.asarray(Z / Z.std(axis=0)), jnp.asarray(problem.y_np[:n])


def _homogeneous_part(problem, s, out, record) -> None:
    X, y = _homogeneous_data(problem)
    squared = flows.SquaredLoss("mean")
    budget, rtol = s["homogeneous_max_steps"], s["rtols"][0]
    horizons = {"short": s["homogeneous_t_short"], "long": s["homogeneous_t1"]}
    runs = {}
    summary = {
        "horizons": horizons,
        "max_steps": budget,
        "rtol": rtol,
        "atol": s["atol_over_rtol"] * rtol,
        "solver": s["solver"]["homogeneous"],
        "data": "first 10 training digits, top 3 principal components, targets ±1",
        "width": 8,
        "runs": runs,
        "note": "an exhausted budget here is chatter, not stiffness: a neuron slides along a "
        "kink b_j·x_i = 0, where the vector field jumps, and the explicit step collapses",
    }
    for name in ACTIVATIONS:
        net0 = models.TwoLayerNet(X.shape[1], 8, activation=name, key=jax.random.PRNGKey(s["seed"]))
        scale = np.maximum(1.0, np.asarray(jnp.sum(net0.b**2, 1) + net0.a**2))

        def loss(net):
            return squared(jax.vmap(net)(X), y)

        runs[name] = {}
        for horizon, T in horizons.items():  # same grid length and budget: one compilation
            tqdm.write(f"two-layer {name} net (width 8) to t={T:g}, budget {budget} steps")
            try:
                traj = flows.gradient_flow(
                    loss,
                    net0,
                    T,
                    ts=np.linspace(0.0, T, 41),
                    solver=s["solver"]["homogeneous"],
                    rtol=rtol,
                    atol=s["atol_over_rtol"] * rtol,
                    max_steps=budget,
                    observables={"neuron": flows.neuron_balancedness},
                    save_params=False,
                    progress=True,
                )
            except flows.MaxStepsReached as e:
                runs[name][horizon] = {"t1": T, "status": "max_steps reached", "message": str(e)}
                record(summary)
                continue
            inv = traj.observables["neuron"]
            tag = f"homogeneous_{name}_{horizon}"
            write_npz(os.path.join(out, f"{tag}.npz"), ts=traj.ts, loss=traj.loss, neuron=inv)
            drift = np.abs(inv - inv[0])
            runs[name][horizon] = {
                "t1": T,
                "status": "finished",
                "file": f"{tag}.npz",
                **_stats(traj),
                "neuron_drift_max": float(drift.max()),
                "neuron_drift_max_over_rtol_scale": float((drift / scale).max() / rtol),
                "loss_final": traj.loss[-1],
            }
            record(summary)


_PART_FUNCTIONS = {
    "logistic": _logistic_part,
    "gd": _gd_part,
    "squared": _squared_part,
    "homogeneous": _homogeneous_part,
}


def run(args) -> int:
    from ._balance_plots import plot

    s = _settings(args)
    problem = _Problem(s)
    out = run_dir(args.out, "balance")
    s["dims"] = problem.dims
    data = {
        "source": "sklearn.datasets.load_digits (bundled)",
        "classes": s["classes"],
        "n_train": len(problem.y_np),
        "features": "standardised pixels (64)",
        "linearly_separable_through_origin": True,
        "separability_check": "scipy.optimize.linprog (HiGHS): y_i<w, x_i> >= 1 feasible",
        "max_margin": {
            "margin": problem.svm.margin,
            "support_size": len(problem.svm.support),
            **problem.svm.solver,
        },
    }
    config = {"experiment": "balance", "settings": s, "data": data, "versions": versions()}
    write_json(os.path.join(out, "config.json"), config)
    results = {**config}
    tqdm.write(
        f"digits {s['classes']}: {len(problem.y_np)} points, separable through the "
        f"origin, SVM margin {problem.svm.margin:.4g}; dims {problem.dims}; run folder {out}"
    )
    for part in s["parts"]:

        def record(value, part=part):  # after every run: finished work survives interruption
            results[part] = value
            write_json(os.path.join(out, "results.json"), results)

        _PART_FUNCTIONS[part](problem, s, out, record)
    figures = plot(out)
    _summary(results, figures)
    return 0


def _summary(results, figures) -> None:
    lines = []
    for run in results.get("logistic", {}).get("runs", []):
        lines.append(
            f"logistic rtol {run['rtol']:g}: {run['num_steps']} steps, "
            f"{run['grad_evals']} evals, max drift/max(1,|W|²) = "
            f"{run['drift_relative_max_over_rtol']:.3g}·rtol"
        )
        if "alignment_final" in run:
            lines.append(
                f"  alignment {np.round(run['alignment_final'], 4).tolist()}, angle to "
                f"max margin {run['angle_to_max_margin_final']:.4g} rad, margin "
                f"{run['normalised_margin_final']:.4g} (SVM "
                f"{results['data']['max_margin']['margin']:.4g})"
            )
    if "gd" in results:
        lines.append(f"GD drift exponent in eta: {results['gd']['drift_exponent_in_eta']:.3f}")
    if "squared" in results:
        sq = results["squared"]
        switch = sq["switched_to_implicit_at"]
        how = (
            "implicit from the start"
            if switch is None
            else f"switched to implicit at t={switch:.4g}"
        )
        lines.append(f"squared: {sq['num_steps']} steps, solvers {sq['solvers']} ({how})")
    for name, runs in results.get("homogeneous", {}).get("runs", {}).items():
        for run in runs.values():
            done = run["status"] == "finished"
            lines.append(
                f"{name} to t={run['t1']:g}: "
                + (
                    f"{run['num_steps']} steps, per-neuron drift "
                    f"{run['neuron_drift_max_over_rtol_scale']:.3g}·rtol"
                    if done
                    else run["message"].split(";")[0]
                )
            )
    lines.append("figures: " + (", ".join(figures) or "none for these parts"))
    tqdm.write("\n".join(lines))
