"""`gradflows run lazy`: settings, data and model from the options, then the pipeline
(`_pipeline.sweep_model`, which `experiments.lazy.run` also drives for a user's model)."""

from tqdm.auto import tqdm

from .. import _sweep
from .._files import sha256
from .._run_folder import check_resumed_digest, open_run
from ._cli import DEFAULTS, settings, with_solve
from ._inputs import build_model, describe, load_data, n_parameters
from ._pipeline import sweep_model


def run(args) -> int:
    s = settings(args)
    with _sweep.from_args(args) as sweep:  # an unreachable --scheduler fails here
        return _run(args, s, sweep)


def _as_options(recorded: dict) -> dict:
    """A resumed run's settings as its options: the α it recorded, without the --n-alpha that
    chose them (both given is refused), and for built-in data the --task it resolved
    ("classification") given back as the default that resolved it (--task is a file's)."""
    builtin = recorded.get("data") in ("digits", "teacher")
    return {**recorded, "n_alpha": None, **({"task": "auto"} if builtin else {})}


def _run(args, s, sweep) -> int:
    folder, stored, s = open_run(
        "lazy", args.out, args.resume, args, s, DEFAULTS, settings=settings, adapt=_as_options
    )
    if stored is not None:
        s = with_solve(s)
    data = load_data(s)  # bad data fails before a folder is made
    X, Y, X_test, Y_test = data[:4]
    data_sha256 = sha256(X, Y, X_test, Y_test)
    check_resumed_digest(stored, folder.path, "data_sha256", data_sha256, "the data")
    model = build_model(s, X.shape[1])
    # Said before the first long computation, with or without --no-progress: at 10⁷
    # parameters the constants alone take minutes.
    tqdm.write(
        f"lazy: {n_parameters(X.shape[1], s['width'], s['depth']):,} parameters, "
        f"{len(Y)} training points; computing the constants of Σ = JJᵀ (λ_min, λ_max) "
        f"before {len(s['alphas'])} flows"
    )
    info = {
        "task": data.task,
        "data_description": describe(s, data),
        "data_notes": data.notes,
        "data_sha256": data_sha256,
        "model": (
            f"{s['symmetrize']} {'TwoLayerNet' if s['depth'] == 1 else 'MLP'} "
            f"(width {s['width']}, depth {s['depth']}, {s['activation']})"
        ),
    }
    heldout = X_test if len(X_test) else None
    return sweep_model(
        model,
        (X, Y, heldout),
        s,
        folder,
        sweep,
        stored,
        info,
        user_model=False,
        verbose=args.verbose,
    )
