"""Checkpoints by wall time (`flows._checkpoint.Pacer`): the first one right after the first
steps, later ones within a chunk. A diffrax call cut for one carries the solver state to the
same end, so the steps and numbers are those of the uncut solve; a solve resumed from one
within a chunk agrees with the whole solve to the tolerance."""

import numpy as np
import pytest

import flows._checkpoint
from tests.flows.test_lazy_exprk import _relative, _solve

# tests/flows/test_lazy_exprk.py's lazy pair at α = 3, in one chunk of 41 save times (3 blocks
# of `SAVE_BLOCK`): every checkpoint but the last is the pacer's
KW = dict(alpha=3.0, rtol=1e-10, chunks=1)


@pytest.mark.parametrize("solver", ["tsit5", "auto"])
def test_calls_cut_for_checkpoints_take_the_same_steps(solver, monkeypatch):
    whole = _solve(solver=solver, **KW)
    monkeypatch.setattr(flows._checkpoint, "CHECKPOINT_S", 0.0)  # every call cut at 8 steps
    cut = _solve(solver=solver, **KW)
    # measured 236 (tsit5), 237 (auto) steps: cut every 8 steps, more than 20 calls are cut
    assert cut.stats["num_steps"] == whole.stats["num_steps"] > 20 * 8
    assert _relative(cut, whole) == 0.0  # the same bits


class _Stop(Exception):
    pass


def test_the_first_checkpoint_follows_the_first_steps_and_resumes_mid_chunk(tmp_path):
    path = str(tmp_path / "ck.npz")

    def stop(t):
        if t > 0:  # the first report after the start: the first checkpoint is written
            raise _Stop

    with pytest.raises(_Stop):
        _solve(solver="tsit5", checkpoint=path, report=stop, **KW)
    with np.load(path) as ck:
        steps, done, t = int(ck["num_steps"]), int(ck["done"]), float(ck["t"])
        saved, n = len(ck["s0"]), len(ck["ts"])
    assert steps == flows._checkpoint.FIRST_CALL_STEPS and done == 0  # within the one chunk
    assert 0 < saved < n and 0 < t < 4.0  # measured: t = 0.0131, 14 of 41 save times
    reached = []
    resumed = _solve(solver="tsit5", checkpoint=path, report=reached.append, **KW)
    assert reached[0] == t  # it went on from there
    # measured 5.7e-12 relative to each series' maximum (the resumed solve chooses its first
    # step afresh); tolerance 1e-10
    assert _relative(resumed, _solve(solver="tsit5", **KW)) < 1e-10
