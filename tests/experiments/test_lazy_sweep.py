"""`gradflows run lazy` on real Dask workers: the same bits as in-process and a worker killed
mid-sweep (on the session's LocalCluster, `--scheduler`), Ctrl-C of a client with its own
cluster (`--workers 2`), and bad `--workers`/`--scheduler` values."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from experiments import _sweep
from experiments._cli import main
from experiments._sweep import task_key

TINY = ["--width", "8", "--n-train", "12", "--n-test", "6", "--n-times", "15", "--no-progress"]
TINY += ["--solver", "tsit5"]  # the default exprk4 is run in tests/experiments/test_lazy_cli.py
ALPHAS = [10.0, 100.0, 1000.0]  # both forms of lazy_comparison (α < 30 direct, α ≥ 30 remainder)
TIMING = ("wall_s", "task")  # where and how fast a task ran: the only fields allowed to differ


def _results(folder):
    with open(os.path.join(folder, "results.json")) as f:
        return json.load(f)


def _numbers(folder):
    res = _results(folder)
    runs = [{k: v for k, v in r.items() if k not in TIMING} for r in res["runs"]]
    with np.load(os.path.join(folder, "trajectories.npz")) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return runs, res["fits"], res["theory"], res["config"], arrays


def _assert_same_bits(folder, reference):
    runs, fits, theory, config, arrays = _numbers(folder)
    ref_runs, ref_fits, ref_theory, ref_config, ref_arrays = reference
    assert runs == ref_runs and fits == ref_fits and theory == ref_theory
    assert config == ref_config
    assert arrays.keys() == ref_arrays.keys()
    for key in arrays:
        assert np.array_equal(arrays[key], ref_arrays[key]), key


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("lazy") / "in-process")
    alphas = ",".join(f"{a:g}" for a in ALPHAS)
    argv = ["run", "lazy", *TINY, "--t1", "0.5", "--alphas", alphas, "--workers", "0"]
    assert main([*argv, "--out", folder]) == 0
    assert _results(folder)["sweep"]["backend"] == "in-process (--workers 0)"
    return _numbers(folder)


def _argv(folder, alphas=ALPHAS, t1=0.5, backend=("--workers", "2")):
    alphas = ",".join(f"{a:g}" for a in alphas)
    return ["run", "lazy", *TINY, "--t1", str(t1), "--alphas", alphas, *backend, "--out", folder]


@pytest.mark.slow
def test_two_workers_give_the_same_bits_as_in_process(reference, scheduler, tmp_path):
    folder = str(tmp_path / "two")
    assert main(_argv(folder, backend=("--scheduler", scheduler))) == 0
    _assert_same_bits(folder, reference)
    res = _results(folder)
    assert res["sweep"]["backend"] == f"Dask scheduler {scheduler}"
    assert {r["task"]["worker"] for r in res["runs"]} == {"0", "1"}
    assert all(r["task"]["peak_rss_bytes"] > 50 * 2**20 for r in res["runs"])  # JAX + XLA
    assert res["sweep"]["critical_path_s"] == max(r["wall_s"] for r in res["runs"])
    logs = os.listdir(os.path.join(folder, "logs"))
    assert {"worker-0.log", "worker-1.log"} <= set(logs)
    assert {f"{task_key({'alpha': a})}.log" for a in ALPHAS} <= set(logs)


def _task_pid(folder, key):
    """The pid of the worker running task `key` (from its log's first line), or None."""
    try:
        with open(os.path.join(folder, "logs", f"{key}.log")) as f:
            first = f.readline()
    except OSError:
        return None
    return int(first.split("(pid ")[1].split(")")[0]) if "(pid " in first else None


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_costs_only_its_task(reference, scheduler, tmp_path):
    folder = str(tmp_path / "killed")
    victim = task_key({"alpha": 1000.0})  # the last task: others have finished or are running
    killed = []

    def kill_the_victims_worker():
        deadline = time.monotonic() + 600
        while not killed and time.monotonic() < deadline:
            pid = _task_pid(folder, victim)
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.05)

    thread = threading.Thread(target=kill_the_victims_worker, daemon=True)
    thread.start()
    assert main(_argv(folder, backend=("--scheduler", scheduler))) == 0
    thread.join()
    assert len(killed) == 1
    _assert_same_bits(folder, reference)  # the retry started from scratch
    attempts = {r["alpha"]: r["task"]["attempts"] for r in _results(folder)["runs"]}
    assert attempts == {10.0: 1, 100.0: 1, 1000.0: 2}
    with open(os.path.join(folder, "logs", f"{victim}.log")) as f:
        assert f.read().count(f"task {victim} on worker") == 2


