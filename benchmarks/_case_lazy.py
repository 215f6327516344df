"""Case 7: `gradflows run lazy` end to end, in a subprocess; case 14: the same with
`--activation relu` (the Filippov solve, kink events per α)."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from ._case_common import _row, _skip


def _peak_rss_mb(stderr: str):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(m.group(1)) / 1024 if m else None


def _cpu_s(stderr: str):
    """User + system CPU seconds from GNU time's -v report, or None."""
    parts = [re.search(rf"{k} time \(seconds\): ([\d.]+)", stderr) for k in ("User", "System")]
    return sum(float(m.group(1)) for m in parts) if all(parts) else None


def _run_lazy(extra: list):
    """Run `gradflows run lazy *extra` in a fresh folder: (process, wall s, peak RSS MB,
    CPU s or None, the run's results.json or None, the command)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "experiments", "run", "lazy", *extra]
    gnu_time = shutil.which("time")
    with tempfile.TemporaryDirectory() as work:
        out = ["--out", os.path.join(work, "run")] if extra else []
        full = [gnu_time, "-v", *cmd, *out] if gnu_time else [*cmd, *out]
        start = time.perf_counter()
        proc = subprocess.run(full, cwd=work, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        results = None
        if out and os.path.exists(os.path.join(out[1], "results.json")):
            with open(os.path.join(out[1], "results.json")) as f:
                results = json.load(f)
    peak = _peak_rss_mb(proc.stderr) if gnu_time else None
    if peak is None:
        import resource

        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    cpu = _cpu_s(proc.stderr) if gnu_time else None
    return proc, seconds, peak, cpu, results, cmd


def _unavailable(cfg, case):
    if importlib.util.find_spec("experiments.lazy") is None:
        return [_skip(cfg, case, None, "experiments.lazy is not on this branch yet")]
    if cfg.quick:
        return [_skip(cfg, case, None, "not in --quick (runs the whole default experiment)")]
    return None


def _failed(cfg, case, proc):
    tail = proc.stderr.strip().splitlines()[-3:]
    return [_skip(cfg, case, None, f"gradflows run lazy failed ({proc.returncode}): {tail}")]


SLOPES = ("weight_gap_slope", "output_gap_slope", "heldout_output_gap_slope", "distance_slope")


def _summary(seconds, peak, cpu, results, cmd) -> dict:
    """Wall, CPU, peak RSS, slopes, late rate and per-α steps/wall/CPU of one lazy run."""
    return {
        "command": " ".join(cmd),
        "seconds": seconds,
        "cpu_s": cpu,
        "peak_rss_mb": peak,
        "solver": results["config"]["solver"],
        "rtol": results["config"]["rtol"],
        **{k: results["fits"][k] for k in SLOPES},
        "late_rate_median": results["fits"]["late_rate_median"],
        "per_alpha": [
            {
                "alpha": r["alpha"],
                "form": r.get("form"),
                "steps": r.get("steps"),
                "wall_s": r.get("wall_s"),
                "cpu_s": (r.get("task") or {}).get("cpu_s"),
            }
            for r in results["runs"]
        ],
    }


def case_lazy(cfg, params=None):
    """The whole default `gradflows run lazy` (exprk4) and, with `--profile`, the same run with
    `--solver tsit5` (the method before exprk4) after it, in subprocesses: wall and CPU time,
    peak memory, steps per α and the fitted slopes (which must agree to ±0.02)."""
    skipped = _unavailable(cfg, "lazy")
    if skipped:
        return skipped
    proc, seconds, peak, cpu, results, cmd = _run_lazy(["--no-progress"])
    if proc.returncode != 0 or results is None:
        return _failed(cfg, "lazy", proc)
    new = _summary(seconds, peak, cpu, results, cmd)
    rows = [
        _row(
            cfg,
            "lazy",
            None,
            "default `gradflows run lazy`: wall time",
            seconds,
            "s",
            goal=("<=", 45.0),
            ours=f"{seconds:.1f} s wall, {cpu or float('nan'):.0f} s CPU, peak RSS {peak:.0f} MB, "
            f"steps per α {[r['steps'] for r in new['per_alpha']]}",
            details=new,
            note="slopes " + ", ".join(f"{new[k]:.3f}" for k in SLOPES),
            command="gradflows run lazy  (timed by " + cfg.command("lazy") + ")",
        )
    ]
    if not cfg.profile:
        return rows
    proc, seconds, peak, cpu, results, cmd = _run_lazy(["--no-progress", "--solver", "tsit5"])
    if proc.returncode != 0 or results is None:
        return rows + _failed(cfg, "lazy", proc)
    old = _summary(seconds, peak, cpu, results, cmd)
    same = all(abs(new[k] - old[k]) <= 0.02 for k in SLOPES)
    rows.append(
        _row(
            cfg,
            "lazy",
            None,
            "`--solver tsit5` (before) ÷ default (exprk4): wall time",
            old["seconds"] / new["seconds"],
            "×",
            goal=(">=", 2.0),
            ours=f"exprk4 {new['seconds']:.1f} s",
            theirs=f"tsit5 {old['seconds']:.1f} s wall, steps per α "
            f"{[r['steps'] for r in old['per_alpha']]}",
            details={"tsit5": old, "slopes_agree_to_0.02": same},
            note="slopes (tsit5) "
            + ", ".join(f"{old[k]:.3f}" for k in SLOPES)
            + f"; agree with exprk4's to ±0.02: {'yes' if same else 'NO'}",
            command="gradflows run lazy --solver tsit5  (timed by " + cfg.command("lazy") + ")",
        )
    )
    return rows


def case_relu(cfg, params=None):
    """Wall and CPU time of the default `gradflows run lazy --activation relu`, with each α's
    kink events, steps, wall and CPU seconds (issue #22 item 2: goal <= 3 min)."""
    skipped = _unavailable(cfg, "relu")
    if skipped:
        return skipped
    proc, seconds, peak, cpu, results, cmd = _run_lazy(["--activation", "relu", "--no-progress"])
    if proc.returncode != 0 or results is None:
        return _failed(cfg, "relu", proc)
    keys = ("alpha", "events", "crossings", "sliding_entries", "sliding_exits", "steps")
    per_alpha = [
        {
            **{k: r.get(k) for k in keys},
            "wall_s": r.get("wall_s"),
            "cpu_s": (r.get("task") or {}).get("cpu_s"),
        }
        for r in results["runs"]
    ]
    events = sum(r["events"] or 0 for r in per_alpha)
    fits = {k: v for k, v in results["fits"].items() if k.endswith("slope")}
    per_event = [  # the α's task CPU (steps, events, compilation) over its events, where
        # events are most of its cost (>= 50 events; an α without events takes ~10 s)
        (r, 1e3 * r["cpu_s"] / r["events"])
        for r in per_alpha
        if (r["events"] or 0) >= 50 and r["cpu_s"]
    ]
    worst = max(per_event, key=lambda p: p[0]["events"], default=None)  # the most events
    rows = [
        _row(
            cfg,
            "relu",
            None,
            f"α = {r['alpha']:g}: task CPU per kink event",
            ms,
            "ms",
            goal=("<=", 5.0) if r is worst[0] else None,
            ours=f"{ms:.1f} ms ({r['cpu_s']:.1f} s CPU, {r['events']} events, {r['steps']} steps)",
            details=r,
            note="upper bound: the α's whole task CPU (steps between events, compilation) "
            "over its events"
            + (
                "; the goal (issue #22: <= 5 ms per event) at the α with most events"
                if r is worst[0]
                else ""
            ),
            command="gradflows run lazy --activation relu  (timed by " + cfg.command("relu") + ")",
        )
        for r, ms in per_event
    ]
    return rows + [
        _row(
            cfg,
            "relu",
            None,
            "default `gradflows run lazy --activation relu`: wall time",
            seconds,
            "s",
            goal=("<=", 180.0),
            ours=f"{seconds:.0f} s wall, {cpu or float('nan'):.0f} s CPU, {events} events",
            details={
                "seconds": seconds,
                "cpu_s": cpu,
                "peak_rss_mb": peak,
                "events": events,
                "per_alpha": per_alpha,
                "fits": fits,
                "command": " ".join(cmd),
            },
            note=f"{events} kink events over {len(per_alpha)} α; peak RSS {peak:.0f} MB",
            command="gradflows run lazy --activation relu  (timed by " + cfg.command("relu") + ")",
        )
    ]
