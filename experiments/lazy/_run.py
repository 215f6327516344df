"""The lazy sweep: settings, data, constants, every α, results, figures, summary."""

import hashlib
import json
import math
import os

import jax
import numpy as np

import flows

from .. import _sweep
from .._common import UsageError, run_dir, write_json
from ._alpha import LOSS, NON_SMOOTH, alpha_task, record_of
from ._cli import _resumed, _settings, _stored_config
from ._inputs import build_model, load_data, save_times
from ._report import print_summary
from ._results import write_results


def run(args) -> int:
    s = _settings(args)
    with _sweep.from_args(args) as sweep:  # an unreachable --scheduler fails here, first
        return _run(args, s, sweep)


def _run(args, s, sweep) -> int:
    if args.resume is not None:
        if not os.path.isdir(args.resume):
            raise UsageError(f"--resume {args.resume!r}: no such folder")
        s = _resumed(args.resume, s)
    X, Y, X_test, Y_test, data_what = load_data(s)  # bad data fails before a folder is made
    data_sha256 = hashlib.sha256(
        b"".join(
            np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in (X, Y, X_test, Y_test)
        )
    ).hexdigest()
    if args.resume is not None:
        stored = _stored_config(args.resume).get("data_sha256")
        if stored is not None and stored != data_sha256:
            raise UsageError(
                f"--resume {args.resume!r}: the data differ from the run's (SHA-256 of the "
                "training and held-out arrays); start a new run"
            )
    elif args.out is not None and os.path.exists(os.path.join(args.out, "config.json")):
        raise UsageError(
            f"--out {args.out!r} already holds a run: continue it with --resume {args.out} "
            "or choose a new --out"
        )
    folder = args.resume if args.resume is not None else run_dir(args.out, "lazy")
    model = build_model(s, X.shape[1])
    smooth = s["activation"] not in NON_SMOOTH
    constants = flows.lazy_constants(
        model,
        (X, Y),
        loss=LOSS,
        estimate_lip=smooth,
        lip_radius=s["lip_radius"],
        key=jax.random.PRNGKey(s["seed"] + 1),
    )
    t1 = s["t1"]
    if t1 is None:
        if constants.lambda_min <= 1e-12 * constants.lambda_max:
            raise UsageError(
                f"--t1: the NTK Gram matrix is singular (λ_min = {constants.lambda_min:.3g}), "
                "so no horizon makes the loss fall by 10^D; give --t1"
            )
        t1 = s["loss_decades"] * math.log(10) / (2 * constants.lambda_min)
    ts = save_times(t1, constants.lambda_max, s["n_times"])
    heldout = X_test if len(X_test) else None
    config = {
        **s,
        "t1": t1,
        "t1_rule": "given (--t1)"
        if s["t1"] is not None
        else f"D·ln(10)/(2·λ_min(Σ)) with D = --loss-decades = {s['loss_decades']:g}",
        "data_description": data_what,
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
    }
    if args.resume is None:
        write_json(os.path.join(folder, "config.json"), config)
    else:
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)

    shared = {"settings": s, "X": X, "Y": Y, "heldout": heldout, "ts": ts}
    tasks = [{"alpha": alpha} for alpha in s["alphas"]]
    results = sweep.run(alpha_task, tasks, folder, shared=shared, desc="alpha sweep")
    records = [record_of(r) for r in results]
    walls = [r.stats["wall_s"] for r in results if "wall_s" in r.stats]
    info = {
        "backend": sweep.describe(),
        "tasks": len(tasks),
        "task_wall_s_total": sum(walls),
        "critical_path_s": max(walls, default=0.0),
        "parts": "parts/<key>.json and .npz, key = task_key({'alpha': α})",
    }
    write_results(folder, config, records, [r.arrays for r in results], constants, s, t1, info)
    from ._plots import plot  # matplotlib only when drawing: `gradflows list` stays fast

    figures = plot(folder)
    print_summary(folder, figures)
    return 1 if any(r["failed"] for r in records) else 0