def _session(sid):
    """Processes whose session id is `sid` (a child started with start_new_session=True and
    everything it spawned, even orphaned)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[3]) == sid:
                found.append(int(name))
    return found


def _parts(folder):
    if not os.path.isdir(folder):
        return []
    return [n for n in os.listdir(folder) if n.startswith("part-") and n.endswith(".json")]


ALPHAS_CTRL_C = [1.0, 2.0, 3.0, 5.0, 10.0, 20.0]


@pytest.mark.slow
def test_ctrl_c_exits_130_keeps_parts_leaves_no_process_and_resume_finishes(scheduler, tmp_path):
    folder = str(tmp_path / "interrupted")
    # Ctrl-C as soon as the first part is written (within 50 ms): four of the six α at least
    # are still to do, each about a second of solving at t1 = 3 (t1 = 30 cost 42 s more CPU
    # in all). All six α lie below flows.lazy.LAZY_REMAINDER_ALPHA = 30: one form of the
    # flows, one compilation per worker (the α from 10 to 200 compiled both forms).
    argv = _argv(folder, alphas=ALPHAS_CTRL_C, t1=3)
    proc = subprocess.Popen(
        [sys.executable, "-m", "experiments", *argv],
        start_new_session=True,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600
    while not _parts(folder) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: the whole process group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"interrupted: {folder} keeps ") and "of 6 α finished" in last
    assert last.endswith(f"--resume {folder}") and "Traceback" not in err
    deadline = time.monotonic() + 5  # multiprocessing's resource tracker takes a moment
    while _session(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _session(proc.pid) == []  # no worker, nanny or tracker process left
    kept = {}
    for name in _parts(folder):
        with open(os.path.join(folder, name)) as f:
            kept[name] = f.read()
    assert 1 <= len(kept) < 6
    # resumed on the session's cluster, whose workers have JAX imported: on a LocalCluster of
    # its own (`--workers 2`, tested in tests/experiments/test_ntk_cli.py) the test took 43.6 s
    # against 22.6 s, the file 103 s of CPU against 68 s (measured at load 4-6)
    resume = ["run", "lazy", "--resume", folder, "--no-progress", "--scheduler", scheduler]
    assert main(resume) == 0
    res = _results(folder)
    assert res["sweep"]["backend"] == f"Dask scheduler {scheduler}"
    assert {"worker-0.log", "worker-1.log"} <= set(os.listdir(f"{folder}/logs"))
    runs = res["runs"]
    assert [r["alpha"] for r in runs] == ALPHAS_CTRL_C
    assert sum(r["task"]["resumed"] for r in runs) == len(kept)
    for name, text in kept.items():  # kept parts were not computed again
        with open(os.path.join(folder, name)) as f:
            assert f.read() == text


@pytest.mark.parametrize("value", ["-1", "1.5", "two"])
def test_bad_worker_counts_exit_2_with_one_line(value, tmp_path, capsys):
    folder = str(tmp_path / "never")
    with pytest.raises(SystemExit) as e:
        main(["run", "lazy", "--workers", value, "--out", folder])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and "--workers" in err[0]
    assert not os.path.exists(folder)


def test_an_unreachable_scheduler_fails_in_one_line_naming_it(tmp_path, capsys, monkeypatch):
    # the CLI's one line; the library's timeout (8 s, waited in full here before) is pinned in
    # tests/experiments/test_sweep.py
    monkeypatch.setattr(_sweep, "CONNECT_TIMEOUT_S", 1)
    folder = str(tmp_path / "never")
    code = main(["run", "lazy", "--scheduler", "tcp://127.0.0.1:1", "--out", folder])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "tcp://127.0.0.1:1" in err[0]
    assert "no Dask scheduler answered within 1 s" in err[0]
    assert not os.path.exists(folder)  # nothing computed, no folder made
