"""`gradflows run lazy`: lazy training against its linearisation over a sweep of α.

Chizat, Oyallon & Bach 2019, "On Lazy Training in Differentiable Programming": Theorem 2.2
(finite horizon), Theorem 2.4 (uniform in time) and Proposition A.1 (held-out inputs), checked
on real data. For each α the flows of F_α(w) = R(αh(w))/α² and of its linearisation F̄_α are
integrated jointly (`flows.lazy_comparison`) and their sup gaps measured; the theorems'
constants come from `flows.lazy_constants`.

The run folder holds `config.json`, one `alpha-XX.json`/`.npz` part per finished α (each
written atomically, so an interrupted sweep keeps them and `--resume DIR` goes on from there),
then `results.json`, `trajectories.npz` and four figures (`experiments._lazy_plots`).
"""

import argparse
import hashlib
import json
import math
import os
import time

import jax
import numpy as np
from tqdm.auto import tqdm

import flows
import models

from . import _data
from ._common import UsageError, run_dir, versions, write_json, write_npz

DESCRIPTION = (
    "lazy training vs its linearisation over alpha on real data "
    "(Chizat, Oyallon & Bach 2019, Thms 2.2/2.4, Prop. A.1)"
)

DEFAULT_ALPHAS = [float(10 ** (k / 2)) for k in range(13)]  # 10^0 ... 10^6, half-decades
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
EXPECTED_SLOPES = {
    "doubled": {"weight_gap": -2, "output_gap": -2, "heldout_output_gap": -2, "distance": -1},
    "centred": {"weight_gap": -2, "output_gap": -1, "heldout_output_gap": -1, "distance": -1},
}

