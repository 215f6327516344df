"""The lazy pipeline for any model: constants, every α, results, figures (the CLI and
`experiments.lazy.run` share it)."""

import jax
import numpy as np
from tqdm.auto import tqdm

import flows
from flows.lazy._comparison import check_outputs

from .. import _interrupt
from .._options import UsageError, shown
from .._sweep_parts import checkpoint_path, task_key
from ._alpha import LOSS, alpha_task, record_of, smooth
from ._cli import MAX_DECAY, config_of
from ._report import print_summary
from ._results import write_results

# Above this many explicit steps per α (at least; `flows.lazy.explicit_steps`), the run says what
# it will cost before it starts: ~25× the default run's 820 Tsit5 steps.
LONG_RUN_STEPS = 20_000
PARTS = "part-<key>.json/.npz, key = experiments._sweep.task_key({'alpha': α})"


# Below this fraction of λ_max, λ_min(Σ) counts as 0 (a singular Σ); the horizon's limit is
# then set by the slowest mode that is resolved, this fraction of λ_max.
SINGULAR = 1e-12


def horizon(s, constants) -> float:
    """The run's t1: `--t1`, or `flows.lazy.lazy_horizon` of `--loss-decades`. Raises
    `UsageError` naming `--t1` when Σ is singular and no t1 is given, or when the given t1
    decays the slowest mode past `MAX_DECAY` (stating the largest t1 on this data)."""
    lam_min, lam_max = constants.lambda_min, constants.lambda_max
    if s["t1"] is None:
        if lam_min <= SINGULAR * lam_max:
            raise UsageError(
                f"--t1: the NTK Gram matrix is singular (λ_min = {lam_min:.3g}), "
                "so no horizon makes the loss fall by 10^D; give --t1"
            )
        return flows.lazy.lazy_horizon(lam_min, s["loss_decades"])
    t1 = s["t1"]
    rate = max(lam_min, SINGULAR * lam_max)
    if rate * t1 > MAX_DECAY:
        raise UsageError(
            f"--t1 {shown(t1)}: λ·t1 = {rate * t1:.3g} with λ = {rate:.3g} (λ_min(Σ), or "
            f"{SINGULAR:g}·λ_max when Σ is singular) is past {MAX_DECAY:g}, where e^(−λ·t1) "
            "is below the smallest float64 and the loss reached round-off long before: "
            f"--t1 at most {MAX_DECAY / rate:.3g} on this data"
        )
    return t1


def horizon_note(s, t1, constants) -> str | None:
    """The line said when the horizon was chosen automatically (None when --t1 was given):
    its value and reason and, when an explicit solver would need more than
    `LONG_RUN_STEPS` steps per α, that estimate of the cost (a 30-point CSV got t1 = 6.1e4
    from λ_min = 1.1e-4 and ran its first α for more than 260 s without a word)."""
    if s["t1"] is not None:
        return None
    lam_min, lam_max = constants.lambda_min, constants.lambda_max
    line = (
        f"lazy: horizon t1 = {t1:.4g}, chosen as D·ln(10)/(2·λ_min(Σ)) with λ_min = "
        f"{lam_min:.3g} and D = --loss-decades = {s['loss_decades']:g} (the linearised loss "
        "falls by 10^D); --t1 sets it"
    )
    steps = flows.lazy.explicit_steps(t1, lam_max, "tsit5")
    if steps > LONG_RUN_STEPS and flows.STABILITY_BOUNDARY.get(s["solve"].name) is None:
        line += (
            f". A long run: λ_max/λ_min = {lam_max / lam_min:.3g}, so an explicit solver "
            f"needs at least {steps:.3g} steps per α to t1 (λ_max·t1/3.5) and {s['solve'].name} "
            "many stiff steps; a shorter --t1 or fewer --loss-decades makes it shorter"
        )
    return line


def check_cost(s, t1, lambda_max) -> None:
    """Refuse an explicit solver that cannot reach t1 within --max-steps (exit 2, naming the
    options that change it); say so before starting when it will take long."""
    solver = s["solve"].name
    boundary = flows.STABILITY_BOUNDARY.get(solver)
    if boundary is None:  # "auto", "exprk4" and the stiff solvers are not bound by λ_max
        return
    steps = flows.lazy.explicit_steps(t1, lambda_max, solver)
    where = (
        f"t1 = {t1:.3g} with λ_max(Σ) = {lambda_max:.3g} needs at least {steps:.3g} "
        f"{solver} steps per α (λ_max·t1/{boundary:g}, its stability limit)"
    )
    change = (
        "a shorter --t1 or fewer --loss-decades, or --solver exprk4 or kvaerno5 (their "
        "steps are not held by λ_max)"
    )
    if steps > s["solve"].max_steps:
        raise UsageError(f"--max-steps {s['solve'].max_steps}: {where}; choose {change}")
    if steps > LONG_RUN_STEPS:
        print(f"note: {where}, a long run; {change} makes it shorter", flush=True)


