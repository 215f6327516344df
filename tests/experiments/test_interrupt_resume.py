"""Ctrl-C on a real `gradflows run` subprocess after its first finished unit of work: exit 130,
one honest line, the unit kept, and `--resume` completes the run (the runs and the other
interrupts: tests/experiments/test_interrupt.py)."""

import json
import os
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
from tests.helpers import cli

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", list(RUNS))
def test_interrupt_after_finished_work_keeps_it_and_resume_completes(name, tmp_path):
    first, folder, proc = start_run(name, tmp_path)
    wait_for(folder / first, proc)
    time.sleep(0.5)  # the run notes what it keeps just after writing the file
    code, err = interrupt(proc)
    last = err.strip().splitlines()[-1]
    assert code == 130, err
    assert_says_what_it_keeps(last, folder, name)
    assert "finished" in last
    no_temporaries(folder)
    assert os.path.exists(folder / first)
    # resumed in this test's process (`main`, as the interrupted run: --workers 0), not in a
    # new subprocess that imported JAX again (resuming on Dask: test_lazy_sweep.py)
    assert cli("run", name, "--resume", folder, "--workers", "0") == 0
    if name != "lazy":
        assert json.load(open(folder / "results.json"))["complete"] is True
    else:
        assert len(json.load(open(folder / "results.json"))["runs"]) == 6
