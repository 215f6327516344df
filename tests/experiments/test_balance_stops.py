"""`gradflows run balance`, part homogeneous: a flow that stops before its horizon is reported
with its true status and counts, never "None", and drawn where it stopped (issue 37, item 6)."""

import os

import numpy as np
from matplotlib.lines import Line2D

from experiments import _plotting as P
from experiments.balance._conservation_plots import homogeneous_figure
from experiments.balance._report import _homogeneous_lines, _summary


def _finished(folder, name, rtol=1e-8):
    ts = np.geomspace(1e-3, 1e4, 9)
    np.savez(
        os.path.join(folder, f"{name}.npz"), ts=ts, loss=np.geomspace(1.0, 1e-12, 9),
        drift_relative=np.geomspace(1e-12, 4e-9, 9),
    )  # fmt: skip
    return {
        "status": "finished", "t1": 1e4, "t_reached": 1e4, "file": f"{name}.npz", "rtol": rtol,
        "num_steps": 12461, "events": 35, "neuron_drift_relative_max_over_rtol": 0.44,
    }  # fmt: skip


def _stopped(t, status, **counts):
    return {"status": status, "t1": 1e4, "t_reached": t, "message": "…", **counts}


def _homogeneous(folder):
    return {
        "width": 8,
        "runs": {
            "relu": {
                "filippov": _finished(folder, "relu"),
                "tsit5": _stopped(21.2, "max_steps reached", num_steps=20541),
            },
            "leaky_relu": {
                "filippov": _finished(folder, "leaky"),
                "tsit5": _stopped(20.9, "max_steps reached", num_steps=20545),
            },
            # as the abs run stopped before: no steps recorded by the caller
            "abs": {
                "filippov": _stopped(1475.3, "events accumulate"),
                "tsit5": _stopped(0.75, "max_steps reached", num_steps=20000),
            },
        },
    }


def _vertical(fig):
    """{label or None: (x, (ymin, ymax))} of the vertical lines of the first panel."""
    out = []
    for line in fig.axes[0].get_lines():
        x = np.asarray(line.get_xdata(), float)
        if isinstance(line, Line2D) and len(x) == 2 and x[0] == x[1]:
            out.append((float(x[0]), tuple(np.asarray(line.get_ydata(), float))))
    return out


def test_a_stopped_exact_flow_is_drawn_where_it_stopped_with_its_status(tmp_path):
    fig = homogeneous_figure(str(tmp_path), _homogeneous(str(tmp_path)))
    labels = fig.legends[0].get_texts()
    texts = [t.get_text() for t in labels]
    assert "abs, Filippov stopped at t=1475: events accumulate" in texts
    assert not any("None" in t for t in texts)
    assert "2 of 3 to their horizon (stops marked)" in fig._suptitle.get_text()
    assert P.figure_problems(fig) == []


def test_stop_lines_at_nearly_the_same_time_do_not_cover_each_other(tmp_path):
    # ReLU's and leaky ReLU's Tsit5 baselines stop at t = 21.2 and 20.9: 0.6 % apart on a
    # log axis, one line on top of the other when both span the panel's height
    lines = _vertical(homogeneous_figure(str(tmp_path), _homogeneous(str(tmp_path))))
    near = sorted(span for x, span in lines if 20 < x < 22)
    assert len(near) == 2
    assert near[0][1] <= near[1][0]  # disjoint bands of the height


def test_the_summary_of_a_stopped_run_names_its_status_and_no_missing_count(tmp_path):
    lines = _homogeneous_lines({"homogeneous": _homogeneous(str(tmp_path))})
    assert "abs filippov to t=10000: stopped at t=1475: events accumulate" in lines
    assert "abs tsit5 to t=10000: stopped at t=0.75 after 20000 steps: max_steps reached" in lines
    assert not any("None" in line for line in lines)


def test_the_summary_names_the_squared_runs_solvers_as_plain_text(capsys):
    squared = {"num_steps": 120, "switched_to_stiff_at": None, "solvers": ["tsit5"]}
    _summary({"squared": squared}, [])
    assert "squared: 120 steps, solvers tsit5 (no switch)" in capsys.readouterr().out
    squared.update(switched_to_stiff_at=3.5, solvers=["tsit5", "kvaerno5"])
    _summary({"squared": squared}, [])
    out = capsys.readouterr().out
    assert "solvers tsit5 → kvaerno5 (switched to kvaerno5 at t=3.5)" in out
    assert "[" not in out
