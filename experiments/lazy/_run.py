"""The lazy sweep: settings, data, constants, every α, results, figures, summary."""

import jax
from tqdm.auto import tqdm

import flows

from .. import _interrupt, _sweep
from .._files import sha256
from .._options import UsageError
from .._run_folder import RunFolder, check_resumed_digest, resumed_settings
from ._alpha import LOSS, NON_SMOOTH, alpha_task, record_of
from ._cli import DEFAULTS, settings
from ._inputs import build_model, describe, load_data, n_parameters
from ._report import print_summary
from ._results import write_results

# Above this many explicit steps per α (at least; `flows.lazy.explicit_steps`), the run says what
# it will cost before it starts: ~25× the default run's 820 steps.
LONG_RUN_STEPS = 20_000
PARTS = "part-<key>.json/.npz, key = experiments._sweep.task_key({'alpha': α})"


def _horizon(s, constants) -> float:
    if s["t1"] is not None:
        return s["t1"]
    if constants.lambda_min <= 1e-12 * constants.lambda_max:
        raise UsageError(
            f"--t1: the NTK Gram matrix is singular (λ_min = {constants.lambda_min:.3g}), "
            "so no horizon makes the loss fall by 10^D; give --t1"
        )
    return flows.lazy.lazy_horizon(constants.lambda_min, s["loss_decades"])


def _check_cost(s, t1, lambda_max) -> None:
    """Refuse an explicit solver that cannot reach t1 within --max-steps (exit 2, naming the
    options that change it); say so before starting when it will take long."""
    boundary = flows.STABILITY_BOUNDARY.get(s["solver"])
    if boundary is None:  # "auto" and the stiff solvers are not bound by λ_max
        return
    steps = flows.lazy.explicit_steps(t1, lambda_max, s["solver"])
    where = (
        f"t1 = {t1:.3g} with λ_max(Σ) = {lambda_max:.3g} needs at least {steps:.3g} "
        f"{s['solver']} steps per α (λ_max·t1/{boundary:g}, its stability limit)"
    )
    change = (
        "a shorter --t1 or fewer --loss-decades, or --solver kvaerno5 (implicit: its steps "
        "are not held by λ_max)"
    )
    if steps > s["max_steps"]:
        raise UsageError(f"--max-steps {s['max_steps']}: {where}; choose {change}")
    if steps > LONG_RUN_STEPS:
        print(f"note: {where}, a long run; {change} makes it shorter", flush=True)


def run(args) -> int:
    s = settings(args)
    with _sweep.from_args(args) as sweep:  # an unreachable --scheduler fails here
        return _run(args, s, sweep)


def _run(args, s, sweep) -> int:
    folder = RunFolder.choose("lazy", args.out, args.resume)
    stored = folder.stored_config() if folder.resumed else None
    if stored is not None:
        s = resumed_settings(stored, folder.path, args, s, DEFAULTS)
    data = load_data(s)  # bad data fails before a folder is made
    X, Y, X_test, Y_test = data[:4]
    data_sha256 = sha256(X, Y, X_test, Y_test)
    check_resumed_digest(stored, folder.path, "data_sha256", data_sha256, "the data")
    _interrupt.watch(folder)
    model = build_model(s, X.shape[1])
    # Said before the first long computation, with or without --no-progress: at 10⁷
    # parameters the constants alone take minutes.
    tqdm.write(
        f"lazy: {n_parameters(X.shape[1], s['width'], s['depth']):,} parameters, "
        f"{len(Y)} training points; computing the constants of Σ = JJᵀ (λ_min, λ_max) "
        f"before {len(s['alphas'])} flows; run folder {folder.path}"
    )
    constants = flows.lazy.lazy_constants(
        model,
        (X, Y),
        loss=LOSS,
        estimate_lip=s["activation"] not in NON_SMOOTH,
        lip_radius=s["lip_radius"],
        key=jax.random.PRNGKey(s["seed"] + 1),
    )
    t1 = _horizon(s, constants)
    _check_cost(s, t1, constants.lambda_max)
    ts = flows.lazy.lazy_save_times(t1, constants.lambda_max, s["n_times"])
    config = stored or {
        **s,
        "t1": t1,
        "t1_rule": "given (--t1)"
        if s["t1"] is not None
        else f"flows.lazy.lazy_horizon: D·ln(10)/(2·λ_min(Σ)) with D = --loss-decades = "
        f"{s['loss_decades']:g}",
        "task": data.task,
        "data_description": describe(s, data),
        "data_notes": data.notes,
        "data_sha256": data_sha256,
        "n_train": int(len(Y)),
        "n_test": int(len(Y_test)),
        "in_size": int(X.shape[1]),
        "n_params": constants.n_params,
        "model": (
            f"{s['symmetrize']} {'TwoLayerNet' if s['depth'] == 1 else 'MLP'} "
            f"(width {s['width']}, depth {s['depth']}, {s['activation']})"
        ),
        "loss": "squared, sum: R(y) = ½‖y − y*‖²",
        "n_save_times": int(len(ts)),
        "dtype": "float64",
        "remainder_rule": "flows.lazy.lazy_remainder_rule: remainder form for α >= "
        f"{flows.lazy.LAZY_REMAINDER_ALPHA:g}, direct form below",
    }
    folder.start(config)
    shared = {"settings": s, "X": X, "Y": Y, "heldout": X_test if len(X_test) else None, "ts": ts}
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


def _alpha_sweep(sweep, folder, shared) -> list:
    """Every α as a task of the sweep layer; the interrupt line counts the finished ones."""
    alphas = shared["settings"]["alphas"]
    tasks = [{"alpha": alpha} for alpha in alphas]
    finished = [0]

    def kept(result):
        finished[0] += not result.failed
        folder.kept = f"{finished[0]} of {len(alphas)} α finished"

    folder.kept = f"0 of {len(alphas)} α finished"
    return sweep.run(
        alpha_task,
        tasks,
        folder.path,
        shared=shared,
        desc="alpha sweep",
        check=_interrupt.check,
        on_result=kept,
        order=_interleaved(alphas),
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
