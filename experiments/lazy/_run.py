"""The lazy sweep: settings, data, constants, every α, results, figures, summary."""

import hashlib

import jax
import numpy as np
from tqdm.auto import tqdm

import flows

from .. import _interrupt
from .._options import UsageError
from .._run_folder import RunFolder
from ._alpha import LOSS, NON_SMOOTH, _finished, solve_alpha
from ._cli import resumed, settings
from ._inputs import build_model, describe, load_data
from ._report import print_summary
from ._results import write_results


def _sha256(*arrays) -> str:
    data = b"".join(np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in arrays)
    return hashlib.sha256(data).hexdigest()


def _horizon(s, constants) -> float:
    if s["t1"] is not None:
        return s["t1"]
    if constants.lambda_min <= 1e-12 * constants.lambda_max:
        raise UsageError(
            f"--t1: the NTK Gram matrix is singular (λ_min = {constants.lambda_min:.3g}), "
            "so no horizon makes the loss fall by 10^D; give --t1"
        )
    return flows.lazy_horizon(constants.lambda_min, s["loss_decades"])


def run(args) -> int:
    s = settings(args)
    progress = not args.no_progress
    folder = RunFolder.choose("lazy", args.out, args.resume)
    stored = folder.stored_config() if folder.resumed else None
    if stored is not None:
        s = resumed(stored, folder.path, args, s)
    data = load_data(s)  # bad data fails before a folder is made
    X, Y, X_test, Y_test = data[:4]
    data_sha256 = _sha256(X, Y, X_test, Y_test)
    if stored is not None and stored.get("data_sha256", data_sha256) != data_sha256:
        raise UsageError(
            f"--resume {folder.path!r}: the data differ from the run's (SHA-256 of the "
            "training and held-out arrays); start a new run"
        )
    _interrupt.watch(folder)
    model = build_model(s, X.shape[1])
    constants = flows.lazy_constants(
        model,
        (X, Y),
        loss=LOSS,
        estimate_lip=s["activation"] not in NON_SMOOTH,
        lip_radius=s["lip_radius"],
        key=jax.random.PRNGKey(s["seed"] + 1),
    )
    t1 = _horizon(s, constants)
    ts = flows.lazy_save_times(t1, constants.lambda_max, s["n_times"])
    config = stored or {
        **s,
        "t1": t1,
        "t1_rule": "given (--t1)"
        if s["t1"] is not None
        else f"flows.lazy_horizon: D·ln(10)/(2·λ_min(Σ)) with D = --loss-decades = "
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
        "remainder_rule": "flows.lazy_remainder_rule: remainder form for α >= "
        f"{flows.LAZY_REMAINDER_ALPHA:g}, direct form below",
    }
    folder.start(config)
    records = _sweep(folder, s, model, (X, Y), X_test if len(X_test) else None, ts, progress)
    _interrupt.check()
    try:
        write_results(folder.path, config, records, constants, s, t1)
        from ._plots import plot  # matplotlib only when drawing: `gradflows list` stays fast

        figures = plot(folder.path)
        print_summary(folder.path, figures)
    except Exception as e:  # the finished α stay on disk: say so, and how to redo the report
        raise RuntimeError(
            f"the report stage failed ({type(e).__name__}: {e}); {folder.kept} are kept in "
            f"{folder.path} (alpha-XX.json/.npz); write the report again with: "
            f"{folder.resume_command()}"
        ) from e
    return 1 if any(r["failed"] for r in records) else 0


def _sweep(folder, s, model, data, heldout, ts, progress) -> list[dict]:
    alphas = s["alphas"]
    done = [_finished(folder.path, i) for i in range(len(alphas))]
    records = []

    def kept():
        n = len(records) + sum(r is not None for r in done[len(records) :])
        folder.kept = f"{n} of {len(alphas)} α finished"

    kept()
    initial = len(alphas) - done.count(None)
    bar = tqdm(total=len(alphas), initial=initial, desc="alpha sweep", disable=not progress)
    try:
        for i, alpha in enumerate(alphas):
            record = done[i]
            if record is None:
                _interrupt.check()
                record = solve_alpha(i, alpha, model, data, heldout, s, ts, folder.path, progress)
                bar.update(1)
            records.append(record)
            kept()
    finally:
        bar.close()
    return records
