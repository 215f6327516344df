"""Progress of a running sweep: the flow time each task reports reaches the client, and
without a bar (`--no-progress`) a heartbeat line goes to stderr, also while a task reports
nothing (compiling), and Ctrl-C in-process stops a task at its next report."""

import io
import re
import time

import pytest

from experiments import _sweep_progress
from experiments._sweep import Sweep
from flows._progress import PIPED_INTERVAL_S, progress_bar


def _task(task, shared, ctx):
    for t in (0.25, 0.5, 1.0):
        ctx.report(t, 1.0)
    return {"alpha": task["alpha"]}, None


def _heartbeats(err: str) -> list[str]:
    """The heartbeat lines, without each running task's wall seconds "(N s)"."""
    lines = [x for x in err.splitlines() if x.startswith("sweep: ")]
    return [re.sub(r" \(\d+ s\)", "", x) for x in lines]


def test_heartbeat_lines_name_the_tasks_done_and_the_flow_time_of_the_running_one(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(_sweep_progress, "HEARTBEAT_S", 0.0)  # every report is due
    with Sweep(workers=0, progress=False) as sweep:
        results = sweep.run(_task, [{"alpha": 1.0}, {"alpha": 10.0}], str(tmp_path), desc="sweep")
    assert [r.record["alpha"] for r in results] == [1.0, 10.0]
    lines = _heartbeats(capsys.readouterr().err)
    assert "sweep: 0/2 done; running: alpha=1 t=0.25 of 1" in lines
    assert "sweep: 0/2 done; running: alpha=1 t=1 of 1" in lines
    assert "sweep: 1/2 done; running: alpha=10 t=0.5 of 1" in lines
    assert lines[-1] == "sweep: 2/2 done; running: none"


def _parts(task, shared, ctx):  # a task of several solves names the one running
    ctx.report(2.0, 8.0, "gradient descent")
    ctx.report(3.0, 6.0, "central flow")
    ctx.report(0.5, 1.0)
    return {"alpha": task["alpha"]}, None


def test_heartbeat_names_the_part_a_task_reports(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_sweep_progress, "HEARTBEAT_S", 0.0)
    with Sweep(workers=0, progress=False) as sweep:
        sweep.run(_parts, [{"alpha": 1.0}], str(tmp_path), desc="sweep")
    lines = _heartbeats(capsys.readouterr().err)
    assert "sweep: 0/1 done; running: alpha=1 gradient descent t=2 of 8" in lines
    assert "sweep: 0/1 done; running: alpha=1 central flow t=3 of 6" in lines
    assert "sweep: 0/1 done; running: alpha=1 t=0.5 of 1" in lines  # no part named


def _silent(task, shared, ctx):  # compiles, say: no report for 0.6 s
    time.sleep(0.6)
    return {"alpha": task["alpha"]}, None


def test_the_heartbeat_goes_on_while_a_task_reports_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_sweep_progress, "HEARTBEAT_S", 0.2)
    with Sweep(workers=0, progress=False) as sweep:
        sweep.run(_silent, [{"alpha": 1.0}], str(tmp_path), desc="sweep")
    lines = capsys.readouterr().err.splitlines()
    # the watch ticks every 0.5 s on its own thread: 1 line in the 0.6 s (2 on a slow machine)
    assert lines and all(
        re.fullmatch(r"sweep: 0/1 done; running: alpha=1 started \(no flow time yet\) \(\d s\)", x)
        for x in lines
    ), lines


def test_no_heartbeat_before_it_is_due(tmp_path, capsys):
    with Sweep(workers=0, progress=False) as sweep:  # HEARTBEAT_S = 10 s: the run takes less
        sweep.run(_task, [{"alpha": 1.0}], str(tmp_path), desc="sweep")
    assert "sweep: " not in capsys.readouterr().err


class _Stop(Exception):
    pass


def test_in_process_a_check_that_raises_stops_the_task_at_its_report_when_asked(tmp_path):
    reached, calls = [], []

    def check():  # an interrupt, pressed during the first task's second report
        calls.append(1)
        if len(reached) == 2:
            raise _Stop

    def task(task, shared, ctx):
        for t in (0.25, 0.5, 1.0):
            reached.append(t)
            ctx.report(t, 1.0)
        return {"alpha": task["alpha"]}, None

    with Sweep(workers=0, progress=False) as sweep, pytest.raises(_Stop):
        tasks = [{"alpha": 1.0}, {"alpha": 2.0}]
        sweep.run(task, tasks, str(tmp_path), check=check, check_at_reports=True)
    assert reached == [0.25, 0.5]  # neither the rest of the task nor the next one ran
    assert not list(tmp_path.glob("part-*.json"))  # and no part was written for it


def test_bars_off_a_terminal_are_redrawn_rarely():
    # a lazy run's log held 244 KB of redraws: the sweep's bar, redrawn at each tick (0.5 s)
    log = io.StringIO()  # not a terminal, as a log file or a pipe
    bar = progress_bar(total=10, desc="sweep", file=log)
    assert bar.mininterval == PIPED_INTERVAL_S == 10.0
    watch = _sweep_progress.Watch([{"alpha": 1.0}], ["k"], bar, 0, "sweep", False)
    watch.started("k")
    for i in range(200):
        watch.report("k", i / 200, 1.0)
        watch.tick()
        bar.update(0)
    bar.close()
    redraws = log.getvalue().count("\r")
    assert 1 <= redraws <= 4, log.getvalue()  # measured: 3 (start, first tick, close)
    assert progress_bar(total=1, file=log, mininterval=0.5).mininterval == 0.5  # as given
