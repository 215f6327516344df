"""The options of `gradflows run ntk` and the settings they resolve to."""

import argparse

from .._options import UsageError, add_list, bounded, flag, parse_list
from .._run_folder import add_run_folder_options
from .._sweep_options import add_sweep_options
from ._design import hidden_widths, parameters

MAX_PARAMETERS = 250_000_000  # 2 GB of float64 weights: peak memory stays under 4 GB

DEFAULTS = {
    "widths": "16,32,64,128,256",
    "seeds": 10,
    "depth": 3,
    "n": 32,
    "cond_depth": 256,
    "mixed": "0.6,0.4",
    "seed": 0,
    "format": "png",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = DEFAULTS
    g = p.add_argument_group("measurements")
    add_list(g, "--widths", default=d["widths"], help=f"base widths m, a log grid ({d['widths']})")
    g.add_argument("--seeds", type=int, default=d["seeds"], help="networks per width (10)")
    g.add_argument("--depth", type=int, default=d["depth"], help="hidden layers L (3)")
    g.add_argument("--n", type=int, default=d["n"], help="inputs per data set (32)")
    g.add_argument(
        "--cond-depth", type=int, default=d["cond_depth"], help="largest depth of cond(K∞) (256)"
    )
    add_list(
        g,
        "--mixed",
        default=d["mixed"],
        metavar="A,B",
        help=f"(a, b) of the mixed activation a·s + b·|s| ({d['mixed']})",
    )
    g.add_argument("--seed", type=int, default=d["seed"], help="seed of data and networks (0)")
    g.add_argument(
        "--format", choices=("png", "svg", "pdf"), default=d["format"], help="figures (png)"
    )
    add_run_folder_options(p, "ntk", progress=True)
    add_sweep_options(p)


def settings(args) -> dict:
    """The settings of `args`, every one checked before any computation. Raises `UsageError`
    naming the flag."""
    s = {key: getattr(args, key) for key in DEFAULTS}
    widths = parse_list("--widths", s["widths"], int, unique=True)
    s["widths"] = sorted(set(widths))
    for key, low, high in (
        ("seeds", 2, 10_000),
        ("depth", 1, 50),
        ("n", 2, 300),  # digits 3 and 8 have 357 images
        ("cond_depth", 1, 10_000),
        ("seed", 0, 2**32 - 1),
    ):
        bounded(flag(key), s[key], low, high)
    for m in s["widths"]:
        bounded("--widths", m, 1, 100_000)
    if len(s["widths"]) < 2:
        raise UsageError(
            "--widths needs at least two different widths to fit a slope, got "
            + ",".join(map(str, widths))
        )
    s["mixed"] = parse_list("--mixed", s["mixed"], count=2)
    if s["mixed"] == [0.0, 0.0]:
        raise UsageError("--mixed: a = b = 0 is the zero activation; give another (a, b)")
    top = max(s["widths"])
    p = parameters(hidden_widths("quadratic", top, s["depth"]))
    if p > MAX_PARAMETERS:
        raise UsageError(
            f"--widths: the largest network (m = {top}, m_k = k²·m, depth {s['depth']}) has "
            f"{p:.3g} parameters, over {MAX_PARAMETERS:.3g} (4 GB peak)"
        )
    return s