# Settings that determine the results (recorded in config.json; a resumed run keeps them).
DEFAULTS = {
    "data": "digits",
    "classes": "3,8",
    "n_train": 100,
    "n_test": 100,
    "dim": 16,
    "teacher_neurons": 3,
    "target": "target",
    "width": 256,
    "depth": 1,
    "activation": "gelu",
    "symmetrize": "doubled",
    "seed": 0,
    "alphas": None,
    "t1": None,
    "loss_decades": 6.0,
    "n_times": 100,
    "solver": "tsit5",
    "rtol": 1e-10,
    "atol": 1e-12,
    "max_steps": 200_000,
    "remainder_alpha": 1000.0,
    "nodes": 2,
    "rate_window": 0.5,
    "lip_radius": 1.0,
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    g = p.add_argument_group("data")
    g.add_argument(
        "--data",
        default=d["data"],
        help="'digits' (scikit-learn's bundled 8x8 digits, two classes, targets ±1), "
        "'teacher' (inputs on the sphere, ReLU teacher), or a .csv/.npz FILE "
        "(CSV: header row, numeric columns, one named by --target; NPZ: arrays X (n, d) and "
        "the --target array (n,)). Default: %(default)s",
    )
    g.add_argument("--classes", default=d["classes"], help="digits: two classes (default 3,8)")
    g.add_argument("--n-train", type=int, default=d["n_train"], help="training points (100)")
    g.add_argument("--n-test", type=int, default=d["n_test"], help="held-out points (100)")
    g.add_argument("--dim", type=int, default=d["dim"], help="teacher: input dimension (16)")
    g.add_argument(
        "--teacher-neurons", type=int, default=d["teacher_neurons"], help="teacher: neurons (3)"
    )
    g.add_argument("--target", default=d["target"], help="FILE: target column/array (target)")
    g = p.add_argument_group("model")
    g.add_argument("--width", type=int, default=d["width"], help="hidden width (256)")
    g.add_argument(
        "--depth",
        type=int,
        default=d["depth"],
        help="hidden layers: 1 is the bias-free two-layer net f = m^-1/2 Σ a_j σ(b_j·x) "
        "(models.TwoLayerNet); >1 is models.MLP without biases, N(0, 1/fan-in) weights (1)",
    )
    g.add_argument(
        "--activation",
        default=d["activation"],
        help="gelu, tanh, softplus (smooth), relu, abs, leaky_relu (default gelu)",
    )
    g.add_argument(
        "--symmetrize",
        choices=("doubled", "centred"),
        default=d["symmetrize"],
        help="h(w0) = 0 by f(w1) − f(w2), both trained (doubled), or f(w) − f(w0) with w0 "
        "frozen (centred). Default: %(default)s",
    )
    g.add_argument("--seed", type=int, default=d["seed"], help="model and data split seed (0)")
    g = p.add_argument_group("flow")
    g.add_argument(
        "--alphas",
        nargs="+",
        default=d["alphas"],
        help="scales α > 0 (space- or comma-separated); default 10^0 ... 10^6 in half-decades",
    )
    g.add_argument(
        "--t1",
        type=float,
        default=d["t1"],
        help="horizon (flow time); default: D·ln(10)/(2·λ_min(Σ)), D = --loss-decades, so the "
        "linearised loss falls by at least 10^D",
    )
    g.add_argument("--loss-decades", type=float, default=d["loss_decades"], help="D (6)")
    g.add_argument(
        "--n-times",
        type=int,
        default=d["n_times"],
        help="log-spaced save times (100), plus 20 evenly spaced ones for the late tail",
    )
    g.add_argument(
        "--solver",
        choices=("tsit5", "dopri5", "dopri8", "kvaerno5", "auto"),
        default=d["solver"],
        help="diffrax solver (default %(default)s; see flows.gradient_flow)",
    )
    g.add_argument("--rtol", type=float, default=d["rtol"], help="relative tolerance (1e-10)")
    g.add_argument("--atol", type=float, default=d["atol"], help="absolute tolerance (1e-12)")
    g.add_argument("--max-steps", type=int, default=d["max_steps"], help="per α (200000)")
    g.add_argument(
        "--remainder-alpha",
        type=float,
        default=d["remainder_alpha"],
        help="α above this use the Taylor-remainder form of lazy_comparison, α up to it the "
        "direct form (3x cheaper, accurate to ~1e-6 relative at 1000). Default: 1000",
    )
    g.add_argument(
        "--nodes",
        type=int,
        default=d["nodes"],
        help="Gauss-Legendre nodes of the remainder integrals (default 2: exact to round-off "
        "for α > 1000, where ‖w − w0‖ < 1e-3; 30%% cheaper than 3 with gaps equal to 7 digits)",
    )
    g.add_argument(
        "--rate-window",
        type=float,
        default=d["rate_window"],
        help="the late rate is fitted over t in [(1 − w)·t1, t1] (w = 0.5)",
    )
    g.add_argument(
        "--lip-radius",
        type=float,
        default=d["lip_radius"],
        help="Lip(Dh) is estimated at w0 and at random points this far from it (1)",
    )
    g = p.add_argument_group("output")
    g.add_argument("--out", default=None, help="run folder (default runs/lazy-<timestamp>)")
    g.add_argument(
        "--resume",
        default=None,
        metavar="DIR",
        help="continue an interrupted run in DIR; finished α are not computed again",
    )
    g.add_argument("--no-progress", action="store_true", help="no progress bars")


# ---------------------------------------------------------------------------------------------
# Settings


def _alphas(values) -> list[float]:
    if values is None:
        return list(DEFAULT_ALPHAS)
    out = []
    for token in ",".join(values).split(","):
        if not token.strip():
            continue
        try:
            a = float(token)
        except ValueError:
            raise UsageError(f"--alphas: {token!r} is not a number") from None
        if not (math.isfinite(a) and a > 0):
            raise UsageError(f"--alphas must be finite numbers > 0, got {token.strip()}")
        out.append(a)
    if not out:
        raise UsageError("--alphas is empty: give at least one α > 0")
    return out


def _settings(args) -> dict:
    s = {key: getattr(args, key) for key in DEFAULTS}
    s["alphas"] = _alphas(s["alphas"])
    for key, low, high in (
        ("width", 1, 100_000),
        ("depth", 1, 64),
        ("n_train", 2, 10**6),
        ("n_test", 0, 10**6),
        ("n_times", 2, 100_000),
        ("max_steps", 1, 10**9),
        ("nodes", 2, 16),
        ("dim", 2, 100_000),
        ("teacher_neurons", 1, 100_000),
        ("seed", 0, 2**32 - 1),
    ):
        if not low <= s[key] <= high:
            raise UsageError(f"--{key.replace('_', '-')} must lie in [{low}, {high}], got {s[key]}")
    for key in ("rtol", "atol", "loss_decades", "remainder_alpha"):
        if not (math.isfinite(s[key]) and s[key] > 0):
            raise UsageError(f"--{key.replace('_', '-')} must be finite and > 0, got {s[key]}")
    if s["t1"] is not None and not (math.isfinite(s["t1"]) and s["t1"] > 0):
        raise UsageError(f"--t1 must be finite and > 0, got {s['t1']}")
    if not 0 < s["rate_window"] < 1:
        raise UsageError(f"--rate-window must lie in (0, 1), got {s['rate_window']}")
    if not (math.isfinite(s["lip_radius"]) and s["lip_radius"] >= 0):
        raise UsageError(f"--lip-radius must be finite and >= 0, got {s['lip_radius']}")
    try:
        models.activation(s["activation"])
    except ValueError as e:
        raise UsageError(f"--activation: {e}") from None
    return s


def _stored_config(folder: str) -> dict:
    try:
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)
        if not isinstance(config, dict) or any(key not in config for key in DEFAULTS):
            raise ValueError
        return config
    except (OSError, ValueError):
        raise UsageError(f"--resume {folder!r}: no readable config.json of a lazy run") from None


