"""exprb32 against Tsit5 (and "auto") at a moderate horizon, side by side in one run (issue 10):
`python benchmarks/exprb.py [--params 1000 10000] [--t1 100] [--out benchmarks/exprb.json]`.

The shared two-layer tanh problem of `_problem.py` (squared loss, rtol 1e-6, atol 1e-9), to
t1. For each solver: warm wall time (best of 2 interleaved calls after one compiling call),
steps, gradients, Hessian-vector products and the final error against Dopri8 at rtol 1e-12
(`Problem.error`). The issue's goal: exprb32 at most 0.5× Tsit5's time at equal error.
"""

import argparse
import datetime
import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import _problem  # noqa: E402
from benchmarks._timing import best_of, load  # noqa: E402
from experiments._files import versions, write_json  # noqa: E402

SOLVERS = ("exprb32", "tsit5", "auto")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--params", type=int, nargs="+", default=[1000, 10000])
    p.add_argument("--t1", type=float, default=100.0)
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "exprb.json"))
    args = p.parse_args(argv)
    rows, load_before = [], load()
    for params in args.params:
        prob = _problem.two_layer(params, t1=args.t1)
        # gradient_flow returns numpy arrays: each call has finished when it returns
        runs = {s: (lambda s=s, prob=prob: prob.flow(solver=s)) for s in SOLVERS}
        for run in runs.values():
            run()  # compile
        seconds, trajs = best_of(runs, 2)
        finals = {s: prob.final(traj) for s, traj in trajs.items()}
        stats = {s: traj.stats for s, traj in trajs.items()}
        for s in SOLVERS:
            row = {
                "params": prob.params,
                "t1": args.t1,
                "solver": s,
                "seconds": seconds[s],
                "over_tsit5": seconds[s] / seconds["tsit5"],
                "error": prob.error(finals[s]),
                **{k: stats[s][k] for k in ("num_steps", "grad_evals", "jvp_evals", "solvers")},
            }
            rows.append(row)
            print(
                f"p={row['params']} {s:8s} {row['seconds']:7.2f} s  {row['over_tsit5']:.2f}× Tsit5"
                f"  steps {row['num_steps']:6d}  error {row['error']:.2e}",
                flush=True,
            )
    write_json(
        args.out,
        {
            "rows": rows,
            "load": [load_before, load()],
            "versions": versions(),
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "command": "python benchmarks/exprb.py " + " ".join(sys.argv[1:]),
        },
    )


if __name__ == "__main__":
    main()
