"""`gradflows run lazy --no-progress --workers 0` while α run: heartbeat lines with the flow
time reached, and a Ctrl-C in the middle of an α that keeps its checkpoint, from which
`--resume` goes on to the numbers of an uninterrupted run."""

import contextlib
import io
import os
import re
import signal

import numpy as np
import pytest

import flows._checkpoint
from experiments import _cli, _interrupt, _sweep_progress
from experiments._sweep import task_key
from experiments._sweep_parts import checkpoint_path

# tests/experiments/test_lazy_cli.py's tiny run, one α (the direct form)
TINY = ["--width", "8", "--n-train", "12", "--n-test", "6", "--t1", "0.5", "--n-times", "15"]
TINY += ["--alphas", "3", "--no-progress", "--workers", "0", "--solver", "tsit5"]
SERIES = ("loss", "weight_gap", "output_gap", "heldout_output_gap", "distance_from_init")


def _run(argv) -> tuple[int, list[str]]:
    """main(argv) with a heartbeat at every report and tick; (exit code, stderr lines)."""
    err = io.StringIO()
    held = signal.getsignal(signal.SIGINT)  # an interrupted run leaves SIGINT ignored
    with pytest.MonkeyPatch.context() as m, contextlib.redirect_stderr(err):
        m.setattr(_sweep_progress, "HEARTBEAT_S", 0.0)
        code = _cli.main(["run", "lazy", *argv])
    signal.signal(signal.SIGINT, held)
    return code, err.getvalue().splitlines()


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("lazy") / "whole")
    code, err = _run([*TINY, "--out", folder])
    assert code == 0, err
    return folder, err


def _reached(lines) -> list[float]:
    """The flow times of α = 3 in the heartbeat lines."""
    pattern = r"alpha sweep: 0/1 done; running: alpha=3 t=(\S+) of 0\.5 \(\d+ s\)"
    return [float(m.group(1)) for x in lines if (m := re.fullmatch(pattern, x))]


def test_the_heartbeat_says_the_flow_time_of_the_running_alpha(whole):
    _, err = whole
    reached = _reached(err)
    # the start of the solve (t = 0), the first steps, each chunk's end, up to t1
    assert reached[0] == 0.0 and reached[-1] == 0.5, err
    assert len(reached) >= 10 and np.all(np.diff(reached) >= 0), reached
    assert err[-1].startswith("wrote ") or "alpha sweep: 1/1 done; running: none" in err


def test_an_interrupted_alpha_resumes_from_its_checkpoint_to_the_same_numbers(
    whole, tmp_path, monkeypatch
):
    reference, _ = whole
    folder = str(tmp_path / "cut")
    written = []
    write = flows._checkpoint.write

    def write_then_interrupt(path, stamp, ts, done, t, *args):
        """Ctrl-C as the first checkpoint within a chunk (t between save times) is written."""
        write(path, stamp, ts, done, t, *args)
        if t not in ts and not written:
            written.append(t)
            _interrupt._STATE["count"] = 1  # what the first SIGINT sets

    monkeypatch.setattr(flows._checkpoint, "write", write_then_interrupt)
    monkeypatch.setattr(flows._checkpoint, "CHECKPOINT_S", 0.0)  # one after every call
    code, err = _run([*TINY, "--out", folder])
    assert code == 130, err
    path = checkpoint_path(folder, task_key({"alpha": 3.0}))
    with np.load(path) as ck:
        t, ts = float(ck["t"]), ck["ts"]
    assert [t] == written and 0 < t < 0.5 and t not in ts  # within a chunk
    assert err[-1] == (
        f"interrupted: {folder} keeps 0 of 1 α finished, and the checkpoints of α=3 up to "
        f"t={t:.3g} (--resume goes on from them); resume with: gradflows run lazy --resume "
        f"{folder}"
    )
    monkeypatch.undo()
    code, err = _run(["--resume", folder, "--no-progress", "--workers", "0"])
    assert code == 0, err
    assert _reached(err)[0] == float(f"{t:.3g}")  # it went on from the checkpoint
    assert not os.path.exists(path)
    with np.load(f"{folder}/trajectories.npz") as a, np.load(f"{reference}/trajectories.npz") as b:
        for name in SERIES:
            # measured (cut at t = 5.2e-3, one of the 5th chunk's 2 save times done): at most
            # 8.3e-13 (heldout_output_gap; loss 8.6e-15); the resumed solve chooses its first
            # step afresh. Tolerance 1e-10.
            error = np.max(np.abs(a[name] - b[name])) / np.max(np.abs(b[name]))
            assert error < 1e-10, (name, error)
