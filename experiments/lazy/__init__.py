"""`gradflows run lazy`: lazy training against its linearisation over a sweep of α.

Chizat, Oyallon & Bach 2019, "On Lazy Training in Differentiable Programming": Theorem 2.2
(finite horizon), Theorem 2.4 (uniform in time) and Proposition A.1 (held-out inputs), checked
on real data. For each α the flows of F_α(w) = R(αh(w))/α² and of its linearisation F̄_α are
integrated jointly (`flows.lazy.lazy_comparison`) and their sup gaps measured; the theorems'
constants come from `flows.lazy.lazy_constants`.

The run folder holds `config.json`, one `part-<key>.json`/`.npz` per finished α (a task of
`experiments._sweep`, keyed by a hash of `{"alpha": α}`, written atomically, so an interrupted
sweep keeps them and `--resume DIR` goes on from there), `logs/`, then `results.json`,
`trajectories.npz` and five figures (`experiments.lazy.plot`: gaps, loss, distance, heldout
(only with held-out data) and pl). The α run in this process (`--workers 0`) or on Dask
workers (`--workers N`, `--scheduler ADDRESS`).

`run(model, (X, Y), alphas=..., heldout=..., out=DIR)` makes the same run folder, fits, theory
constants and figures for a user's own equinox model; the CLI (`main`) is a thin layer over it.
"""

from ._cli import add_arguments as add_arguments

DESCRIPTION = (
    "lazy training vs its linearisation over alpha on real data "
    "(Chizat, Oyallon & Bach 2019, Thms 2.2/2.4, Prop. A.1)"
)


def main(args) -> int:
    """`gradflows run lazy`: the sweep for parsed `args` (JAX and matplotlib are imported
    only here), a thin layer over the pipeline that `run` gives a user's model."""
    from ._run import run as _run

    return _run(args)


def __getattr__(name):
    # `run` (the lazy pipeline for your own model) is imported on first use, so that the CLI's
    # `--help` imports no JAX; `help(experiments.lazy.run)` then shows its own docstring.
    if name == "run":
        from ._user import run

        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def plot(folder: str) -> list[str]:
    """Redraw the figures (five; heldout.png only with held-out data) from a run folder's files
    alone; returns the paths written."""
    from ._plots import plot as _plot

    return _plot(folder)
