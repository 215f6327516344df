"""One task of a sweep, as a worker runs it: its log, wall time, CPU time and peak memory.

This module holds what runs on the worker side (in a Dask worker process, or in the client
with `workers=0`); `experiments._sweep` schedules tasks and writes their parts.
"""

import contextlib
import dataclasses
import logging
import os
import resource
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable

from distributed.diagnostics.plugin import WorkerPlugin
from tqdm import tqdm

from ._sweep_parts import type_name
from ._sweep_progress import worker_report

LOG_FORMAT = "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"


@dataclasses.dataclass(frozen=True)
class TaskContext:
    """What a task function gets besides its settings.

    - `key`: the task's hash key (`experiments._sweep.task_key`).
    - `checkpoint`: a path in the run folder the task may use for a mid-task checkpoint, or
      None when the run folder cannot be seen from the worker. The sweep removes it once the
      part is written, and before a retry after a worker died (a retry starts from scratch).
    - `progress`: whether the task should draw its own progress bars. In a worker they go to
      the task's log file, `logs/<key>.log`, in the client (workers=0) to the terminal.
    - `report(t, t1, what=None)`: tell the client the flow time t of t1 reached (its bar and
      heartbeat, `experiments._sweep_progress`), in the part `what` of the task when it has
      several ("central flow"); cheap, call it every few seconds.
    """

    key: str
    checkpoint: str | None
    progress: bool
    report: Callable[..., None] = lambda t, t1, what=None: None


def _reset_peak_rss() -> str:
    """Reset the kernel's peak-RSS mark of this process (Linux ≥ 4.0); say how peaks are read."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return "VmHWM, reset when the task started"
    except OSError:
        return "ru_maxrss: peak of the whole worker process so far"


def _peak_rss_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except (ImportError, ValueError):
        return "client"


def _worker_address() -> str | None:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return None


def execute(
    fn, task: dict, shared, key: str, folder: str, in_worker: bool, progress: bool, report=None
):
    """Run `fn(task, shared, ctx)` and measure it; never raises an ordinary exception.

    `report(t, t1)`: the task's flow-time reports (in a worker: events to the client).

    Returns a dict: `record` and `arrays` (fn's results) or `error` ("ExceptionName:
    message"), `error_type` (`type_name` of its class) and `traceback`, and `stats` (wall_s,
    cpu_s, peak_rss_bytes, peak_rss_method, worker, host, pid) and `address`, the worker's
    address (None in-process).
    """
    visible = os.path.isdir(folder)
    checkpoint = os.path.join(folder, f"part-{key}.checkpoint.npz") if visible else None
    logs = os.path.join(folder, "logs")
    log_path = os.path.join(logs, f"{key}.log") if in_worker and os.path.isdir(logs) else None
    if in_worker:
        report = worker_report(key)
    ctx = TaskContext(key, checkpoint, progress, report or (lambda t, t1, what=None: None))
    method = _reset_peak_rss()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    out = {}
    with contextlib.ExitStack() as stack:
        if log_path is not None:  # the task's own output (solver progress, warnings)
            log = stack.enter_context(open(log_path, "a", buffering=1))
            log.write(f"task {key} on worker {_worker_name()} (pid {os.getpid()}): {task}\n")
            stack.enter_context(contextlib.redirect_stdout(log))
            stack.enter_context(contextlib.redirect_stderr(log))
        try:
            record, arrays = fn(task, shared, ctx)
            out.update(record=record, arrays=dict(arrays or {}))
        except Exception as e:  # a bug or bad settings in this task: reported, never fatal
            out.update(
                error=" ".join(f"{type(e).__name__}: {e}".split()),
                error_type=type_name(type(e)),
                traceback=traceback.format_exc(),
            )
    out["stats"] = {
        "wall_s": time.perf_counter() - wall0,
        "cpu_s": time.process_time() - cpu0,
        "peak_rss_bytes": _peak_rss_bytes(),
        "peak_rss_method": method,
        "worker": _worker_name(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }
    out["address"] = _worker_address()
    return out


class WorkerSetup(WorkerPlugin):
    """Dask worker plugin: the worker's log goes to `logs/worker-<name>.log` of the run folder
    (if the worker can see it), and a local cluster's workers ignore SIGINT.

    Ctrl-C in a terminal signals the whole process group: the client alone handles it and
    shuts its workers down, which would otherwise each print a KeyboardInterrupt. Workers of
    a cluster started by the user (`--scheduler`) keep their signals.
    """

    def __init__(self, folder: str, local: bool):
        self.folder, self.local = folder, local
        self.name = f"gradflows-setup:{folder}"

    def setup(self, worker):
        if self.local:
            with contextlib.suppress(ValueError):  # only possible in the main thread
                signal.signal(signal.SIGINT, signal.SIG_IGN)
        # tqdm's default lock is a multiprocessing semaphore, registered with the resource
        # tracker; a worker killed at shutdown would leave it to be reported as leaked.
        tqdm.set_lock(threading.RLock())
        logs = os.path.join(self.folder, "logs")
        if not os.path.isdir(logs):
            return
        handler = logging.FileHandler(os.path.join(logs, f"worker-{worker.name}.log"))
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        handler.setLevel(logging.INFO)
        logger = logging.getLogger("distributed")
        logger.addHandler(handler)
        logger.setLevel(min(logger.level or logging.INFO, logging.INFO))
