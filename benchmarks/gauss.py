"""Gauss–Legendre solvers against Tsit5 and Kvaerno5 on the balance problem:
`python benchmarks/gauss.py [--rtols 1e-6 1e-3] [--solvers ...] [--problems logistic squared]`.

The deep linear net 64 → 16 → 8 → 1 of `gradflows run balance` (digits 3 and 8, 200 training
points, seed 0, Gaussian init of scale 1, mean loss) integrated to t = 10⁶ from the same
initialisation. For each solver and tolerance (atol = rtol/100): the maximum over the save
times of the relative drift of every C_k = W_kW_kᵀ − W_{k+1}ᵀW_{k+1}
(`flows.observables.balancedness_drift`,
relative), steps, gradient evaluations, Hessian-vector products, the largest Newton residual,
the wall time of a second (compiled) run, and the final-state error against a reference
solve (Dopri8, rtol 1e-12). Writes `benchmarks/gauss.json`.
"""

import argparse
import datetime
import os
import platform
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import flows  # noqa: E402
import models  # noqa: E402
from experiments._data import digits_pair  # noqa: E402
from experiments._files import versions, write_json  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOLVERS = ("tsit5", "kvaerno5", "implicit_midpoint", "gauss4")
SETTINGS = {
    "classes": [3, 8],
    "n_train": 200,
    "seed": 0,
    "dims": [64, 16, 8, 1],
    "scale": 1.0,
    "t1": 1e6,
    "n_save": 120,
    "atol_over_rtol": 1e-2,
    "max_steps": 100_000,
    "reference": {"solver": "dopri8", "rtol": 1e-12, "atol": 1e-14},
}


def _problem(kind: str):
    s = SETTINGS
    X, y, _, _ = digits_pair(s["classes"], n_train=s["n_train"], n_test=0, seed=s["seed"])
    X, y = jnp.asarray(X), jnp.asarray(y)
    net0 = models.DeepLinearNet.gaussian(s["dims"], scale=s["scale"], key=jax.random.PRNGKey(0))
    objective = flows.LogisticLoss("mean") if kind == "logistic" else flows.SquaredLoss("mean")

    def loss(net):
        return objective(jax.vmap(net)(X)[:, 0], y)

    return loss, net0, {"drift": flows.observables.balancedness_drift(net0, relative=True)}


def _final_state(traj):
    return np.concatenate([np.ravel(w[-1]) for w in traj.params.weights])


def _solve(loss, net0, observables, solver, rtol, atol):
    s = SETTINGS
    return flows.gradient_flow(
        loss,
        net0,
        s["t1"],
        ts=flows.log_times(s["t1"], s["n_save"]),
        solver=solver,
        rtol=rtol,
        atol=atol,
        max_steps=s["max_steps"],
        observables=observables,
        save_params=True,
    )


def run(problems, solvers, rtols) -> dict:
    rows = []
    for kind in problems:
        loss, net0, observables = _problem(kind)
        ref = SETTINGS["reference"]
        reference = _final_state(
            _solve(loss, net0, observables, ref["solver"], ref["rtol"], ref["atol"])
        )
        for solver in solvers:
            for rtol in rtols:
                atol = SETTINGS["atol_over_rtol"] * rtol
                start = time.perf_counter()
                try:
                    traj = _solve(loss, net0, observables, solver, rtol, atol)
                except (flows.MaxStepsReached, FloatingPointError) as e:
                    rows.append({"problem": kind, "solver": solver, "rtol": rtol, "error": str(e)})
                    print(f"{kind:8s} {solver:17s} rtol {rtol:g}: {e}", flush=True)
                    continue
                first = time.perf_counter() - start
                start = time.perf_counter()
                _solve(loss, net0, observables, solver, rtol, atol)  # compiled: wall time
                wall = time.perf_counter() - start
                st = traj.stats
                row = {
                    "problem": kind,
                    "solver": solver,
                    "rtol": rtol,
                    "atol": atol,
                    "max_relative_drift": float(traj.observables["drift"].max()),
                    "max_relative_drift_per_k": traj.observables["drift"].max(axis=0).tolist(),
                    "num_steps": st["num_steps"],
                    "num_rejected_steps": st["num_rejected_steps"],
                    "grad_evals": st["grad_evals"],
                    "hvp_evals": st["jvp_evals"],
                    "newton_residual": st["newton_residual"],
                    "final_state_relative_error": float(
                        np.linalg.norm(_final_state(traj) - reference) / np.linalg.norm(reference)
                    ),
                    "loss_final": float(traj.loss[-1]),
                    "wall_s": wall,
                    "first_call_s": first,
                }
                rows.append(row)
                print(
                    f"{kind:8s} {solver:17s} rtol {rtol:g}: drift {row['max_relative_drift']:.2e}"
                    f"  steps {row['num_steps']} ({row['num_rejected_steps']} rejected)"
                    f"  grads {row['grad_evals']}  HVPs {row['hvp_evals']}"
                    f"  error {row['final_state_relative_error']:.1e}  {wall:.2f} s",
                    flush=True,
                )
    return {
        "what": __doc__.splitlines()[0],
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "versions": versions(),
        "settings": SETTINGS,
        "rows": rows,
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python benchmarks/gauss.py", description=__doc__)
    p.add_argument("--problems", nargs="+", default=["logistic"], choices=["logistic", "squared"])
    p.add_argument("--solvers", nargs="+", default=list(SOLVERS))
    p.add_argument("--rtols", nargs="+", type=float, default=[1e-6, 1e-3])
    p.add_argument("--out", default=os.path.join(HERE, "gauss.json"))
    args = p.parse_args(argv)
    result = run(args.problems, args.solvers, args.rtols)
    write_json(args.out, result)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
