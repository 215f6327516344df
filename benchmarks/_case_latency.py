"""Case 12 (issue 21, items 1 and 2): the first call's latency and compilation reuse.

- the first call of `flows.gradient_flow` (every default, "auto") in a fresh process with the
  persistent compilation cache off, against one jitted bare `diffrax.diffeqsolve` (Tsit5) of
  the same field, also cold (`_latency_probe.py`; processes interleaved, best of
  `cfg.repeats`); goal ≤ 1.5×; the same ratio in CPU time (`details.cpu_ratio`, all
  threads), which a loaded machine changes less;
- a second process with the persistent cache warm (a fresh cache folder filled by a first
  process): its first call over the first process's; goal ≤ 0.5× (it "starts warm");
- the programs a second `gradient_flow` call compiles again with another `ts` length, `t1`
  and `max_steps` on the same loss (JAX's compile log, by program name; a program the first
  call had not needed yet is listed apart); goal 0.
"""

import json
import logging
import os
import subprocess
import sys
import tempfile

import jax

import flows

from ._case_common import _row
from ._timing import load

GOAL_COLD = 1.5
GOAL_WARM_PROCESS = 0.5
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _probe(what: str, **env) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks._latency_probe", what],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _compiled(call) -> list[str]:
    """The names of the programs `call()` compiles, from JAX's compile log."""
    names = []

    class _Names(logging.Handler):
        def emit(self, record):
            text = record.getMessage()
            if text.startswith("Compiling "):
                names.append(text.split(" ", 2)[1])

    handler = _Names()
    logging.getLogger("jax").addHandler(handler)
    try:
        with jax.log_compiles(True):
            call()
    finally:
        logging.getLogger("jax").removeHandler(handler)
    return names


def _new_programs() -> dict:
    """Programs a second call with another `ts` length, `t1` and `max_steps` compiles: those
    the first call had compiled too (a recompilation: the goal is 0) and those it had not
    needed yet (the trial step of "auto"'s stiff solver, compiled when a switch is first
    considered, at any horizon)."""
    from ._latency_probe import MODEL, loss

    first = _compiled(
        lambda: flows.gradient_flow(loss, MODEL, 100.0, ts=flows.log_times(100.0, 100))
    )
    second = _compiled(
        lambda: flows.gradient_flow(
            loss, MODEL, 300.0, ts=flows.log_times(300.0, 36), max_steps=54_321
        )
    )
    again = [name for name in second if name in first]
    return {"new_programs": len(again), "recompiled": again,
            "first_compiled": [name for name in second if name not in first]}  # fmt: skip


def case_latency(cfg, params):
    repeats = max(1, min(cfg.repeats, 2))
    runs = {"diffrax": [], "gradflows": []}
    off = {"GRADFLOWS_COMPILATION_CACHE": "0"}
    for _ in range(repeats):  # interleaved: a burst of load hits both alike
        for what in runs:
            runs[what].append(_probe(what, **off))
    best = {what: min(r["cold"] for r in rs) for what, rs in runs.items()}
    with tempfile.TemporaryDirectory() as folder:
        cache = {"JAX_COMPILATION_CACHE_DIR": folder}
        filling, warm = _probe("gradflows", **cache), _probe("gradflows", **cache)
    new = _new_programs()
    cpu = {what: min(r["cold_cpu"] for r in rs) for what, rs in runs.items()}
    details = {"runs": runs, "filling": filling, "warm_cache": warm, **new, "load": load(),
               "cpu_ratio": cpu["gradflows"] / cpu["diffrax"],
               "warm_process_cpu_ratio": warm["cold_cpu"] / filling["cold_cpu"]}  # fmt: skip
    ratio = best["gradflows"] / best["diffrax"]
    p = runs["gradflows"][0]["p"]
    return [
        _row(
            cfg, "latency", params, f"eqx.nn.MLP p={p}, t=100: first call ÷ bare diffrax Tsit5",
            ratio, "×", goal=("<=", GOAL_COLD),
            ours=f"{best['gradflows']:.1f} s cold", theirs=f"{best['diffrax']:.1f} s cold",
            details=details,
        ),
        _row(
            cfg, "latency", params, "second process, warm compilation cache ÷ first",
            warm["cold"] / filling["cold"], "×", goal=("<=", GOAL_WARM_PROCESS),
            ours=f"{warm['cold']:.1f} s", theirs=f"{filling['cold']:.1f} s", details=details,
        ),
        _row(
            cfg, "latency", params, "programs compiled again for another ts, t1, max_steps",
            float(new["new_programs"]), "programs", goal=("<=", 0.0), details=details,
        ),
    ]  # fmt: skip
