"""A short GPU benchmark: `python benchmarks/gpu.py [--width 1e5] [--t1 1e3]`.

Runs the solver-overhead, torchdiffeq and gradient-descent cases on the two-layer tanh net of
width 1e5 to 1e6 (p = 10·width parameters), flowing to t = 1e3, and prints the same table as
`benchmarks/run.py` (results in `benchmarks/results-gpu.json`). Planned to take under 5 minutes
on one recent data-centre GPU. JAX needs its CUDA build (`pip install -U "jax[cuda12]"`) and
torch a CUDA build for the torchdiffeq case. Without a GPU it says so and measures nothing.
"""

import argparse
import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "benchmarks"

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_CASES = ("overhead", "torch", "gd")


def gpu_devices() -> list:
    """JAX's GPU devices, or an empty list."""
    try:
        return jax.devices("gpu")
    except RuntimeError:
        return []


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/gpu.py", description=__doc__)
    parser.add_argument("--width", type=float, default=1e5, help="neurons (1e5 to 1e6)")
    parser.add_argument("--t1", type=float, default=1e3, help="final flow time")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(HERE, "results-gpu.json"))
    args = parser.parse_args(argv)
    devices = gpu_devices()
    if not devices:
        print(
            "benchmarks/gpu.py: no GPU visible to JAX (backend "
            f"{jax.default_backend()!r}, devices {[str(d) for d in jax.devices()]}); nothing "
            "measured. On a GPU machine install jax's CUDA build: pip install -U 'jax[cuda12]'."
        )
        return 0
    if not 1e4 <= args.width <= 1e7 or args.t1 <= 0:
        parser.error("--width must be in [1e4, 1e7] and --t1 > 0")

    from . import run

    try:
        import torch

        torch_device = "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        torch_device = "cpu"
    print(f"GPU: {devices[0].device_kind}; torch device for torchdiffeq: {torch_device}")
    overrides = dict(
        params=(int(args.width) * 10,),
        t1=args.t1,
        repeats=args.repeats,
        gd_halvings=3,
        profile=False,
        torch_device=torch_device,
        script=f"python benchmarks/gpu.py --width {args.width:g} --t1 {args.t1:g}",
    )
    return run.main(["--cases", *GPU_CASES, "--out", args.out], overrides=overrides)


if __name__ == "__main__":
    sys.exit(main())
