"""Progress of a running sweep: the flow time each task reports reaches the client, and
without a bar (`--no-progress`) a heartbeat line goes to stderr."""

from experiments import _sweep_progress
from experiments._sweep import Sweep


def _task(task, shared, ctx):
    for t in (0.25, 0.5, 1.0):
        ctx.report(t, 1.0)
    return {"alpha": task["alpha"]}, None


def test_heartbeat_lines_name_the_tasks_done_and_the_flow_time_of_the_running_one(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(_sweep_progress, "HEARTBEAT_S", 0.0)  # every report is due
    with Sweep(workers=0, progress=False) as sweep:
        results = sweep.run(_task, [{"alpha": 1.0}, {"alpha": 10.0}], str(tmp_path), desc="sweep")
    assert [r.record["alpha"] for r in results] == [1.0, 10.0]
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("sweep: ")]
    assert "sweep: 0/2 done; running: alpha=1 t=0.25 of 1" in lines
    assert "sweep: 0/2 done; running: alpha=1 t=1 of 1" in lines
    assert "sweep: 1/2 done; running: alpha=10 t=0.5 of 1" in lines
    assert lines[-1] == "sweep: 2/2 done; running: none"


def test_no_heartbeat_before_it_is_due(tmp_path, capsys):
    with Sweep(workers=0, progress=False) as sweep:  # HEARTBEAT_S = 10 s: the run takes less
        sweep.run(_task, [{"alpha": 1.0}], str(tmp_path), desc="sweep")
    assert "sweep: " not in capsys.readouterr().err
