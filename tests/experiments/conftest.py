"""Fixtures shared by the experiments' tests: one Dask LocalCluster per test process."""

import os

import pytest

from experiments._sweep import Sweep


@pytest.fixture(scope="session")
def _session_sweep(tmp_path_factory):
    folder = tmp_path_factory.mktemp("session-cluster")
    os.mkdir(folder / "logs")
    with Sweep(workers=2, progress=False) as sweep:
        sweep._client_for(2, str(folder))  # started as every `--workers 2` run starts its own
        yield sweep


@pytest.fixture
def cluster(_session_sweep):
    """The session's `Sweep(workers=2)`: a Dask LocalCluster of 2 worker processes (one thread
    each, the library's settings), started once and shared by the tests that sweep on Dask
    (in-process through `Sweep.run`, or from the CLI with `--scheduler`, the `scheduler` fixture).
    Both workers are up when a test starts (a test may kill one; its nanny restarts it)."""
    # 600 s: at high load a worker (restarted by its nanny after a test killed it, or the
    # cluster's first two, spawned and importing JAX) took over 120 s ("Only 1/2 workers
    # arrived" in tests/experiments/test_portrait_cli.py); a quiet machine takes seconds
    _session_sweep._client.wait_for_workers(2, timeout=600)
    return _session_sweep


@pytest.fixture
def scheduler(cluster) -> str:
    """The address of the session's LocalCluster, for `--scheduler`."""
    return cluster._cluster.scheduler_address
