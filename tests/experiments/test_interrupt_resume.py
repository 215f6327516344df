"""Ctrl-C after a run's first finished unit of work: exit 130, one honest line, the unit kept,
and `--resume` completes the run (the runs and the other interrupts, each on a real
`gradflows run` subprocess: tests/experiments/test_interrupt.py).

The run is interrupted here in this test's process (`main`, `--workers 0`), by a real SIGINT
sent to the process as a terminal's Ctrl-C is, through the same handler (the wakeup pipe and
its watcher thread, `experiments._interrupt`). The resume then reuses the programs that the
interrupted run compiled: a subprocess imported JAX and compiled them once more (measured,
the seven runs at load 4: 38 s to the first part in subprocesses, 39 s to resume)."""

import contextlib
import io
import json
import os
import signal
import threading
import time

import pytest

from tests.experiments.interrupt_runs import RUNS, assert_says_what_it_keeps, no_temporaries
from tests.helpers import cli

pytestmark = pytest.mark.slow


def _run_interrupted(name, folder, first) -> tuple[int, str]:
    """`gradflows run name` (its `RUNS` options) into `folder` in this process, sent SIGINT
    0.5 s after `folder/first` appears (the run notes what it keeps just after writing it):
    (exit code, stderr)."""
    assert threading.current_thread() is threading.main_thread()  # where signals are handled
    done, sent = threading.Event(), []

    def ctrl_c():
        deadline = time.monotonic() + 240
        while not os.path.exists(folder / first) and not done.is_set():
            assert time.monotonic() < deadline, f"{folder / first} never appeared"
            time.sleep(0.05)
        time.sleep(0.5)
        if not done.is_set():
            os.kill(os.getpid(), signal.SIGINT)
            sent.append(True)

    held = signal.getsignal(signal.SIGINT)
    # a SIGINT that lands after `main` returned must not end this test process
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    err = io.StringIO()
    thread = threading.Thread(target=ctrl_c, daemon=True)
    try:
        with contextlib.redirect_stderr(err):
            thread.start()
            code = cli("run", name, *RUNS[name][0], "--out", folder)
            done.set()
            thread.join()
            time.sleep(0.05)  # a signal sent as `main` returned is handled here, by the no-op
    finally:
        done.set()
        signal.signal(signal.SIGINT, held)  # an interrupted run leaves SIGINT ignored
    assert sent, f"the run ended (exit {code}) before its interrupt: {err.getvalue()}"
    return code, err.getvalue()


@pytest.mark.parametrize("name", list(RUNS))
def test_interrupt_after_finished_work_keeps_it_and_resume_completes(name, tmp_path):
    folder = tmp_path / "run"
    first = RUNS[name][1]
    code, err = _run_interrupted(name, folder, first)
    last = err.strip().splitlines()[-1]
    assert code == 130, err
    assert_says_what_it_keeps(last, folder, name)
    assert "finished" in last
    no_temporaries(folder)
    assert os.path.exists(folder / first)
    # resumed in this process (`main`, as the interrupted run: --workers 0; resuming on Dask:
    # test_lazy_sweep.py)
    assert cli("run", name, "--resume", folder, "--workers", "0") == 0
    if name != "lazy":
        assert json.load(open(folder / "results.json"))["complete"] is True
    else:
        assert len(json.load(open(folder / "results.json"))["runs"]) == 6
