"""Where one η task of `gradflows run eos` spends its time, part by part, in one process:
`python benchmarks/eos_profile.py [--eta 0.9] [--n-train 100] [--t1 80] [--rtol 1e-6]
[--atol 1e-8]` (the other settings: the run's defaults).

Parts, in the task's order: the problem (data, network, loss), gradient descent, GD's
sharpness at every second step (`sharpness_along`, as the run), the gradient flow, the
modified flow (order 1) and the central flow (k = 1, stopped where eigenvalue 2 reaches
2/η). Each is given with its wall and CPU seconds and the seconds XLA spent compiling in it
(JAX's `/jax/core/compile/backend_compile_duration` events; 0 for a program found in the
compilation cache, so run it twice, or with a fresh `XDG_CACHE_HOME`, to see both), and
its counts (Lanczos products, solver steps).
"""

import argparse
import os
import sys
import time
import warnings

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import numpy as np  # noqa: E402

COMPILING = [0.0]


def _listen(event, seconds, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILING[0] += seconds


def main(argv=None) -> None:
    jax.monitoring.register_event_duration_secs_listener(_listen)
    from experiments.eos._cli import DEFAULTS, DIGITS, solve_settings_of
    from experiments.eos._compare import LANCZOS_MAX_ITERS, LANCZOS_TOL, _flow, _subsample
    from experiments.eos._gd import descend
    from experiments.eos._problem import problem_for
    from flows.large_steps import EdgeLimitReached, sharpness_along

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--eta", type=float, default=0.9)
    p.add_argument("--n-train", type=int, default=DIGITS["n_train"])
    p.add_argument("--t1", type=float, default=DIGITS["t1"])
    p.add_argument("--rtol", type=float, default=DEFAULTS["rtol"])
    p.add_argument("--atol", type=float, default=DEFAULTS["atol"])
    a = p.parse_args(argv)
    s = dict(DEFAULTS, **DIGITS, k=1)
    s.update(n_train=a.n_train, t1=a.t1, rtol=a.rtol)
    s.update(atol=a.atol)

    def part(name, fn):
        c0, w0, k0 = time.process_time(), time.perf_counter(), COMPILING[0]
        out = fn()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        print(
            f"{name:14s} wall {wall:6.1f} s  CPU {cpu:6.1f} s  compiling {COMPILING[0] - k0:5.1f} s"
        )
        return out

    problem = part("problem", lambda: problem_for(s))
    steps = int(round(a.t1 / a.eta))
    gd = part("GD", lambda: descend(problem.loss, problem.net0, eta=a.eta, steps=steps))
    idx = np.arange(0, steps + 1, s["sharpness_every"])
    sub, t = _subsample(gd.trajectory, idx), gd.trajectory.ts[idx]

    def sharp():  # the run counts the saves where Lanczos stops above tol; so does this
        warnings.simplefilter("ignore", UserWarning)
        return sharpness_along(problem.loss, sub, 1, tol=LANCZOS_TOL, max_iters=LANCZOS_MAX_ITERS)

    products = part("sharpness", sharp).products
    print(f"{'':14s} {len(products)} saves, {products.sum()} Lanczos products")
    settings = solve_settings_of(s)
    for name in ("gradient_flow", "modified_flow", "central_flow"):

        def solve(name=name):
            try:
                return _flow(
                    name, problem.loss, problem.net0, float(t[-1]), t, a.eta, settings, 600
                )
            except EdgeLimitReached as e:
                return e.partial

        flow = part(name.replace("_", " "), solve)
        print(f"{'':14s} {flow.stats['num_steps']} steps to t = {flow.ts[-1]:.4g}")
    print(f"compiling in all: {COMPILING[0]:.1f} s")


if __name__ == "__main__":
    main()
