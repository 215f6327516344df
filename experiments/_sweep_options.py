"""The `--workers` and `--scheduler` options of every sweeping experiment.

Plain Python: `gradflows list` and `--help` import this module, and neither numpy nor Dask;
`experiments._sweep.from_args` turns the parsed options into a `Sweep` once a run starts.
"""

import argparse
import os


def default_workers() -> int:
    """The number of cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def add_sweep_options(parser: argparse.ArgumentParser) -> None:
    """The `--workers` and `--scheduler` options; `_sweep.from_args` turns them into a `Sweep`."""
    g = parser.add_argument_group("parallel (Dask)")
    g.add_argument(
        "--workers",
        type=_workers_option,
        default=None,
        metavar="N",
        help="local worker processes, one thread each (default: the number of cores, "
        f"{default_workers()} here); 0 runs every task in this process, without Dask",
    )
    g.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run the tasks on a running Dask cluster, e.g. tcp://host:8786 (docs/sweeps.md)",
    )


def _workers_option(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {n}")
    return n
