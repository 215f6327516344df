"""The sweep layer's speed-up: `gradflows run lazy` with `--workers N` against `--workers 0`.

`python benchmarks/sweep.py [--workers 2] [-- extra lazy options]` runs the default lazy job
(7 α since 2026-12-03, 13 before; width 256, 100 digits) twice in fresh processes, in-process
and on a LocalCluster, and prints and writes to `benchmarks/sweep_results.json`:
- wall time and total CPU time (user + system of the command and every process it started);
- how loaded the machine was: load averages, and the CPU time other processes took while each
  run lasted (from /proc/stat), as a fraction of the machine's cores;
- whether both results.json agree to the last bit (timing fields aside);
- the tasks' wall times, their sum and the critical path (the longest task), and the wall time
  that would follow on a cluster of k single-thread workers: at least max(critical path,
  sum / k), for a scheduler that gives the longest tasks out first (LPT list schedule, computed).
"""

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TIMING = ("wall_s", "task")


def _busy_jiffies() -> int:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4]  # all but idle and iowait


def _measure(cmd: list[str]) -> dict:
    """Run `cmd`, return wall, its CPU (children's rusage), others' CPU and the load."""
    hz = os.sysconf("SC_CLK_TCK")
    samples, stop = [], threading.Event()

    def sample():
        while not stop.wait(5):
            samples.append(os.getloadavg()[0])

    thread = threading.Thread(target=sample, daemon=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy0, load0, t0 = _busy_jiffies(), os.getloadavg(), time.perf_counter()
    thread.start()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    stop.set()
    busy = (_busy_jiffies() - busy0) / hz
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    cores = os.cpu_count()
    return {
        "command": " ".join(cmd),
        "wall_s": wall,
        "cpu_s": cpu,
        "cores_used": cpu / wall,
        "others_cpu_s": max(0.0, busy - cpu),
        "others_cores": max(0.0, busy - cpu) / wall,
        "idle_cores": max(0.0, cores - busy / wall),
        "load_1min_start": load0[0],
        "load_1min_mean": sum(samples) / len(samples) if samples else load0[0],
        "stdout_tail": proc.stdout.splitlines()[-3:],
    }


def _numbers(folder: str):
    with open(os.path.join(folder, "results.json")) as f:
        res = json.load(f)
    runs = [{k: v for k, v in r.items() if k not in TIMING} for r in res["runs"]]
    return runs, res["fits"], res["theory"], res["config"]


def _arrays_equal(a: str, b: str) -> bool:
    import numpy as np

    with (
        np.load(os.path.join(a, "trajectories.npz")) as x,
        np.load(os.path.join(b, "trajectories.npz")) as y,
    ):
        return x.files == y.files and all(np.array_equal(x[k], y[k]) for k in x.files)


def _lpt(walls: list[float], k: int) -> float:
    """Makespan of the longest-first list schedule of `walls` on k workers."""
    loads = [0.0] * k
    for w in sorted(walls, reverse=True):
        loads[loads.index(min(loads))] += w
    return max(loads)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/sweep.py", description=__doc__)
    p.add_argument("--workers", type=int, default=2, help="local workers to compare (2)")
    p.add_argument("extra", nargs="*", help="more `gradflows run lazy` options, after --")
    args = p.parse_args(argv)
    gradflows = [sys.executable, "-m", "experiments", "run", "lazy", "--no-progress", *args.extra]
    out = {"date": datetime.datetime.now().isoformat(timespec="seconds")}
    out["machine"] = {"cores": os.cpu_count(), "platform": platform.platform()}
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for workers in (0, args.workers):
            folder = os.path.join(tmp, f"workers-{workers}")
            cmd = [*gradflows, "--workers", str(workers), "--out", folder]
            print(f"running: {' '.join(cmd[1:])}", flush=True)
            runs[workers] = _measure(cmd)
            runs[workers]["folder"] = folder
        a, b = runs[0]["folder"], runs[args.workers]["folder"]
        same = _numbers(a) == _numbers(b) and _arrays_equal(a, b)
        with open(os.path.join(b, "results.json")) as f:
            res = json.load(f)
        with open(os.path.join(a, "results.json")) as f:
            res0 = json.load(f)
    from experiments._files import versions

    tasks = [(r["alpha"], r["wall_s"], r["task"]["worker"]) for r in res["runs"]]
    walls = [w for _, w, _ in tasks]
    critical, total = max(walls), sum(walls)
    out.update(
        workers=args.workers,
        in_process=runs[0],
        local_cluster=runs[args.workers],
        speedup_wall=runs[0]["wall_s"] / runs[args.workers]["wall_s"],
        cpu_ratio=runs[args.workers]["cpu_s"] / runs[0]["cpu_s"],
        same_bits=same,
        tasks=[{"alpha": a, "wall_s": w, "worker": k} for a, w, k in tasks],
        tasks_in_process=[{"alpha": r["alpha"], "wall_s": r["wall_s"]} for r in res0["runs"]],
        task_wall_s_total=total,
        critical_path_s=critical,
        cluster_makespan_s={k: _lpt(walls, k) for k in (1, 2, 4, 8, len(walls))},
        versions=versions(),
    )
    for r in (runs[0], runs[args.workers]):
        r.pop("folder")
    with open(os.path.join(HERE, "sweep_results.json"), "w") as f:
        json.dump(out, f, indent=2)

    print(f"\n{'':22s} {'wall s':>8s} {'CPU s':>8s} {'cores':>6s} {'others':>7s} {'load':>5s}")
    for name, r in (("--workers 0", runs[0]), (f"--workers {args.workers}", runs[args.workers])):
        print(
            f"{name:22s} {r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['cores_used']:6.2f} "
            f"{r['others_cores']:7.2f} {r['load_1min_mean']:5.1f}"
        )
    print(f"speed-up (wall) {out['speedup_wall']:.2f}x, CPU ratio {out['cpu_ratio']:.2f}")
    print(f"same bits in results.json and trajectories.npz: {same}")
    print(f"tasks' wall times (--workers {args.workers}), longest first:")
    for a, w, k in sorted(tasks, key=lambda t: -t[1]):
        print(f"  alpha {a:9.3g}  {w:7.1f} s  worker {k}")
    longest = tasks[walls.index(critical)][0]
    print(f"sum {total:.1f} s, critical path {critical:.1f} s (alpha {longest:g})")
    print("wall time on k single-thread workers (longest first), tasks as measured here:")
    for k, v in out["cluster_makespan_s"].items():
        print(f"  k = {k:2d}: {v:7.1f} s")
    print(f"wrote {os.path.join(HERE, 'sweep_results.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
