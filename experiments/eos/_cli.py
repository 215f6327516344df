"""The options of `gradflows run eos` and the settings they resolve to."""

import argparse
import math

from .._options import (
    UsageError,
    add_list,
    bounded,
    flag,
    parse_list,
    positive,
    solve_settings,
)
from .._run_folder import add_run_folder_options
from .._sizes import MAX_PARAMETERS, largest_width
from .._sweep_options import add_sweep_options
from ._optimizer import OPTIMIZERS, build

#: The fewest saves of GD's sharpness (and of the flows) after t = 0 at each η.
MIN_SAVE_INTERVALS = 2

DATA = ("random", "digits")
ACTIVATIONS = ("swish", "tanh")
TASKS = ("multiclass", "binary")
LOSSES = ("mse", "cross_entropy")
FLOW_SOLVERS = ("tsit5", "dopri5", "dopri8")  # the central flow's explicit solvers
FLOWS = ("gradient", "modified", "central")
MAX_GD_STEPS = 200_000  # gradient-descent steps of one η (every step is kept)

DEFAULTS = {
    "data": "random",
    "dim": 8,
    "classes": "all",
    "task": "multiclass",
    "n_train": 128,
    "width": 16,
    "depth": 2,
    "activation": "swish",
    "output_scale": 1.0,
    "loss": "mse",
    "etas": "0.2",
    "t1": 200.0,
    "k": 1,
    "flows": ",".join(FLOWS),
    "sharpness_every": 2,
    "solver": "tsit5",
    "rtol": 1e-6,
    "atol": 1e-8,
    "max_steps": None,  # the library's (flows.SolveSettings)
    "optimizer": "gd",
    "beta": 0.9,
    "beta1": 0.9,
    "beta2": None,  # per optimizer: 0.99 (rmsprop), 0.999 (adam)
    "eps": 1e-8,
    "uv_width": 1000,
    "uv_points": 91,
    "uv_steps": 2000,
    "seed": 1,
}

# The digits problem that the defaults were before (64 → 32 → 32 → 10 tanh, 3,466
# parameters): `dict(DEFAULTS, **DIGITS)` (benchmarks/adaptive_eos.py, catapult_schedule.py).
DIGITS = {"data": "digits", "n_train": 100, "width": 32, "depth": 2, "activation": "tanh",
          "output_scale": 0.1, "classes": list(range(10)), "t1": 80.0, "seed": 0}  # fmt: skip


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    g = p.add_argument_group("data, model and loss")
    g.add_argument(
        "--data",
        choices=DATA,
        default=d["data"],
        help="random: --n-train standard-normal points in R^--dim with standard-normal "
        "targets, one output (the example of Cohen et al. 2025's JAX code); digits: "
        "scikit-learn's bundled digits, 64 pixels, --classes and --task (random)",
    )
    g.add_argument("--dim", type=int, default=d["dim"], help="input dimension of --data random (8)")
    add_list(
        g,
        "--classes",
        default=d["classes"],
        help="--data digits: 'all' (the ten classes) or two or more different digits (all)",
    )
    g.add_argument(
        "--task",
        choices=TASKS,
        default=d["task"],
        help="--data digits: multiclass: one output per class, one-hot targets (MSE) or labels "
        "(cross-entropy); binary: two classes, one output, targets ±1 (multiclass)",
    )
    g.add_argument("--n-train", type=int, default=d["n_train"], help="training points (128)")
    g.add_argument("--width", type=int, default=d["width"], help="hidden width of the MLP (16)")
    g.add_argument("--depth", type=int, default=d["depth"], help="hidden layers of the MLP (2)")
    g.add_argument(
        "--activation",
        choices=ACTIVATIONS,
        default=d["activation"],
        help="the MLP's activation: swish s·sigmoid(s) or tanh (swish)",
    )
    g.add_argument(
        "--output-scale",
        type=float,
        default=d["output_scale"],
        help="the output layer's initial weights times this (1); 0.1 on digits: small "
        "initial outputs, so that training starts with sharpening rather than shrinking them",
    )
    g.add_argument(
        "--loss",
        choices=LOSSES,
        default=d["loss"],
        help="mse: mean over points of ½‖f − onehot‖²; cross_entropy: mean softmax "
        "cross-entropy (mse)",
    )
    g.add_argument("--seed", type=int, default=d["seed"], help="data (split or draw) and init (1)")
    g = p.add_argument_group("gradient descent and the flows")
    add_list(g, "--etas", default=d["etas"], help=f"GD step sizes η, flow time ({d['etas']})")
    g.add_argument("--t1", type=float, default=d["t1"], help="horizon in flow time t = kη (200)")
    g.add_argument(
        "--k",
        type=int,
        default=d["k"],
        help=f"top Hessian eigenvalues recorded along GD, and the most the central flow tracks "
        f"at 2/η: it stops where one more reaches 2/η ({d['k']})",
    )
    add_list(
        g,
        "--flows",
        default=d["flows"],
        help="flows compared with GD: gradient, modified (order 1), central (all three)",
    )
    g.add_argument(
        "--sharpness-every",
        type=int,
        default=d["sharpness_every"],
        help="GD steps between sharpness evaluations (2)",
    )
    g.add_argument(
        "--solver",
        choices=FLOW_SOLVERS,
        default=d["solver"],
        help="solver of the gradient, modified and central flows (tsit5)",
    )
    g.add_argument(
        "--rtol", type=float, default=d["rtol"], help="relative tolerance of the flows (1e-6)"
    )
    g.add_argument(
        "--atol", type=float, default=d["atol"], help="absolute tolerance of the flows (1e-8)"
    )
    g.add_argument(
        "--max-steps",
        type=int,
        default=d["max_steps"],
        help="step budget of each flow (default: flows.SolveSettings's)",
    )
    g = p.add_argument_group(
        "another optimizer beside GD at each η (Cohen et al. 2022, adaptive methods at the EOS)"
    )
    g.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        default=d["optimizer"],
        help="gd: GD alone; momentum (heavy ball), rmsprop (from ν0 = mean ∇L(w0)², with its "
        "central flow) or adam (bias-corrected) also run at each η, their (preconditioned) "
        "sharpness drawn against its stability limit (optimizer-<η>.png) (gd)",
    )
    g.add_argument("--beta", type=float, default=None, help="momentum's β (0.9)")
    g.add_argument("--beta1", type=float, default=None, help="Adam's β1 (0.9)")
    g.add_argument(
        "--beta2", type=float, default=d["beta2"], help="β2 (0.99 for rmsprop, 0.999 for adam)"
    )
    g.add_argument("--eps", type=float, default=None, help="ε of rmsprop and adam (1e-8)")
    g = p.add_argument_group("catapult panel (uv model, Lewkowycz et al. 2020)")
    g.add_argument("--uv-width", type=int, default=d["uv_width"], help="m of the uv model (1000)")
    g.add_argument(
        "--uv-points", type=int, default=d["uv_points"], help="values of ηλ0 in (0, 4.5] (91)"
    )
    g.add_argument(
        "--uv-steps", type=int, default=d["uv_steps"], help="GD steps of each uv run (2000)"
    )
    add_run_folder_options(p, "eos", progress=True)
    add_sweep_options(p)


