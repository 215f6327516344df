"""Ctrl-C on a real `gradflows run` subprocess: exit 130, one honest line, a resumable folder.

SIGINT used to raise KeyboardInterrupt inside JAX/XLA work (exit 139, or an interrupt
swallowed by a garbage-collection callback). Each experiment is interrupted at several points:
before its folder exists, after its first finished unit (and resumed to the end:
tests/experiments/test_interrupt_resume.py, in the test's own process, a file of its own so
that pytest-xdist's `--dist loadfile` can run the halves on two workers), and twice in a row
(stop at once).
"""

import json
import os
import signal
import time

import pytest

from tests.experiments.interrupt_runs import (
    RUNS,
    assert_says_what_it_keeps,
    interrupt,
    no_temporaries,
    start_run,
    wait_for,
)
from tests.helpers import wait_for_sigint_handler

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", list(RUNS))
def test_interrupt_before_the_folder_exists_keeps_nothing_and_says_so(name, tmp_path):
    _, folder, proc = start_run(name, tmp_path)
    wait_for_sigint_handler(proc)  # the run is then usually still importing JAX
    code, err = interrupt(proc)
    assert code == 130, err
    last = err.strip().splitlines()[-1]
    if folder.exists():
        # A quick start (the portrait run on a quiet machine) made its folder within the
        # 1.5 s: then the line must say what the folder keeps and how to resume.
        assert_says_what_it_keeps(last, folder, name)
        no_temporaries(folder)
    else:
        assert last == "interrupted before the run folder was made: nothing to keep"


@pytest.mark.parametrize("name", list(RUNS))
def test_a_second_interrupt_stops_at_once_without_half_written_files(name, tmp_path):
    _, folder, proc = start_run(name, tmp_path)
    wait_for(folder / "config.json", proc)
    start = time.monotonic()
    code, err = interrupt(proc, times=2)
    assert code == 130, err
    assert time.monotonic() - start < 30  # at once, not after the current unit of work
    assert f"--resume {folder}" in err.strip().splitlines()[-1]
    no_temporaries(folder)
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


def test_sigterm_stops_at_once_keeping_finished_parts(tmp_path):
    # SIGTERM (kill, a batch scheduler) used to end the run at Python's default: no line, and
    # a folder the user could not tell from a fresh one (eos: config.json alone). The folder
    # it leaves is the one a second Ctrl-C leaves, whose --resume test_interrupt_resume.py runs
    first, folder, proc = start_run("eos", tmp_path)
    wait_for(folder / first, proc)
    time.sleep(0.5)  # the run notes what it keeps just after writing the file
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=240)
    last = err.strip().splitlines()[-1]
    assert proc.returncode == 143, err
    assert last.startswith("SIGTERM: ") and "Traceback" not in err, err
    assert_says_what_it_keeps(last.removeprefix("SIGTERM: "), folder, "eos")
    assert "finished" in last
    no_temporaries(folder)
    assert os.path.exists(folder / first)


TERMINATED = """
import os, signal, time
from experiments import _interrupt
with _interrupt.handling():
    print("ready", flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)  # SIGTERM ends the process before this
"""


def test_sigterm_before_the_folder_exists_exits_143_with_one_line():
    import subprocess
    import sys

    from tests.helpers import ROOT

    proc = subprocess.run(
        [sys.executable, "-c", TERMINATED], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 143 and proc.stdout == "ready\n", proc.stderr
    assert (
        proc.stderr.strip()
        == "SIGTERM: interrupted before the run folder was made: nothing to keep"
    )
