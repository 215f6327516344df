"""The options of `gradflows run lazy` and the settings they resolve to."""

import argparse
import math

from .._options import (
    SOLVERS,
    UsageError,
    add_data_options,
    add_list,
    add_solver_options,
    bounded,
    flag,
    parse_classes,
    parse_list,
    positive,
    shown,
    solve_settings,
)
from .._run_folder import add_run_folder_options
from .._sweep_options import add_sweep_options

# The slowest decay e^{−λ·t1} a horizon may ask for: −ln of float64's smallest (subnormal)
# number, 4.9e-324, is 744.4. Past it even the linearised flow's slowest mode is 0 in float64
# (its loss reached round-off long before), so a longer horizon only costs time.
MAX_DECAY = 745.0
#: The `--loss-decades` this allows, D·ln(10)/2 <= `MAX_DECAY`.
MAX_LOSS_DECADES = 2 * MAX_DECAY / math.log(10)

#: The α range of the default sweep, 10^0 ... 10^6 (`--n-alpha` log-spaced values over it).
ALPHA_DECADES = 6
#: One α per decade. The slopes over these 7 α agree with the 13 half-decades'
#: (`--n-alpha 13`) to 0.0012, every α the two share gives the same bits,
#: and the late rate, the constants and the PL fits agree (docs/lazy.md); 0.63x the task CPU.
DEFAULT_N_ALPHA = 7


def default_alphas(n: int) -> list[float]:
    """`n` α log-spaced from 10^0 to 10^ALPHA_DECADES: 10^(6k/(n − 1)), k = 0 ... n − 1
    (n = 13 gives the half-decades 10^(k/2) bit for bit; n = 1 gives [1.0])."""
    step = ALPHA_DECADES / (n - 1) if n > 1 else 0.0
    return [float(10 ** (k * step)) for k in range(n)]


DEFAULT_ALPHAS = default_alphas(DEFAULT_N_ALPHA)  # 10^0, 10^1, ..., 10^6


DEFAULTS = {
    "data": "digits",
    "classes": "3,8",
    "n_train": 100,
    "n_test": 100,
    "dim": 16,
    "teacher_neurons": 3,
    "target": "target",
    "task": "auto",
    "width": 256,
    "depth": 1,
    "activation": "gelu",
    "symmetrize": "doubled",
    "seed": 0,
    "alphas": None,
    # None: DEFAULT_N_ALPHA when --alphas is not given (recorded resolved in config.json)
    "n_alpha": None,
    "t1": None,
    "loss_decades": 6.0,
    "n_times": 100,
    # None: "exprk4" for smooth activations (ū in closed form, the gap by an exponential
    # integrator exact on its stiff part: the default run in 99 s of CPU against Tsit5's 360 s,
    # same slopes), "tsit5" for kinked ones (Filippov pieces need an explicit solver)
    "solver": None,
    # None: not given, flows.SolveSettings's defaults (recorded resolved in config.json)
    "rtol": None,
    "atol": None,
    "max_steps": None,
    "nodes": None,
    "rate_window": 0.5,
    "lip_radius": 1.0,
}