def parse_digit_classes(values) -> list[int]:
    """`--classes`: 'all' or two or more different digits in 0..9, sorted."""
    if values in ("all", ["all"]):
        return list(range(10))
    classes = parse_list("--classes", values, int, unique=True)
    if len(classes) < 2 or not all(0 <= c <= 9 for c in classes):
        raise UsageError(
            "--classes must be 'all' or two or more different digits in 0..9, got "
            + ",".join(map(str, classes))
        )
    return sorted(classes)


def parameters(s: dict) -> int:
    """p, the trainable parameters of the MLP of settings `s` (biases included)."""
    digits = s["data"] == "digits"
    out = len(s["classes"]) if digits and s["task"] == "multiclass" else 1
    sizes = [64 if digits else s["dim"]] + [s["width"]] * s["depth"] + [out]
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def settings(args) -> dict:
    """The settings of `args`, every one checked before any computation (the solver's by
    `flows.SolveSettings`). Raises `UsageError` naming the flag."""
    s = {key: getattr(args, key) for key in DEFAULTS}
    _check_optimizer_flags(s, getattr(args, "resume", None))
    s.update({k: DEFAULTS[k] for k in OPTIMIZER_FLAGS if s[k] is None})
    for key, choices in (("data", DATA), ("activation", ACTIVATIONS)):
        if s[key] not in choices:  # a resumed config.json (a run before --data: its data line)
            raise UsageError(f"{flag(key)} must be one of {', '.join(choices)}, got {s[key]!r}")
    s["classes"] = parse_digit_classes(s["classes"])
    if s["data"] == "random":
        _check_random_data(s)
    elif s["dim"] != DEFAULTS["dim"]:  # was ignored: the digits have 64 pixels
        raise UsageError(
            f"--dim {s['dim']}: --dim sets the input dimension of --data random; --data digits "
            "has 64 pixels"
        )
    if s["task"] == "binary" and len(s["classes"]) != 2:
        raise UsageError(f"--task binary needs two --classes, got {len(s['classes'])}")
    if s["task"] == "binary" and s["loss"] == "cross_entropy":
        raise UsageError("--loss cross_entropy needs --task multiclass")
    etas = parse_list("--etas", s["etas"], unique=True)
    for eta in etas:
        if not eta > 0:
            raise UsageError(f"--etas must be > 0, got {eta:g}")
    s["etas"] = sorted(etas, reverse=True)
    chosen = parse_list("--flows", s["flows"], str, unique=True)
    unknown = sorted(set(chosen) - set(FLOWS))
    if unknown:
        raise UsageError(f"--flows: unknown {', '.join(unknown)}; choose from {', '.join(FLOWS)}")
    s["flows"] = [f for f in FLOWS if f in chosen]
    s["t1"] = positive("--t1", s["t1"])
    s["output_scale"] = positive("--output-scale", s["output_scale"])
    for key, low, high in (
        # digits: 1797 images; random: at most 2e7 numbers of data (160 MB)
        ("n_train", 10, 1797 if s["data"] == "digits" else 20_000),
        ("dim", 1, 1000),
        ("width", 1, 4096),
        ("depth", 1, 16),
        ("k", 1, 10**6),
        ("sharpness_every", 1, 10_000),
        ("uv_width", 1, 10**7),
        ("uv_points", 2, 10_000),
        ("uv_steps", 1, 10**6),
        ("seed", 0, 2**32 - 1),
    ):
        bounded(flag(key), s[key], low, high)
    steps = s["t1"] / min(s["etas"])  # a float: 1e300/0.65 has 301 digits as an int
    if max(s["etas"]) > s["t1"] / 10:
        raise UsageError(
            f"--t1 ({s['t1']:g}) must be at least 10 steps of the largest --etas "
            f"({max(s['etas']):g})"
        )
    if steps > MAX_GD_STEPS:
        raise UsageError(
            f"--t1 {s['t1']:g} is {steps:.3g} steps of the smallest --etas "
            f"({min(s['etas']):g}), over {MAX_GD_STEPS}"
        )
    fewest = int(round(s["t1"] / max(s["etas"])))
    if fewest // s["sharpness_every"] < MIN_SAVE_INTERVALS:
        # 10000 on 1000 steps saved t = 0 alone: no flow was solved, and GD's sharpness,
        # 0.37 × 2/η there, was reported as staying below 2/η while its loss spiked
        raise UsageError(
            f"--sharpness-every {s['sharpness_every']} leaves {fewest // s['sharpness_every']} "
            f"save(s) after t = 0 in the {fewest} GD steps of --etas {max(s['etas']):g}: at "
            f"most {fewest // MIN_SAVE_INTERVALS}"
        )
    p = parameters(s)
    if p > MAX_PARAMETERS:  # --width 4096 --depth 16 (2.5e8) would die in the allocator
        widest = largest_width(lambda w: parameters({**s, "width": w}))
        raise UsageError(
            f"--width {s['width']} --depth {s['depth']}: the network would have {p:.3g} "
            f"parameters, over the limit of {MAX_PARAMETERS:.0e}: --width at most {widest} at "
            f"--depth {s['depth']}"
        )
    if s["k"] > p:
        raise UsageError(f"--k must be <= p, the network's {p} parameters, got {s['k']}")
    solve_settings_of(s)  # checked here, before any computation
    beta2 = s["beta2"]
    # before build's [0, 1), which named 1 as outside [0, 1) and then 0 as outside (0, 1); 0
    # was refused by the central flow inside each task, after GD, the flows and RMSProp had run
    if (
        s["optimizer"] == "rmsprop"
        and beta2 is not None
        and math.isfinite(beta2)
        and not 0 < beta2 < 1
    ):
        raise UsageError(
            f"--beta2 must lie in (0, 1) for --optimizer rmsprop, got {beta2:g}"
            + (" (its central flow: at β2 = 0, ν = g⊙² is no longer a state)" if beta2 == 0 else "")
        )
    if s["optimizer"] != "gd":
        try:  # β in [0, 1), ε >= 0, named as the flag
            build(s, min(s["etas"]))
        except ValueError as e:
            raise UsageError(f"--{e}") from None
    return s


