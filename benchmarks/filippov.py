"""Cost of exact ReLU-family flows: `flows.nonsmooth.filippov_flow` against the chattering baseline.

`python benchmarks/filippov.py [--cases digits lazy] [--out benchmarks/filippov.json]`

- `digits`: two-layer nets of width 8 (ReLU, abs, leaky ReLU) on 10 digits (3 vs 8) projected
  on their top 3 principal components, R = mean squared loss, rtol 1e-8, atol 1e-10: to
  t = 50 and to t = 10⁴ with a 10⁵ budget (steps + events), with the drift of the per-neuron
  invariants ‖b_j‖² − a_j² relative to max(1, ‖b_j‖² + a_j²) at t = 0. The data and nets are
  those of `gradflows run balance`'s homogeneous part.
- `lazy`: the default net of `gradflows run lazy` (doubled two-layer, width 256, 100 digits,
  64 standardised pixels, R = ½‖f − Y‖²) with ReLU, at α = 1 and α = 10, to the horizon the
  lazy experiment chooses, t1 = 6·ln 10/(2 λ_min(Σ)).
- `baseline`: plain Tsit5 (`flows.gradient_flow`) on the digits ReLU net with a 2·10⁴-step
  budget: where it stops (the issue reports t = 21.2; 3.2·10⁶ steps reach t = 47.5).

Each row records steps (accepted, rejected), events (crossings, sliding entries and exits),
wall seconds of a second call (compilation excluded) and of the first.
"""

import argparse
import json
import os
import sys
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import experiments  # noqa: E402
import flows  # noqa: E402
import models  # noqa: E402

ACTIVATIONS = ("relu", "abs", "leaky_relu")
RTOL, ATOL = 1e-8, 1e-10


def _digits_pair(n_train):
    """Standardised pixels of digits 3 and 8, the training split of seed 0."""
    return experiments.digits_pair((3, 8), n_train=n_train, n_test=0, seed=0)[:2]


def digits_pca(n=10, d=3):
    """The balance experiment's homogeneous data: 10 points, top 3 principal components."""
    X, y = _digits_pair(200)
    Xc = X[:n] - X[:n].mean(0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    Z = Xc @ vt[:d].T
    return Z / Z.std(0), y[:n]


def _row(traj, first_wall, wall, **extra):
    s = traj.stats
    keys = ("num_steps", "num_accepted_steps", "num_rejected_steps", "events", "crossings")
    keys += ("sliding_entries", "sliding_exits", "pieces")
    return {
        **{k: s[k] for k in keys},
        "steps_plus_events": s["num_steps"] + s["events"],
        "sliding_at_end": s["sliding_at_ts"][-1],
        "wall_s": round(wall, 3),
        "first_call_wall_s": round(first_wall, 3),
        "loss_final": float(traj.loss[-1]),
        **extra,
    }


def _twice(fn):
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    start = time.perf_counter()
    out = fn()
    return out, first, time.perf_counter() - start


def digits_case():
    X, y = digits_pca()
    rows = []
    for name in ACTIVATIONS:
        net = models.TwoLayerNet(3, 8, activation=name, key=jax.random.PRNGKey(0))
        drift = flows.observables.neuron_balancedness_drift(net, relative=True)
        for t1 in (50.0, 1e4):

            def solve(net=net, t1=t1, drift=drift):
                return flows.nonsmooth.filippov_flow(
                    net,
                    (X, y),
                    t1,
                    loss=flows.SquaredLoss("mean"),
                    ts=np.linspace(0.0, t1, 41),
                    rtol=RTOL,
                    atol=ATOL,
                    max_steps=100_000,
                    observables={"drift": drift},
                    save_params=False,
                )

            traj, first, wall = _twice(solve)
            worst = float(traj.observables["drift"].max())
            rows.append(
                _row(
                    traj,
                    first,
                    wall,
                    case="digits",
                    activation=name,
                    t1=t1,
                    invariant_drift_relative=worst,
                    invariant_drift_over_rtol=worst / RTOL,
                )
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def baseline_case(budget=20_000):
    X, y = digits_pca()
    squared = flows.SquaredLoss("mean")
    rows = []
    for name in ACTIVATIONS:
        net = models.TwoLayerNet(3, 8, activation=name, key=jax.random.PRNGKey(0))

        def loss(n):
            return squared(jax.vmap(n)(jnp.asarray(X)), jnp.asarray(y))

        start = time.perf_counter()
        try:
            flows.gradient_flow(
                loss, net, 50.0, ts=np.linspace(0, 50, 41), solver="tsit5", rtol=RTOL,
                atol=ATOL, max_steps=budget, save_params=False,
            )  # fmt: skip
            reached, t_reached = "t1", 50.0
        except flows.MaxStepsReached as e:
            reached, t_reached = str(e).split(" before")[0], e.t
        rows.append(
            {
                "case": "baseline_tsit5",
                "activation": name,
                "max_steps": budget,
                "stopped": reached,
                "t_reached": t_reached,
                "wall_s": round(time.perf_counter() - start, 3),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def lazy_case(alphas=(1.0, 10.0)):
    X, y = _digits_pair(100)
    net = models.symmetrize(
        models.TwoLayerNet(64, 256, activation="relu", key=jax.random.PRNGKey(0)), "doubled"
    )
    lam = np.linalg.eigvalsh(flows.ntk.ntk_gram(net, X))
    t1 = 6.0 * np.log(10.0) / (2 * lam[0])
    rows = []
    for alpha in alphas:

        def solve(alpha=alpha):
            return flows.nonsmooth.filippov_flow(
                net, (X, y), t1, alpha=alpha, ts=flows.log_times(t1, 40, t_min=1e-3 * t1),
                rtol=1e-10, atol=1e-12, max_steps=100_000, save_params=False,
            )  # fmt: skip

        start = time.perf_counter()
        try:
            traj = solve()
        except flows.MaxStepsReached as e:
            rows.append({"case": "lazy", "alpha": alpha, "t1": t1, "error": str(e)})
            print(json.dumps(rows[-1]), flush=True)
            continue
        first = time.perf_counter() - start
        rows.append(_row(traj, first, first, case="lazy", alpha=alpha, t1=t1, lambda_min=lam[0]))
        print(json.dumps(rows[-1]), flush=True)
    return rows


CASES = {"digits": digits_case, "baseline": baseline_case, "lazy": lazy_case}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python benchmarks/filippov.py", description=__doc__)
    p.add_argument("--cases", nargs="+", default=["digits"], choices=sorted(CASES))
    p.add_argument("--out", default=None, help="write the rows as JSON here")
    args = p.parse_args(argv)
    rows = [row for name in args.cases for row in CASES[name]()]
    result = {
        "rtol": RTOL,
        "atol": ATOL,
        "solver": "tsit5 + events",
        "versions": experiments.versions(),
    }
    result["rows"] = rows
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