def _option(group, key: str, help: str, **kwargs) -> None:
    """The option of settings key `key` (`--n-times` for "n_times"), default from DEFAULTS."""
    group.add_argument(flag(key), default=DEFAULTS[key], help=help, **kwargs)


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    g = add_data_options(p, files=True, classes=d["classes"], n_train=d["n_train"])
    _option(g, "dim", "teacher: input dimension (%(default)s)", type=int)
    _option(g, "teacher_neurons", "teacher: neurons (%(default)s)", type=int)
    g = p.add_argument_group("model")
    _option(g, "width", "hidden width (%(default)s)", type=int)
    _option(
        g,
        "depth",
        "hidden layers: 1 is the bias-free two-layer net f = m^-1/2 Σ a_j σ(b_j·x) "
        "(models.TwoLayerNet); >1 is models.MLP without biases, N(0, 1/fan-in) weights "
        "(%(default)s)",
        type=int,
    )
    _option(
        g,
        "activation",
        "gelu, tanh, softplus (smooth), relu, abs, leaky_relu (default %(default)s); the kinked "
        "ones are integrated exactly by flows.nonsmooth.filippov_flow "
        "(--depth 1, explicit --solver)",
    )
    _option(
        g,
        "symmetrize",
        "h(w0) = 0 by f(w1) − f(w2), both trained (doubled), or f(w) − f(w0) with w0 "
        "frozen (centred). Default: %(default)s",
        choices=("doubled", "centred"),
    )
    _option(g, "seed", "model and data split seed (%(default)s)", type=int)
    g = p.add_argument_group("flow")
    add_list(
        g,
        "--alphas",
        default=d["alphas"],
        help="scales α > 0 (comma- or space-separated); default --n-alpha of them",
    )
    _option(
        g,
        "n_alpha",
        f"N α log-spaced from 10^0 to 10^{ALPHA_DECADES}, 10^({ALPHA_DECADES}k/(N − 1)) "
        f"(default {DEFAULT_N_ALPHA}: one per decade; 13: half-decades, whose slopes agree to "
        "0.0012, at about 1.6x the CPU); not with --alphas",
        type=int,
    )
    _option(
        g,
        "t1",
        "horizon (flow time); default: flows.lazy.lazy_horizon, D·ln(10)/(2·λ_min(Σ)) with "
        "D = --loss-decades, so that the linearised loss falls by at least 10^D; at most "
        "745/λ_min(Σ), where e^(−λ_min·t1) is below the smallest float64",
        type=float,
    )
    _option(g, "loss_decades", "D, at most 647 (%(default)g)", type=float)
    _option(
        g,
        "n_times",
        "log-spaced save times (%(default)s), plus 20 evenly spaced ones for the late tail",
        type=int,
    )
    _option(
        g,
        "nodes",
        "Gauss-Legendre nodes of the remainder form (default: flows.lazy.LAZY_NODES). "
        "lazy_comparison picks the form by flows.lazy.lazy_remainder_rule (remainder for α >= 30)",
        type=int,
    )
    _option(
        g,
        "rate_window",
        "the late rate is fitted over t in [(1 − w)·t1, t1] (w = %(default)g)",
        type=float,
    )
    _option(
        g,
        "lip_radius",
        "Lip(Dh) is estimated at w0 and at random points this far from it (%(default)g)",
        type=float,
    )
    add_solver_options(
        p,
        solver=d["solver"],
        max_steps_help="step budget per α",
        solvers=SOLVERS + ("exprk4",),
        solver_help="diffrax solver, 'auto' (Tsit5, exprb32 where cheaper), or 'exprk4' "
        "(smooth activations: ū in closed form, the gap by an exponential Runge–Kutta "
        "method exact on its stiff part −JᵀJ; 5.6x fewer steps); default: exprk4 for "
        "smooth activations, tsit5 for kinked ones",
        default_in_help=True,
        solver_option=True,
    )
    g = add_run_folder_options(p, "lazy", progress=True)
    g.add_argument(
        "--verbose",
        action="store_true",
        help="print the full per-α table (always written to summary.txt in the run folder) "
        "instead of the verdicts alone",
    )
    add_sweep_options(p)


# ---------------------------------------------------------------------------------------------
# Settings


#: The settings keys that are `flows.SolveSettings` fields.
SOLVE_KEYS = ("solver", "rtol", "atol", "max_steps")

#: `flows.SolveSettings.chunks` of an α's exprk4 solve (the others keep the library's). Each
#: chunk ends a step at its last save time; on the log-spaced save times of the default run
#: the library's 20 chunks cost 1,847 steps against 1,766 for 4 (α = 10⁶: 26 against 18),
#: the same sup gaps to 3 digits. Checkpoints and flow-time reports do not need chunks
#: (written within a call when due).
LAZY_CHUNKS = 4


def with_solve(s: dict) -> dict:
    """`s` with `s["solve"]`, the run's one `flows.SolveSettings`, built from `s`'s
    `SOLVE_KEYS` (None: the library's default), and those keys set to the values it holds,
    as config.json records them. Called once for a run: on its options, or on a resumed
    run's config.json. Raises `UsageError` naming the flag."""
    chunks = LAZY_CHUNKS if s["solver"] == "exprk4" else None  # measured there
    solve = solve_settings(**{k: s[k] for k in SOLVE_KEYS}, chunks=chunks)
    s.update({k: getattr(solve, k) for k in SOLVE_KEYS[1:]}, solver=solve.name, solve=solve)
    return s