def _resumed(folder: str, s: dict) -> dict:
    """The settings recorded in `folder`; options given now must agree with them."""
    config = _stored_config(folder)
    stored = {key: config[key] for key in DEFAULTS}  # t1: the horizon the run resolved
    for key, value in s.items():
        given = DEFAULT_ALPHAS if key == "alphas" and DEFAULTS[key] is None else DEFAULTS[key]
        if value != given and value != stored.get(key):
            raise UsageError(
                f"--resume {folder!r}: --{key.replace('_', '-')} {value} differs from the run's "
                f"{stored.get(key)}; drop the option or start a new run"
            )
    return stored


# ---------------------------------------------------------------------------------------------
# Inputs


def load_data(s: dict):
    """(X_train, y_train, X_test, y_test, description) for the settings `s`."""
    name = s["data"]
    try:
        if name == "digits":
            try:
                classes = tuple(int(c) for c in s["classes"].split(","))
            except ValueError:
                classes = ()
            if len(classes) != 2:
                raise ValueError(f"--classes must be two digits like 3,8, got {s['classes']!r}")
            split = _data.digits_pair(classes, s["n_train"], s["n_test"], s["seed"])
            what = f"scikit-learn digits {classes[0]} (−1) vs {classes[1]} (+1), standardised"
        elif name == "teacher":
            split = _data.teacher(
                s["n_train"], s["n_test"], s["dim"], s["teacher_neurons"], s["seed"]
            )
            what = (
                f"inputs uniform on the sphere in R^{s['dim']}, ReLU teacher with "
                f"{s['teacher_neurons']} neurons, targets scaled to unit RMS"
            )
        elif os.path.exists(name):
            split = _data.table(name, s["target"], s["n_train"], s["n_test"], s["seed"])
            what = f"file {name!r}, target {s['target']!r}, features standardised"
        else:
            raise ValueError(
                f"--data {name!r}: neither 'digits' nor 'teacher', and no such file "
                "(give a .csv or .npz path)"
            )
    except ValueError as e:
        raise UsageError(str(e)) from None
    return (*split, what)


def build_model(s: dict, in_size: int):
    """The symmetrised network of the settings (h(w0) = 0)."""
    key = jax.random.PRNGKey(s["seed"])
    if s["depth"] == 1:
        net = models.TwoLayerNet(in_size, s["width"], activation=s["activation"], key=key)
    else:
        net = models.MLP(
            in_size, s["width"], s["depth"], activation=s["activation"], bias=False, key=key
        )
    return models.symmetrize(net, s["symmetrize"])


