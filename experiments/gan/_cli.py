"""The options of `gradflows run gan` and their checks."""

import argparse

from .._options import (
    UsageError,
    add_list,
    add_solver_options,
    bounded,
    flag,
    note_defaults,
    parse_list,
    positive,
    solve_settings,
)
from .._run_folder import add_run_folder_options
from .._sweep_options import add_sweep_options

# Dirac-GAN variants (one panel each) and mixture variants; names only, so that building the
# parser imports no JAX (experiments/gan/_dirac.py and _mixture.py hold what they mean).
DIRAC = ("gan", "ns_gan", "wgan", "fgan_kl", "fgan_chi2", "r1", "instance_noise", "consensus",
         "wgan_gp", "one_sided", "alp", "my_kl")  # fmt: skip
MIXTURE = ("gan", "wgan_gp", "r1", "my_kl", "my_chi2")
FORMATS = ("png", "svg", "pdf")
SOLVERS = ("tsit5", "dopri8", "auto", "gauss4", "gauss6")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("the Dirac-GAN")
    add_list(g, "--dirac", default=list(DIRAC), help=f"variants, from {', '.join(DIRAC)}")
    g.add_argument("--t1", type=float, default=30.0, help="flow time of the Dirac-GAN orbits")
    g.add_argument("--eta", type=float, default=0.2, help="step η of the Dirac-GAN's SimGD/AltGD")
    g.add_argument("--gamma", type=float, default=0.3, help="γ of R1, WGAN-GP and consensus")
    m = parser.add_argument_group("the 2-D mixture of 8 Gaussians")
    add_list(m, "--mixture", default=list(MIXTURE), help=f"variants, from {', '.join(MIXTURE)}")
    m.add_argument("--mixture-t1", type=float, default=30.0, help="flow time of the mixture GAN")
    m.add_argument("--mixture-eta", type=float, default=0.1, help="step η of its discrete maps")
    m.add_argument("--width", type=int, default=8, help="hidden width of both MLP players")
    m.add_argument("--samples", type=int, default=64, help="real (and latent) samples")
    m.add_argument("--saves", type=int, default=16, help="save times along each path")
    m.add_argument("--seed", type=int, default=0, help="seed of the samples and players")
    parser.add_argument("--format", choices=FORMATS, default="png", help="figure file format")
    add_solver_options(parser, solver="tsit5", max_steps=False, solvers=SOLVERS)
    add_run_folder_options(parser, "gan", progress=True)
    add_sweep_options(parser)
    note_defaults(parser)


# the entries of settings(args), which a resumed run's config.json must hold
SETTINGS = ("dirac", "t1", "eta", "gamma", "mixture", "mixture_t1", "mixture_eta", "width",
            "samples", "saves", "seed", "format", "solver", "rtol", "atol")  # fmt: skip


def _variants(name: str, values, known) -> list[str]:
    chosen = parse_list(name, values, str, unique=True)
    unknown = [v for v in chosen if v not in known]
    if unknown:
        raise UsageError(f"{name}: unknown {', '.join(unknown)}; choose from {', '.join(known)}")
    return [v for v in known if v in chosen]


def settings(args) -> dict:
    """The settings of `args`, each checked before any computation (tolerances by
    `flows.SolveSettings`). Raises `UsageError` naming the flag."""
    dirac = _variants("--dirac", args.dirac, DIRAC)
    mixture = _variants("--mixture", args.mixture, MIXTURE)
    for name in ("t1", "eta", "mixture_t1", "mixture_eta"):
        positive(flag(name), getattr(args, name))
    positive("--gamma", args.gamma, allow_zero=True)
    if args.t1 > 1e4 or args.mixture_t1 > 1e3:
        raise UsageError("--t1 must be at most 1e4 and --mixture-t1 at most 1e3 (flow time)")
    for name, eta, t1 in (("--eta", args.eta, args.t1),
                          ("--mixture-eta", args.mixture_eta, args.mixture_t1)):  # fmt: skip
        if eta > t1:
            raise UsageError(f"{name} must be at most the flow time ({t1:g}), got {eta:g}")
        if t1 / eta > 1e5:
            raise UsageError(f"{name} {eta:g}: {t1 / eta:.3g} steps, over 1e5; raise it")
    bounded("--width", args.width, 1, 256)
    bounded("--samples", args.samples, 8, 4096)
    bounded("--saves", args.saves, 2, 1000)
    bounded("--seed", args.seed, 0, 2**31 - 1)
    solve = solve_settings(solver=args.solver, rtol=args.rtol, atol=args.atol)
    return {
        "dirac": dirac,
        "t1": args.t1,
        "eta": args.eta,
        "gamma": args.gamma,
        "mixture": mixture,
        "mixture_t1": args.mixture_t1,
        "mixture_eta": args.mixture_eta,
        "width": args.width,
        "samples": args.samples,
        "saves": args.saves,
        "seed": args.seed,
        "format": args.format,
        "solver": solve.name,
        "rtol": solve.rtol,
        "atol": solve.atol,
    }