def sweep_model(model, data, s, folder, sweep, stored, describe: dict, user_model: bool):
    """Run the lazy sweep of settings `s` on `model` and data `(X, Y, X_test)` into the
    `RunFolder` `folder` on `sweep`; write results.json, trajectories.npz and the figures,
    print the summary. `stored`: a resumed run's config (or None); `describe`: config entries
    that say what the data and model are. Returns 1 if an α failed, else 0."""
    X, Y, X_test = data
    _interrupt.watch(folder)
    constants = flows.lazy.lazy_constants(
        model,
        (X, Y),
        loss=LOSS,
        estimate_lip=smooth(s),
        lip_radius=s["lip_radius"],
        key=jax.random.PRNGKey(s["seed"] + 1),
    )
    if user_model:  # before the folder: every α would fail on it
        check_outputs(model, X, Y)
    t1 = horizon(s, constants)
    note = horizon_note(s, t1, constants)
    if note:
        tqdm.write(note)
    check_cost(s, t1, constants.lambda_max)
    ts = flows.lazy.lazy_save_times(t1, constants.lambda_max, s["n_times"])
    config = stored or {
        **config_of(s),
        "t1": t1,
        "t1_rule": "given (--t1)"
        if s["t1"] is not None
        else f"flows.lazy.lazy_horizon: D·ln(10)/(2·λ_min(Σ)) with D = --loss-decades = "
        f"{s['loss_decades']:g}",
        **describe,
        "n_train": int(len(Y)),
        "n_test": 0 if X_test is None else int(len(X_test)),
        "in_size": int(X.shape[1]),
        "n_params": constants.n_params,
        "loss": "squared, sum: R(y) = ½‖y − y*‖²",
        "n_save_times": int(len(ts)),
        "dtype": "float64",
        "remainder_rule": "flows.lazy.lazy_remainder_rule: remainder form for α >= "
        f"{flows.lazy.LAZY_REMAINDER_ALPHA:g}, direct form below",
    }
    folder.start(config)  # the folder exists from here on: said only now
    how = "resumed" if folder.resumed else "made"
    tqdm.write(f"lazy: t1 = {t1:.4g}; run folder {folder.path} ({how}); tasks: {sweep.describe()}")
    shared = {"settings": s, "X": X, "Y": Y, "heldout": X_test, "ts": ts}
    if user_model:
        shared["model"] = model  # sent to the workers (an equinox Module pickles)
    results = _alpha_sweep(sweep, folder, shared)
    records = [record_of(r) for r in results]
    _interrupt.check()
    try:
        arrays = [r.arrays for r in results]
        info = sweep.summary(results, parts=PARTS)
        write_results(folder.path, config, records, arrays, constants, s, t1, info)
        from ._plots import plot  # matplotlib only when drawing: `gradflows list` stays fast

        figures = plot(folder.path)
        print_summary(folder.path, figures)
    except Exception as e:  # the finished α stay on disk: say so, and how to redo the report
        raise RuntimeError(
            f"the report stage failed ({type(e).__name__}: {e}); {folder.kept} are kept in "
            f"{folder.path} (part-<key>.json/.npz); write the report again with: "
            f"{folder.resume_command()}"
        ) from e
    return 1 if any(r["failed"] for r in records) else 0


class Kept:
    """What an interrupted lazy run keeps, read from its folder when asked (`str()`): the
    finished α, the α in progress whose checkpoint `--resume` continues, with the flow time it
    holds, and the α that started but wrote no checkpoint yet (the first is written when the
    solve's first steps are taken, after its compilation: `flows._integrate`), which start
    again."""

    def __init__(self, path: str, alphas):
        self.path, self.alphas, self.finished = path, list(alphas), 0
        self.started: set[float] = set()
        self.ended: set[float] = set()  # finished or failed: their checkpoint is removed

    def checkpoints(self) -> list[tuple[float, float]]:
        """(α, flow time held) of every checkpoint in the folder."""
        out = []
        for alpha in self.alphas:
            name = checkpoint_path(self.path, task_key({"alpha": alpha}))
            try:
                with np.load(name, allow_pickle=False) as ck:
                    out.append((alpha, float(ck["t"])))
            except (OSError, ValueError, KeyError):
                continue
        return out

    def __str__(self) -> str:
        text = f"{self.finished} of {len(self.alphas)} α finished"
        held = self.checkpoints()
        if held:
            each = ", ".join(f"α={a:.3g} up to t={t:.3g}" for a, t in held)
            text += f", and the checkpoints of {each} (--resume goes on from them)"
        lost = sorted(self.started - self.ended - {a for a, _ in held})
        if lost:
            each = ", ".join(f"α={a:.3g}" for a in lost)
            text += f"; {each} started but reached no checkpoint yet (compiling), so starts again"
        return text


def _alpha_sweep(sweep, folder, shared) -> list:
    """Every α as a task of the sweep layer; the interrupt line says what is kept (`Kept`)."""
    alphas = shared["settings"]["alphas"]
    tasks = [{"alpha": alpha} for alpha in alphas]
    kept = Kept(folder.path, alphas)

    def count(result):
        kept.finished += not result.failed
        kept.ended.add(result.task["alpha"])

    folder.kept = kept
    return sweep.run(
        alpha_task,
        tasks,
        folder.path,
        shared=shared,
        desc="alpha sweep",
        check=_interrupt.check,
        on_result=count,
        on_start=lambda task: kept.started.add(task["alpha"]),
        order=_interleaved(alphas),
        check_at_reports=True,  # in-process, Ctrl-C stops an α at its next checkpoint
        # a worker keeps to one form (its programs traced once there): ~7-10 s per form
        groups=[flows.lazy.lazy_remainder_rule(alpha) for alpha in alphas],
    )


def _interleaved(alphas) -> list[int]:
    """Task order: the two forms of lazy_comparison alternate (direct, remainder, direct, ...),
    so that two workers start by compiling different forms and each later loads the other's
    from the shared compilation cache instead of compiling it again."""
    forms = ([], [])
    for i, alpha in enumerate(alphas):
        forms[flows.lazy.lazy_remainder_rule(alpha)].append(i)
    direct, remainder = forms
    order = [i for pair in zip(direct, remainder) for i in pair]
    n = min(len(direct), len(remainder))
    return order + direct[n:] + remainder[n:]
