"""The central flow's cold start on the authors' example (`_peer_mlp.py`: a swish MLP
8 → 16 → 16 → 1 on 128 random points, η = 0.1): `central_flow` for one GD step (t1 = η, its
default saves) as the first call of a fresh process with the compilation cache off, timed by
wall and CPU clocks (`time.process_time`, all threads), with the compile time of each of the
flow's two programs (JAX's compile events) and a second, warm call in the same process.

`python benchmarks/central_cold_start.py [--repeats 2] [--baseline PATH]` writes
`benchmarks/central_cold_start.json`; `--baseline` also times the tree at PATH (another
checkout of gradflows: the code before a change), its processes interleaved with ours so that
a burst of load hits both alike. The goal (docs/eos.md, cold start): a first call within 15 s
wall on a quiet machine.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GOAL_WALL_S = 15.0

# One fresh process: the first call and a second one, with the compile time of each program.
_CHILD = """
import json, os, sys, time
os.environ["GRADFLOWS_COMPILATION_CACHE"] = "0"
import jax
from jax import monitoring
jax.config.update("jax_enable_x64", True)
compiled = {}
def on(event, seconds, **kw):
    if event == "/jax/core/compile/backend_compile_duration":
        name = kw.get("fun_name")
        compiled[name] = compiled.get(name, 0.0) + seconds
monitoring.register_event_duration_secs_listener(on)
import jax.numpy as jnp
import flows
sys.path.insert(0, os.path.join(sys.argv[1], "benchmarks"))
from _peer_mlp import peer_mlp
loss, net, eta = peer_mlp()
jnp.zeros(1).block_until_ready()  # the backend starts before the call is timed
out = {}
compiled.clear()  # the problem's own set-up (its random draws) is not the call's
for call in ("first", "second"):
    w0, c0 = time.perf_counter(), time.process_time()
    traj = flows.central_flow(loss, net, eta, eta=eta, save_params=False)
    out[call] = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0}
    if call == "first":  # the first call's compilations (backend, wall), over 0.05 s
        out["compile_s"] = {k: round(v, 3) for k, v in compiled.items() if v > 0.05}
out["hvps"] = traj.stats["hvps"]
print(json.dumps(out))
"""


def first_call(tree: str) -> dict:
    """One fresh process's first and second call, with the code of the checkout `tree`."""
    env = {**os.environ, "PYTHONPATH": tree}
    out = subprocess.run([sys.executable, "-c", _CHILD, tree], cwd=tree, env=env, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    res = json.loads(out.strip().splitlines()[-1])
    res["load"] = os.getloadavg()[0]
    return res


def commit(tree: str) -> str | None:
    try:
        return subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--baseline", default=None, help="another checkout, timed alike")
    args = p.parse_args(argv)
    trees = {"ours": ROOT}
    if args.baseline:
        trees["baseline"] = os.path.abspath(args.baseline)
    runs = {name: [] for name in trees}
    load_start = os.getloadavg()
    for _ in range(args.repeats):
        for name, tree in trees.items():
            runs[name].append(first_call(tree))
            print(name, json.dumps(runs[name][-1]), file=sys.stderr, flush=True)
    import jax

    res = {"problem": "benchmarks/_peer_mlp.py: swish MLP 8-16-16-1, 128 random points, "
                      "eta = 0.1; central_flow(k=1) to t1 = eta, default saves, cache off",
           "goal_first_call_wall_s": GOAL_WALL_S, "load_start": load_start,
           "load_end": os.getloadavg(), "versions": {"jax": jax.__version__}}  # fmt: skip
    for name, tree in trees.items():
        best = min(runs[name], key=lambda r: r["first"]["wall_s"])
        cpu = min(r["first"]["cpu_s"] for r in runs[name])
        res[name] = {"commit": commit(tree), "runs": runs[name], "best_first_call": best["first"],
                     "min_first_call_cpu_s": cpu}  # fmt: skip
    print(json.dumps(res, indent=1))
    with open(os.path.join(HERE, "central_cold_start.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
