"""Ctrl-C on a real `gradflows run` subprocess: exit 130, one honest line, a resumable folder.

SIGINT used to raise KeyboardInterrupt inside JAX/XLA work (exit 139, or an interrupt
swallowed by a garbage-collection callback). Each experiment is interrupted at several points:
before its folder exists, after its first finished unit, and twice in a row (stop at once).
"""

import json
import os
import signal
import time

import pytest

from experiments._sweep import task_key
from tests.helpers import gradflows, wait_for_sigint_handler

pytestmark = pytest.mark.slow

NTK_FIRST = {"measure": "errors", "data": "digits", "activation": "relu", "scheme": "quadratic",
             "width": 8}  # fmt: skip
RUNS = {  # small, but several units of work each, so that an interrupt lands mid-run
    # lazy: six α below flows.lazy.LAZY_REMAINDER_ALPHA = 30, so one form of the flows compiles
    "lazy": (["--width", "8", "--n-train", "12", "--n-test", "0", "--t1", "0.5", "--n-times",
              "10", "--alphas", "1,2,3,5,10,20", "--no-progress", "--workers", "0", "--solver",
              "tsit5"],
             f"part-{task_key({'alpha': 1.0})}.json"),  # Dask: tests/experiments/test_lazy_sweep.py
    # gd only: the largest step finishes in a second, the two smaller ones take ~2 s more
    # (100,000 and 200,000 steps; 1,200,000 took ~8 s), so the interrupt, 0.5 s after the
    # first part, lands in the middle of the run
    "balance": (["--parts", "gd", "--n-train", "40", "--hidden", "4,3", "--etas",
                 "0.2,0.02,0.01", "--gd-t1", "2000", "--n-save", "10", "--workers", "0"],
                f"part-{task_key({'part': 'gd', 'eta': 0.2})}.json"),
    "portrait": (["--grid", "9", "--field-grid", "7", "--alphas", "1,10", "--gd-steps", "4",
                  "--workers", "0"], f"part-{task_key({'figure': 'seed'})}.json"),
    "ntk": (["--widths", "4,8", "--seeds", "2", "--depth", "2", "--n", "6", "--cond-depth", "4",
             "--no-progress", "--workers", "0"],
            f"part-{task_key(NTK_FIRST)}.json"),  # the largest network starts first
    "eos": (["--n-train", "20", "--width", "4", "--etas", "0.8,0.4,0.2", "--t1", "8",
             "--flows", "gradient", "--uv-points", "4", "--uv-steps", "10", "--no-progress",
             "--workers", "0"], f"part-{task_key({'part': 'eta', 'eta': 0.8})}.json"),
}  # fmt: skip


def _wait_for(path, proc, timeout=240):
    start = time.monotonic()
    while not os.path.exists(path):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - start < timeout, f"{path} never appeared"
        time.sleep(0.05)


def _interrupt(proc, times=1):
    for _ in range(times):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
    out, err = proc.communicate(timeout=240)
    return proc.returncode, err


def _no_temporaries(folder):
    names = os.listdir(folder)
    assert not [n for n in names if n.startswith((".tmp-", "tmp"))], names


@pytest.mark.parametrize("name", list(RUNS))
def test_interrupt_before_the_folder_exists_keeps_nothing_and_says_so(name, tmp_path):
    argv, _ = RUNS[name]
    folder = tmp_path / "run"
    proc = gradflows("run", name, *argv, "--out", folder)
    wait_for_sigint_handler(proc)  # the run is then usually still importing JAX
    code, err = _interrupt(proc)
    assert code == 130, err
    last = err.strip().splitlines()[-1]
    if folder.exists():
        # A quick start (the portrait run on a quiet machine) made its folder within the
        # 1.5 s: then the line must say what the folder keeps and how to resume.
        assert last.startswith(f"interrupted: {folder} keeps "), last
        assert last.endswith(f"resume with: gradflows run {name} --resume {folder}")
        _no_temporaries(folder)
    else:
        assert last == "interrupted before the run folder was made: nothing to keep"


@pytest.mark.parametrize("name", list(RUNS))
def test_interrupt_after_finished_work_keeps_it_and_resume_completes(name, tmp_path):
    argv, first = RUNS[name]
    folder = tmp_path / "run"
    proc = gradflows("run", name, *argv, "--out", folder)
    _wait_for(folder / first, proc)
    time.sleep(0.5)  # the run notes what it keeps just after writing the file
    code, err = _interrupt(proc)
    last = err.strip().splitlines()[-1]
    assert code == 130, err
    assert last.startswith(f"interrupted: {folder} keeps ") and "finished" in last
    assert last.endswith(f"resume with: gradflows run {name} --resume {folder}")
    _no_temporaries(folder)
    assert os.path.exists(folder / first)
    resumed = gradflows("run", name, "--resume", folder)
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    if name != "lazy":
        assert json.load(open(folder / "results.json"))["complete"] is True
    else:
        assert len(json.load(open(folder / "results.json"))["runs"]) == 6


@pytest.mark.parametrize("name", list(RUNS))
def test_a_second_interrupt_stops_at_once_without_half_written_files(name, tmp_path):
    argv, first = RUNS[name]
    folder = tmp_path / "run"
    proc = gradflows("run", name, *argv, "--out", folder)
    _wait_for(folder / "config.json", proc)
    start = time.monotonic()
    code, err = _interrupt(proc, times=2)
    assert code == 130, err
    assert time.monotonic() - start < 30  # at once, not after the current unit of work
    assert f"--resume {folder}" in err.strip().splitlines()[-1]
    _no_temporaries(folder)
    json.load(open(folder / "config.json"))  # whole


# A process that holds multiprocessing semaphores, as a run with a local Dask cluster does
# (its nannies' queues: 12 for 2 workers), registered with the resource tracker that spawning
# starts; then two Ctrl-C. `os._exit` used to skip the finalizers that unlink them, and the
# tracker printed "There appear to be 6 leaked semaphore objects to clean up at shutdown".
HOLDS_SEMAPHORES = """
import os, signal, sys, time
import multiprocessing
from experiments import _interrupt
with _interrupt.handling():
    queues = [multiprocessing.get_context("spawn").Queue() for _ in range(2)]  # 3 each
    print("ready", flush=True)
    for _ in range(2):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)
    time.sleep(30)  # the second Ctrl-C ends the process before this
"""


def test_a_second_interrupt_leaves_no_leaked_semaphores_for_the_resource_tracker():
    import subprocess
    import sys

    from tests.helpers import ROOT

    proc = subprocess.run(
        [sys.executable, "-c", HOLDS_SEMAPHORES], cwd=ROOT, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == 130 and proc.stdout == "ready\n", proc.stderr
    time.sleep(1)  # the tracker (still running) warns when it sees the pipe close
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == "interrupted before the run folder was made: nothing to keep", lines
    assert not [line for line in lines if "leaked" in line or "Traceback" in line], lines
