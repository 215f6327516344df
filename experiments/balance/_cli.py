"""The options of `gradflows run balance` and the settings they resolve to."""

import argparse

import numpy as np

from .._common import UsageError

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