def config_of(s: dict) -> dict:
    """The settings `s` as config.json records them: without the `flows.SolveSettings`
    object, whose fields are the `SOLVE_KEYS` entries."""
    return {k: v for k, v in s.items() if k != "solve"}


def settings(args) -> dict:
    """The settings of `args`, every one checked (the solver's by building the run's one
    `flows.SolveSettings`, `s["solve"]`), before any computation. Raises `UsageError`
    naming the flag."""
    import flows
    import models

    from ._alpha import NON_SMOOTH

    s = {key: getattr(args, key) for key in DEFAULTS}
    alphas = parse_list("--alphas", s["alphas"], positive=True, unique=True)  # a task per α
    if alphas and s["n_alpha"] is not None:
        raise UsageError(
            f"--n-alpha {s['n_alpha']} and --alphas both choose the α: give one of them"
        )
    if not alphas:
        s["n_alpha"] = DEFAULT_N_ALPHA if s["n_alpha"] is None else s["n_alpha"]
        bounded("--n-alpha", s["n_alpha"], 1, 1000)
    s["alphas"] = alphas or default_alphas(s["n_alpha"])
    s["classes"] = ",".join(map(str, parse_classes(s["classes"])))
    if s["nodes"] is None:
        s["nodes"] = flows.lazy.LAZY_NODES
    for key, low, high in (
        ("depth", 1, 64),
        ("n_train", 2, 10**6),
        ("n_test", 0, 10**6),
        ("n_times", 2, 100_000),
        ("nodes", 2, 16),
        ("dim", 2, 100_000),
        ("teacher_neurons", 1, 100_000),
        ("seed", 0, 2**32 - 1),
    ):
        bounded(flag(key), s[key], low, high)
    if s["width"] < 1:  # its upper limit is the parameter count, once the data are known
        raise UsageError(f"--width must be >= 1, got {s['width']}")
    if s["data"] in ("digits", "teacher"):  # --target and --task describe a file's columns
        for key, default in (("target", "target"), ("task", "auto")):
            if s[key] != default:
                raise UsageError(
                    f"{flag(key)} applies to a data file (--data FILE.csv|.npz), not to "
                    f"--data {s['data']}; got {flag(key)} {s[key]}"
                )
    positive("--loss-decades", s["loss_decades"])
    if s["loss_decades"] > MAX_LOSS_DECADES:  # the horizon's limit, `_pipeline.horizon`
        raise UsageError(
            f"--loss-decades must be at most {MAX_LOSS_DECADES:.0f} (a fall of 10^D past it "
            f"is below the smallest float64), got {shown(s['loss_decades'])}"
        )
    if s["t1"] is not None:
        positive("--t1", s["t1"])
    if not 0 < s["rate_window"] < 1:
        raise UsageError(f"--rate-window must lie in (0, 1), got {s['rate_window']}")
    positive("--lip-radius", s["lip_radius"], allow_zero=True)
    try:
        models.activation(s["activation"])
    except ValueError as e:
        raise UsageError(f"--activation: {e}") from None
    kinked = s["activation"] in NON_SMOOTH
    if s["solver"] is None:
        s["solver"] = "tsit5" if kinked else "exprk4"
    elif s["solver"] == "exprk4" and kinked:
        raise UsageError(
            f"--solver exprk4 needs a smooth activation (its stiff part −JᵀJ is constant); "
            f"{s['activation']} nets need an explicit solver (auto, tsit5, dopri5, dopri8)"
        )
    with_solve(s)
    if kinked:  # integrated by flows.nonsmooth.filippov_flow
        if s["depth"] != 1:
            raise UsageError(
                f"--depth: {s['activation']} nets are integrated by "
                "flows.nonsmooth.filippov_flow, which "
                f"supports one hidden layer (--depth 1), got {s['depth']}"
            )
        if s["solver"] not in ("auto", "tsit5", "dopri5", "dopri8"):
            raise UsageError(
                f"--solver: {s['activation']} nets are integrated by "
                "flows.nonsmooth.filippov_flow, whose "
                f"pieces need an explicit solver (auto, tsit5, dopri5, dopri8), got {s['solver']}"
            )
    return s