def save_times(t1: float, lambda_max: float, n: int) -> np.ndarray:
    """`flows.lazy_save_times` (kept for callers of this module)."""
    return flows.lazy_save_times(t1, lambda_max, n)


# ---------------------------------------------------------------------------------------------
# One α


def _part(folder: str, i: int, ext: str) -> str:
    return os.path.join(folder, f"alpha-{i:02d}.{ext}")


def solve_alpha(i, alpha, model, data, heldout, s, ts, folder, progress) -> dict:
    """Run one α, write its part files, return its record."""
    checkpoint = os.path.join(folder, f".alpha-{i:02d}.checkpoint.npz")
    remainder = bool(alpha > s["remainder_alpha"])
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
            solver=s["solver"],
            rtol=s["rtol"],
            atol=s["atol"],
            max_steps=s["max_steps"],
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
        rate=flows.late_rate(ts, res.residual, start=window, floor=floor),
        rate_linearized=flows.late_rate(ts, res.residual_linearized, start=window, floor=floor),
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


# ---------------------------------------------------------------------------------------------
# The sweep


def _theory(constants, s, t1) -> dict:
    out = constants.summary()
    out.update(
        loss="R(y) = ½‖y − y*‖² (sum over the training outputs)",
        t1=t1,
        expected_slopes=EXPECTED_SLOPES[s["symmetrize"]],
        theorem_2_2_bound="sqrt(t1 · R(α h(w0))) / α",
        theorem_2_4_bound="sqrt(κ) ‖α h(w0) − y*‖ exp(−m σ_min² t / 4), bounds ‖α h(w_α(t)) − y*‖",
        theorem_2_4_conditions="σ_min > 0, ‖h(w0)‖ ≤ C0 and α > ‖y*‖/C0 = alpha_min",
        rate_definition=(
            "minus the least-squares slope of log ‖αh(w_α(t)) − y*‖ (= log sqrt(2R)) over "
            f"t in [{1 - s['rate_window']:g}·t1, t1]; the loss R decays at twice this rate"
        ),
    )
    return out


def _fits(runs, heldout: bool) -> dict:
    ok = [r for r in runs if not r["failed"]]
    alphas = [r["alpha"] for r in ok]
    slope = lambda key: flows.loglog_slope(alphas, [r[key] for r in ok])  # noqa: E731
    return {
        "weight_gap_slope": slope("sup_weight_gap"),
        "output_gap_slope": slope("sup_output_gap"),
        "heldout_output_gap_slope": slope("sup_heldout_output_gap") if heldout else None,
        "distance_slope": slope("sup_distance_from_init"),
    }


