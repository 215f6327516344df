"""`experiments.lazy.run`: the lazy pipeline of `gradflows run lazy` for a user's own model."""

import argparse
import os
import re

from flows._checks import check_flag

from .. import _sweep
from .._files import sha256
from .._options import UsageError
from .._run_folder import check_resumed_digest, open_run
from ._cli import DEFAULTS, settings, with_solve
from ._inputs import user_inputs

# The settings a user may give (the rest describe the CLI's own data and nets).
OPTIONS = (
    "alphas", "n_alpha", "t1", "loss_decades", "n_times", "solver", "rtol", "atol", "max_steps",
    "nodes", "rate_window", "lip_radius", "seed",
)  # fmt: skip


def _plain_error(e: UsageError) -> ValueError:
    """The CLI's message with the flag spelled as the argument (`--rate-window` → rate_window);
    a command it quotes (`gradflows run eos --resume DIR`) is left as typed."""
    text, command, rest = str(e).partition("gradflows run ")
    plain = re.sub(r"--([a-z0-9-]+)", lambda m: m.group(1).replace("-", "_"), text)
    return ValueError(plain + command + rest)


def run(
    model,
    data,
    *,
    alphas=None,
    heldout=None,
    out: str | None = None,
    resume: bool = False,
    symmetrize: str | None = "auto",
    workers: int = 0,
    scheduler: str | None = None,
    progress: bool = True,
    **options,
) -> str:
    """Run the lazy pipeline of `gradflows run lazy` on your own model and data.

    For each α the flows of F_α(w) = R(αh(w))/α² and of its linearisation F̄_α at w0 (the
    model's own parameters) are integrated jointly by `flows.lazy.lazy_comparison`
    (R(y) = ½‖y − y*‖², sum), and the run folder gets what the CLI writes: `config.json`, one
    part per α, `results.json` (per-α sup gaps, late rates, PL constants, the log-log fits
    against α and Theorem 2.4's constants from `flows.lazy.lazy_constants`),
    `trajectories.npz` and the figures (`experiments.lazy.plot`). The theorems assume
    h(w0) = 0: symmetrise the model first (`models.symmetrize(model, "doubled")`).

    Example (a doubled `eqx.nn.MLP`, so that h(w0) = 0)::

        import equinox as eqx, jax, numpy as np
        import experiments.lazy, models
        jax.config.update("jax_enable_x64", True)
        X = np.random.default_rng(0).normal(size=(20, 3)); Y = np.sin(X[:, 0])
        net = eqx.nn.MLP(3, "scalar", 16, 1, activation=jax.nn.gelu,
                         use_bias=False, use_final_bias=False, key=jax.random.PRNGKey(0))
        net = jax.tree.map(lambda a: a.astype(np.float64) if eqx.is_array(a) else a, net)
        folder = experiments.lazy.run(models.symmetrize(net, "doubled"), (X, Y),
                                      alphas=[1, 10, 100, 1000], out="runs/my-mlp")
        # folder/results.json: fits.weight_gap_slope ≈ −2, fits.distance_slope ≈ −1

    **Arguments:**
    - `model`: an equinox Module on one input `(d,)`, returning `()` or `(k,)`, with float64
      parameters (`jax.config.update("jax_enable_x64", True)` first).
    - `data`: `(X, Y)`, X `(n, d)`, Y `(n,)` or `(n, k)`.
    - `alphas`: the scales α > 0 (default 10⁰ … 10⁶, one per decade; `n_alpha=13` gives the
      half-decades).
    - `heldout`: held-out inputs `(n', d)` or `(X', Y')` for Proposition A.1's gap.
    - `out`: the run folder (default `runs/lazy-<timestamp>`); `resume=True` continues the run
      in `out` (finished α are kept, the α in progress goes on from its checkpoint).
    - `symmetrize`: "doubled" or "centred" if the model is built so (the expected slopes of
      the fits and figures), else None; "auto" reads it from a `models.symmetrize` module
      (its `how`).
    - `workers`, `scheduler`: where the α run (0: in this process; N: a local Dask cluster;
      a scheduler address), as `--workers`/`--scheduler`. The model is sent to the workers.
    - `progress`: progress bars (False: a one-line heartbeat on stderr about every 10 s).
    - `**options`: any of `n_alpha` (7 log-spaced α over 10⁰ … 10⁶, not with `alphas`), `t1`,
      `loss_decades` (6), `n_times` (100), `solver` ("exprk4" for
      a smooth model, else "tsit5"), `rtol`, `atol`, `max_steps`, `nodes`, `rate_window`,
      `lip_radius`, `seed`, as the CLI options of the same names (`gradflows run lazy --help`).

    **Returns:** the run folder's path.

    **Raises:** `ValueError` naming the argument for bad settings, data (shapes, NaN, a
    `heldout` of another dimension: checked before any folder is made, `_inputs.user_inputs`)
    or a model whose outputs do not fit `Y` (as `lazy_comparison`), or an `out` that holds
    another run (give `resume=True`); `TypeError` for an `out` that is not a path, or
    `alphas` that is not a sequence of
    numbers (a str such as "1,10" is refused: that is the CLI's spelling); `RuntimeError` if
    the report stage fails (the finished α stay).

    **Reference:** Chizat, Oyallon & Bach 2019, Thms 2.2, 2.4 and Prop. A.1.
    """
    from flows.lazy._kinked import kinked_form

    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"run() got unexpected options {unknown}; known: {list(OPTIONS)}")
    if symmetrize == "auto":
        symmetrize = getattr(model, "how", None)
    if symmetrize not in (None, "doubled", "centred"):
        raise ValueError(f"symmetrize must be 'doubled', 'centred' or None, got {symmetrize!r}")
    progress, resume = check_flag("progress", progress), check_flag("resume", resume)
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a folder path (a str), got {type(out).__name__} {out!r}")
    out = None if out is None else os.fspath(out)
    if scheduler is not None and workers == 0:  # 0 is the default: the scheduler's workers
        workers = None
    X, Y, X_test, Y_test, alphas = user_inputs(data, heldout, alphas, options)
    kinked = kinked_form(model) is not None
    given = {**options, "alphas": alphas}
    given.setdefault("solver", "tsit5" if kinked else "exprk4")
    args = argparse.Namespace(**{**DEFAULTS, **given, "data": "custom", "out": out})
    args.resume = out if resume else None
    try:
        s = settings(args)
        s.update(data="custom", activation="custom", symmetrize=symmetrize, kinked=kinked)
        with _sweep.Sweep(workers, scheduler, progress=progress) as sweep:
            defaults = {**DEFAULTS, **_extra(s)}
            folder, stored, s = open_run("lazy", out, args.resume, args, s, defaults)
            if stored is not None:
                s = with_solve(s)
            digest = sha256(X, Y, X_test, Y_test)
            check_resumed_digest(stored, folder.path, "data_sha256", digest, "the data")
            info = {
                "task": "regression",
                "data_description": f"user data: X {X.shape}, Y {Y.shape}",
                "data_notes": [],
                "data_sha256": digest,
                "model": f"{type(model).__name__} (user model)",
            }
            from ._pipeline import sweep_model

            sweep_model(model, (X, Y, X_test), s, folder, sweep, stored, info, user_model=True)
            return folder.path
    except UsageError as e:
        raise _plain_error(e) from None


def _extra(s):
    return {k: s[k] for k in ("symmetrize", "kinked", "activation", "data")}