def _check_random_data(s: dict) -> None:
    """Refuse, naming it, a digits option given with --data random (one output, MSE)."""
    defaults = {"classes": list(range(10)), "task": "multiclass", "loss": "mse"}  # as parsed
    given = [
        f"{flag(key)} {s[key] if isinstance(s[key], str) else ','.join(map(str, s[key]))}"
        for key, default in defaults.items()
        if s[key] != default
    ]
    if given:
        raise UsageError(
            f"{', '.join(given)}: --data random has one output and the squared loss; these "
            "options apply to --data digits"
        )


# The settings of each --optimizer (their options default to None, "not given").
OPTIMIZER_FLAGS = {"beta": ("momentum",), "beta1": ("adam",), "beta2": ("rmsprop", "adam"),
                   "eps": ("rmsprop", "adam")}  # fmt: skip


def _check_optimizer_flags(s: dict, resume) -> None:
    """Refuse, naming it, an option given that --optimizer does not use (`--beta 0.5` with
    gd was ignored). A resumed run's recorded values are every one's, used or not."""
    if resume is not None:
        return
    for key, users in OPTIMIZER_FLAGS.items():
        if s[key] is not None and s["optimizer"] not in users:
            raise UsageError(
                f"{flag(key)} is not used by --optimizer {s['optimizer']}; it applies to "
                f"--optimizer {' and '.join(users)}: drop it or choose one of those"
            )


SOLVE_KEYS = ("solver", "rtol", "atol", "max_steps")


def solve_settings_of(s: dict):
    """The run's one `flows.SolveSettings`, from the settings `s` (its `SOLVE_KEYS`), built
    for the check of `settings` and once in each task. Raises `UsageError` naming the flag."""
    return solve_settings(**{k: s[k] for k in SOLVE_KEYS})