def run(args) -> int:
    s = _settings(args)
    progress = not args.no_progress
    if args.resume is not None:
        if not os.path.isdir(args.resume):
            raise UsageError(f"--resume {args.resume!r}: no such folder")
        s = _resumed(args.resume, s)
    X, Y, X_test, Y_test, data_what = load_data(s)  # bad data fails before a folder is made
    data_sha256 = hashlib.sha256(
        b"".join(
            np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in (X, Y, X_test, Y_test)
        )
    ).hexdigest()
    if args.resume is not None:
        stored = _stored_config(args.resume).get("data_sha256")
        if stored is not None and stored != data_sha256:
            raise UsageError(
                f"--resume {args.resume!r}: the data differ from the run's (SHA-256 of the "
                "training and held-out arrays); start a new run"
            )
    elif args.out is not None and os.path.exists(os.path.join(args.out, "config.json")):
        raise UsageError(
            f"--out {args.out!r} already holds a run: continue it with --resume {args.out} "
            "or choose a new --out"
        )
    folder = args.resume if args.resume is not None else run_dir(args.out, "lazy")
    model = build_model(s, X.shape[1])
    smooth = s["activation"] not in NON_SMOOTH
    constants = flows.lazy_constants(
        model,
        (X, Y),
        loss=LOSS,
        estimate_lip=smooth,
        lip_radius=s["lip_radius"],
        key=jax.random.PRNGKey(s["seed"] + 1),
    )
    t1 = s["t1"]
    if t1 is None:
        if constants.lambda_min <= 1e-12 * constants.lambda_max:
            raise UsageError(
                f"--t1: the NTK Gram matrix is singular (λ_min = {constants.lambda_min:.3g}), "
                "so no horizon makes the loss fall by 10^D; give --t1"
            )
        t1 = flows.lazy_horizon(constants.lambda_min, s["loss_decades"])
    ts = save_times(t1, constants.lambda_max, s["n_times"])
    heldout = X_test if len(X_test) else None
    config = {
        **s,
        "t1": t1,
        "t1_rule": "given (--t1)"
        if s["t1"] is not None
        else f"D·ln(10)/(2·λ_min(Σ)) with D = --loss-decades = {s['loss_decades']:g}",
        "data_description": data_what,
        "data_sha256": data_sha256,
        "n_train": int(len(Y)),
        "n_test": int(len(Y_test)),
        "in_size": int(X.shape[1]),
        "n_params": constants.n_params,
        "model": (
            f"{s['symmetrize']} {'TwoLayerNet' if s['depth'] == 1 else 'MLP'} "
            f"(width {s['width']}, depth {s['depth']}, {s['activation']})"
        ),
        "loss": "squared, sum: R(y) = ½‖y − y*‖²",
        "n_save_times": int(len(ts)),
        "dtype": "float64",
    }
    if args.resume is None:
        write_json(os.path.join(folder, "config.json"), config)
    else:
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)

    records = []
    done = [_finished(folder, i) for i in range(len(s["alphas"]))]
    bar = tqdm(
        total=len(s["alphas"]),
        initial=sum(r is not None for r in done),
        desc="alpha sweep",
        unit="alpha",
        disable=not progress,
    )
    try:
        for i, alpha in enumerate(s["alphas"]):
            record = done[i]
            if record is None:
                record = solve_alpha(i, alpha, model, (X, Y), heldout, s, ts, folder, progress)
                bar.update(1)
            records.append(record)
    finally:
        bar.close()

    write_results(folder, config, records, constants, s, t1)
    from ._lazy_plots import plot  # matplotlib only when drawing: `gradflows list` stays fast

    figures = plot(folder)
    print_summary(folder, figures)
    return 1 if any(r["failed"] for r in records) else 0


RUN_KEYS = (  # the stable per-α schema of results.json, in this order
    "alpha",
    "sup_weight_gap",
    "sup_output_gap",
    "sup_heldout_output_gap",
    "sup_distance_from_init",
    "final_loss",
    "final_loss_linearized",
    "rate",
    "theorem_2_4_rate",
    "symmetrize",
)


def write_results(folder, config, records, constants, s, t1) -> None:
    """results.json and trajectories.npz from the parts of every α."""
    runs, series = [], {}
    for rec in records:
        alpha = rec["alpha"]
        extra = {
            "theorem_2_4_rate": constants.theorem_2_4_rate,
            "symmetrize": s["symmetrize"],
            "theorem_2_2_bound": flows.theorem_2_2_bound(
                alpha,
                t1,
                float(LOSS(alpha * constants.h0, constants.y_star)),  # R(αh(w0))
            ),
            "theorem_2_4_conditions_hold": constants.theorem_2_4_conditions(alpha),
        }
        if not rec["failed"]:
            with np.load(_part(folder, rec["index"], "npz")) as part:
                arrays = {key: part[key] for key in part.files}
            arrays["theorem_2_4_bound"] = flows.theorem_2_4_bound(arrays["ts"], alpha, constants)
            # measured: ‖αh(w_α(t)) − y*‖ ≤ bound at every save time (1e-9: round-off at t = 0)
            extra["theorem_2_4_bound_held"] = bool(
                np.all(arrays["residual"] <= arrays["theorem_2_4_bound"] * (1 + 1e-9))
            )
            for key, value in arrays.items():
                series.setdefault(key, []).append(value)
        run = {key: rec.get(key, extra.get(key)) for key in RUN_KEYS}
        run.update(extra)
        run.update({k: v for k, v in rec.items() if k not in run})
        runs.append(run)
    results = {
        "experiment": "lazy",
        "config": config,
        "versions": versions(),
        "runs": runs,
        "fits": _fits(runs, heldout=config["n_test"] > 0),
        "theory": _theory(constants, s, t1),
    }
    write_json(os.path.join(folder, "results.json"), results)
    out = {"alphas": np.array([r["alpha"] for r in runs if not r["failed"]])}
    for key, stack in series.items():
        out[key] = stack[0] if key == "ts" else np.stack(stack)
    write_npz(os.path.join(folder, "trajectories.npz"), **out)


