"""The options of `gradflows run lazy` and the settings they resolve to."""

import argparse
import json
import math
import os

from .. import _sweep
from .._common import UsageError

DEFAULT_ALPHAS = [float(10 ** (k / 2)) for k in range(13)]  # 10^0 ... 10^6, half-decades


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
    _sweep.add_arguments(p)


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
    if len(set(out)) < len(out):
        raise UsageError(f"--alphas: each α once, got {', '.join(f'{a:g}' for a in out)}")
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
    import models  # JAX only once a run starts: `gradflows list` stays cheap

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