def _fmt(x, spec=".3e"):
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    return format(x, spec)


# (header, key in a run record, format) of the summary table.
COLUMNS = (
    ("alpha", "alpha", ".3g"),
    ("sup|w-wbar|", "sup_weight_gap", ".3e"),
    ("sup out gap", "sup_output_gap", ".3e"),
    ("sup heldout", "sup_heldout_output_gap", ".3e"),
    ("sup|w-w0|", "sup_distance_from_init", ".3e"),
    ("Thm2.2 bnd", "theorem_2_2_bound", ".3e"),
    ("R(t1)", "final_loss", ".2e"),
    ("Rbar(t1)", "final_loss_linearized", ".2e"),
    ("rate", "rate", ".3f"),
    ("Thm2.4 ok", "theorem_2_4_conditions_hold", ""),
    ("bound held", "theorem_2_4_bound_held", ""),
    ("steps", "steps", "d"),
    ("time s", "wall_s", ".1f"),
)


def print_summary(folder: str, figures) -> None:
    """The table of results.json: one row per α, then the fits beside the theory."""
    with open(os.path.join(folder, "results.json")) as f:
        res = json.load(f)
    th, fits = res["theory"], res["fits"]
    print(" ".join(f"{h:>11}" for h, _, _ in COLUMNS))
    for r in res["runs"]:
        if r["failed"]:
            print(f"{r['alpha']:>11.3g} failed: {r['reason']}")
        else:
            print(" ".join(f"{_fmt(r.get(k), spec):>11}" for _, k, spec in COLUMNS))
    exp = th["expected_slopes"]
    print("log-log slopes over alpha (measured / expected):")
    for key, name in (
        ("weight_gap", "weight gap"),
        ("output_gap", "output gap"),
        ("heldout_output_gap", "held-out gap"),
        ("distance", "distance"),
    ):
        print(f"  {name:13s} {_fmt(fits[key + '_slope'], '+.3f')} / {exp[key]:+d}")
    rates = [r["rate"] for r in res["runs"] if not r["failed"] and r["rate"] is not None]
    print(
        f"lambda_min(Sigma) = {th['lambda_min']:.4g}, lambda_max = {th['lambda_max']:.4g}, "
        f"Thm 2.4 rate m*sigma_min^2/4 = {th['theorem_2_4_rate']:.4g}"
    )
    if rates and th["lambda_min"] > 0 and th["theorem_2_4_rate"] > 0:
        med = float(np.median(rates))
        print(
            f"late rate (median over alpha) = {med:.4g} = {med / th['lambda_min']:.3f} lambda_min"
            f" = {med / th['theorem_2_4_rate']:.3f} x the theorem's rate"
        )
    if th["C0"] is not None:
        print(
            f"Thm 2.4: Lip(Dh) ~ {th['lip_jacobian']:.4g} (lower estimate), C0 = {th['C0']:.3g},"
            f" conditions hold for alpha > {th['alpha_min']:.3g}"
        )
    else:
        print(f"Thm 2.4: C0 not computed ({th['lip_method']})")
    drawn = ", ".join(os.path.basename(p) for p in figures) or "no figures (no α finished)"
    print(f"wrote {folder}/: results.json, trajectories.npz, {drawn}")
