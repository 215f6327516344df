"""The sweep layer: a grid of independent tasks, run in-process or on a Dask cluster.

A task is a JSON-able dict of settings (`{"alpha": 10.0}`, `{"width": 64, "seed": 3}`); its key
is a hash of those settings (`task_key`). `Sweep.run(fn, tasks, folder)` calls
`fn(task, shared, ctx) -> (record, arrays)` once per task whose part is not yet in `folder`,
writes each result as its own part (`part-<key>.npz`, then `part-<key>.json`, each
atomically: the JSON is written last and marks the part as finished), and returns the
results of all tasks, read back from their parts, in the order of `tasks`. An interrupted sweep
keeps its parts; running it again on the same folder (`--resume`) skips them.

Backends:
- `Sweep(workers=0)`: in the calling process, one task after another, no Dask.
- `Sweep(workers=N)`: a Dask `LocalCluster` of N worker processes with one thread each,
  started (spawn, not fork: JAX and fork do not mix) when the first task is pending.
- `Sweep(scheduler="tcp://host:8786")`: the workers of a running Dask cluster.

A worker that dies while running a task (killed, out of memory) costs that task one retry on
another worker; a second death reports it as failed with the reason, and the sweep goes on.
The workers' logs and each task's own output (its solver progress) go to `folder/logs/`.
"""

import collections
import contextlib
import logging
import os
import tempfile
import time

import numpy as np
from tqdm.auto import tqdm

from flows._progress import progress_bar

from ._options import UsageError
from ._sweep_options import default_workers
from ._sweep_parts import TaskResult, checkpoint_path, load_part, log, task_key, write_part
from ._sweep_progress import TOPIC, Watch

WORKERS_PER_CORE = 4  # more local worker processes than this only compete for the cores
CONNECT_TIMEOUT_S = 8  # an unreachable --scheduler fails within this (the CLI promises 10 s)
# A free worker starts a task of a group that another worker is running only while the group
# has at least this many pending tasks; fewer are left to that worker. Tracing a group's
# programs again costs about two of its tasks (lazy, 7 α: α = 10⁶ took 13.2 s of CPU on the
# other form's worker against 3.9 s on its own; α = 10⁵ 14.5 s against 4.6 s), so taking one
# of 2 pending tasks ends later than leaving both.
SHARE_GROUP_PENDING = 3


def worker_cache(stack: contextlib.ExitStack) -> str:
    """The compilation cache folder of the local Dask workers: this process's (the one named
    in JAX_COMPILATION_CACHE_DIR, or the per-user folder `flows` set), so that what one worker
    compiled the others load (the same executable, so the same bits), and the next run's
    workers start warm; a temporary one for this cluster (removed by `stack`) when the cache
    is turned off (GRADFLOWS_COMPILATION_CACHE=0)."""
    import jax

    return (
        os.environ.get("JAX_COMPILATION_CACHE_DIR")
        or jax.config.jax_compilation_cache_dir
        or stack.enter_context(tempfile.TemporaryDirectory(prefix="gradflows-"))
    )


class Sweep:
    """Where the tasks of sweeps run; a context manager that shuts its cluster down on exit.

    **Arguments:**
    - `workers`: 0 runs in this process; N > 0 starts a local Dask cluster of N single-thread
      worker processes (spawned on first need, reused by later `run` calls, at most one per
      pending task); None means `default_workers()`, or the scheduler's workers.
    - `scheduler`: address of a running Dask scheduler (`tcp://host:8786`); connected to at
      once. Give `workers` or `scheduler`, not both.
    - `progress`: one tqdm bar over the tasks, and the tasks' own progress in their logs.

    **Raises:** `UsageError` (a ValueError) for a negative or non-integer `workers`, both
    `workers` and `scheduler`, or a scheduler that does not answer within 8 s.
    """

    def __init__(self, workers: int | None = None, scheduler: str | None = None, *, progress=True):
        if scheduler is not None and workers is not None:
            raise UsageError("give --workers or --scheduler, not both")
        if scheduler is None:
            workers = default_workers() if workers is None else workers
            if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)):
                raise UsageError(f"--workers must be an integer >= 0, got {workers!r}")
            if workers < 0:
                raise UsageError(f"--workers must be an integer >= 0, got {workers}")
            most = WORKERS_PER_CORE * default_workers()
            if workers > most:
                raise UsageError(
                    f"--workers {workers}: at most {most} here ({WORKERS_PER_CORE} per core on "
                    f"{default_workers()} cores; each worker is a process with its own JAX); "
                    "for more machines give --scheduler"
                )
        self.workers, self.scheduler, self.progress = workers, scheduler, progress
        self._client = self._cluster = None
        self._stack = contextlib.ExitStack()
        self._logged = set()  # run folders whose logs/cluster.log gets this process's log
        if scheduler is not None:
            self._client = self._connect(scheduler)

    def __enter__(self):
        return self

    def describe(self) -> str:
        """Where the tasks run, in words (recorded with the results)."""
        if self.scheduler is not None:
            return f"Dask scheduler {self.scheduler}"
        if self.workers == 0:
            return "in-process (--workers 0)"
        return f"Dask LocalCluster, {self.workers} worker processes, 1 thread each"

    def __exit__(self, *exc):
        self.close()

    def summary(self, results, parts: str) -> dict:
        """Where the tasks of `results` (`TaskResult`s of `run`) ran and what they cost, for a
        results.json's `"sweep"`: backend, counts, the sum of the tasks' wall times, the
        critical path (the longest task: a lower bound of the wall time on any cluster), the
        largest peak memory of a task; `parts` says how the part files are named."""
        walls = [r.stats["wall_s"] for r in results if "wall_s" in r.stats]
        peaks = [r.stats["peak_rss_bytes"] for r in results if "peak_rss_bytes" in r.stats]
        return {
            "backend": self.describe(),
            "tasks": len(results),
            "resumed": sum(r.resumed for r in results),
            "failed": sum(r.failed for r in results),
            "task_wall_s_total": sum(walls),
            "critical_path_s": max(walls, default=0.0),
            "task_peak_rss_bytes_max": max(peaks, default=None),
            "parts": parts,
        }

    @staticmethod
    def _connect(address: str):
        from distributed import Client
        from distributed.comm.addressing import parse_address, parse_host_port

        try:  # a malformed address is refused here: a Client half-built on it hangs in __del__
            scheme, location = parse_address(address)
            if scheme in ("tcp", "tls", "ws", "wss"):
                parse_host_port(location)
        except ValueError as e:
            raise UsageError(
                f"--scheduler {address}: not a scheduler address ({e}); give tcp://HOST:PORT"
            ) from None
        try:
            return Client(address, timeout=f"{CONNECT_TIMEOUT_S}s", set_as_default=False)
        except (OSError, TimeoutError, ValueError, TypeError) as e:
            reason = " ".join(str(e).split()) or type(e).__name__
            raise UsageError(
                f"--scheduler {address}: no Dask scheduler answered within "
                f"{CONNECT_TIMEOUT_S} s ({reason})"
            ) from None

    def _client_for(self, pending: int, folder: str):
        """The Dask client; the local cluster is started (or grown) here."""
        from distributed import Client, LocalCluster

        from ._sweep_task import LOG_FORMAT, WorkerSetup

        if self._client is None:
            import dask

            self._stack.enter_context(
                dask.config.set(
                    {
                        "distributed.worker.multiprocessing-method": "spawn",
                        "distributed.scheduler.allowed-failures": 0,  # the sweep retries once
                    }
                )
            )
            self._cluster = LocalCluster(
                env={"JAX_COMPILATION_CACHE_DIR": worker_cache(self._stack)},
                n_workers=min(self.workers, pending),
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                # the scheduler's HTTP routes on a free port: a second run (or another
                # user's cluster) on this machine holds the default 8787
                scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                silence_logs=logging.CRITICAL,  # their log goes to logs/, not the terminal
            )
            self._client = Client(self._cluster, set_as_default=False)
        elif self._cluster is not None and len(self._cluster.workers) < min(self.workers, pending):
            self._cluster.scale(min(self.workers, pending))
        self._client.register_plugin(WorkerSetup(folder, local=self._cluster is not None))
        if self._cluster is not None and folder not in self._logged:  # scheduler and nannies
            self._logged.add(folder)
            handler = logging.FileHandler(os.path.join(folder, "logs", "cluster.log"))
            handler.setFormatter(logging.Formatter(LOG_FORMAT))
            logger = logging.getLogger("distributed")
            logger.addHandler(handler)
            self._stack.callback(handler.close)
            self._stack.callback(logger.removeHandler, handler)
        return self._client

    def close(self) -> None:
        """Shut the local cluster down (its worker processes end) or detach from the scheduler."""
        try:
            if self._client is not None:
                self._client.close(timeout=10)
            if self._cluster is not None:
                self._cluster.close(timeout=10)
        finally:
            self._client = self._cluster = None
            self._stack.close()  # after the cluster: its closing is logged

    def run(
        self,
        fn,
        tasks,
        folder: str,
        *,
        shared=None,
        desc: str = "tasks",
        check=None,
        on_result=None,
        on_start=None,
        order=None,
        check_at_reports=False,
        groups=None,
    ) -> list:
        """Run every task of `tasks` whose part is not in `folder`; return all their results.

        **Arguments:**
        - `fn`: `fn(task, shared, ctx) -> (record, arrays)`, a module-level function (workers
          import it); `record` a JSON-able dict (no NaN/inf), `arrays` a dict of arrays or
          None; `ctx` a `TaskContext`. An exception it raises fails that task only.
        - `tasks`: JSON-able dicts of settings, distinct; run in this order as workers free up.
        - `folder`: the run folder: parts `part-<key>.json` (and `.npz`), logs in `logs/`.
        - `shared`: one object passed to every task (sent with each, so keep it small:
          arrays of data, settings; build models inside `fn`).
        - `desc`: the progress bar's label.
        - `check`: called between tasks in-process and every 0.1 s while tasks run on a
          cluster; what it raises (an interrupt) stops the sweep: running tasks are cancelled,
          finished parts stay.
        - `check_at_reports`: in-process, also call `check` at each report of a task, which
          stops the task there: for tasks that report as they write a checkpoint (the lazy α),
          so that the work since the last one is all that is lost.
        - `on_result`: called with each `TaskResult` as it is known (resumed ones first).
        - `on_start`: called with each task (its dict) as it starts.
        - `order`: the indices of `tasks` in the order to start them (default: as given);
          the results keep the order of `tasks`.
        - `groups`: a label per task (default: none). Tasks of one group share compiled
          programs: on a cluster, a worker that finishes a task is given the next pending
          task of the same group (a worker traces and loads each program once), else the next
          in `order`, but not from a group another worker is running that has fewer than
          `SHARE_GROUP_PENDING` (3) pending tasks (that worker takes them; the free one waits).

        **Returns:** a list of `TaskResult`, one per task, in the order of `tasks`.

        **Raises:** ValueError if two tasks have the same settings; whatever `check` raises;
        KeyboardInterrupt passes through likewise.
        """
        tasks = [dict(t) for t in tasks]
        keys = [task_key(t) for t in tasks]
        if len(set(keys)) != len(keys):
            seen, repeated = set(), []
            for t, k in zip(tasks, keys):
                if k in seen:
                    repeated.append(t)
                seen.add(k)
            raise ValueError(f"tasks must be distinct; repeated: {repeated}")
        folder = os.path.abspath(folder)
        os.makedirs(folder, exist_ok=True)
        results = [load_part(folder, k, t) for k, t in zip(keys, tasks)]
        order = list(range(len(tasks))) if order is None else [int(i) for i in order]
        if sorted(order) != list(range(len(tasks))):
            raise ValueError(f"order must be a permutation of 0..{len(tasks) - 1}, got {order}")
        pending = [i for i in order if results[i] is None]
        check = check or (lambda: None)
        on_result = on_result or (lambda result: None)
        on_start = on_start or (lambda task: None)
        for r in results:
            if r is not None:
                on_result(r)
        bar = progress_bar(
            total=len(tasks),
            initial=len(tasks) - len(pending),
            desc=desc,
            unit="task",
            disable=not self.progress,
        )

        watch = Watch(tasks, keys, bar, len(tasks) - len(pending), desc, not self.progress)

        def started(i):
            watch.started(keys[i])
            on_start(tasks[i])

        def done(i, out, attempts):
            watch.finished(keys[i])
            if "stats" in out:
                results[i] = write_part(folder, keys[i], tasks[i], out, attempts)
                bar.set_postfix_str(f"last {results[i].stats['wall_s']:.1f} s", refresh=False)
            else:  # no worker finished it
                error = out["error"]
                log(folder, keys[i], error + "\n")
                results[i] = TaskResult(keys[i], tasks[i], None, {}, {"attempts": attempts}, error)
            watch.tick()
            if results[i].failed:
                tqdm.write(f"task {tasks[i]} failed: {results[i].error} (logs/{keys[i]}.log)")
            on_result(results[i])

        try:
            if pending and self.scheduler is None and self.workers == 0:
                here = check if check_at_reports else (lambda: None)
                self._run_here(
                    fn, tasks, keys, shared, folder, pending, done, (check, here), watch, started
                )
            elif pending:
                groups = [None] * len(tasks) if groups is None else list(groups)
                self._run_dask(
                    fn, tasks, keys, shared, folder, pending, done, check, watch, started, groups
                )
        finally:
            bar.close()
        return results

    def _run_here(self, fn, tasks, keys, shared, folder, pending, done, checks, watch, started):
        """The tasks in this process, one after another. `checks`: (between tasks, at each
        report); what the second raises passes through the task (`execute` would record it as
        the task's error) and stops the sweep."""
        from ._sweep_task import execute

        check, at_report = checks
        stopped = []

        def report(key):
            def at(t, t1, what=None):
                watch.report(key, t, t1, what)
                watch.tick()
                try:
                    at_report()
                except BaseException as e:
                    stopped.append(e)
                    raise

            return at

        with watch.ticking():
            for i in pending:
                check()
                started(i)
                out = execute(
                    fn, tasks[i], shared, keys[i], folder, False, self.progress, report(keys[i])
                )
                if stopped:
                    raise stopped[0]
                done(i, out, 1)

    def _run_dask(
        self, fn, tasks, keys, shared, folder, pending, done, check, watch, started, groups
    ) -> None:
        from distributed.client import FutureCancelledError
        from distributed.scheduler import KilledWorker

        from ._sweep_task import execute

        os.makedirs(os.path.join(folder, "logs"), exist_ok=True)
        client = self._client_for(len(pending), folder)
        queue = collections.deque(pending)
        running = {}  # future -> (task index, attempt)

        def submit(i, attempt, worker=None):
            args = (fn, tasks[i], shared, keys[i], folder, True, self.progress)
            # a preferred worker, not a requirement: another takes the task if it is gone
            where = {} if worker is None else {"workers": [worker], "allow_other_workers": True}
            future = client.submit(
                execute, *args, key=f"task-{keys[i]}-{attempt}", pure=False, **where
            )
            running[future] = (i, attempt)
            started(i)

        def follow(i, worker):  # the worker that ran task i takes the next of its group
            if worker is None or groups[i] is None:
                return
            j = next((j for j in queue if groups[j] == groups[i]), None)
            if j is not None:
                queue.remove(j)
                submit(j, 1, worker)

        def takeable(j):
            """Whether a free worker may start task j: its group has no running task, or at
            least `SHARE_GROUP_PENDING` pending ones (else the group's worker takes them
            next, without tracing the group's programs again)."""
            g = groups[j]
            if g is None or not any(groups[i] == g for i, _ in running.values()):
                return True
            return sum(groups[k] == g for k in queue) >= SHARE_GROUP_PENDING

        def fill():  # one task per worker thread: a dying worker takes only its own task
            free = max(1, sum(client.nthreads().values())) - len(running)
            while free > 0:
                j = next((j for j in queue if takeable(j)), None)
                if j is None:  # left to the workers of their groups (`follow`)
                    break
                queue.remove(j)
                submit(j, 1)
                free -= 1

        client.subscribe_topic(TOPIC, watch.on_event)
        try:
            fill()
            while running:
                check()
                watch.tick()
                finished = [f for f in running if f.done()]
                if not finished:
                    time.sleep(0.1)
                    continue
                for future in finished:
                    i, attempt = running.pop(future)
                    try:
                        out = future.result()
                    except KilledWorker as e:
                        if attempt == 1:
                            if os.path.exists(checkpoint_path(folder, keys[i])):
                                os.remove(checkpoint_path(folder, keys[i]))  # start afresh
                            tqdm.write(f"task {tasks[i]}: its worker died; retrying it")
                            submit(i, 2)
                            continue
                        out = {"error": f"its worker died twice while running it ({e})"}
                    except (FutureCancelledError, OSError, RuntimeError) as e:
                        out = {"error": f"lost by the cluster ({type(e).__name__}: {e})"}
                    finally:
                        future.release()
                    worker = out.pop("address", None)
                    done(i, out, attempt)
                    follow(i, worker)
                fill()
        except BaseException:
            client.cancel(list(running), force=True)
            raise
        finally:
            client.unsubscribe_topic(TOPIC)


def from_args(args) -> Sweep:
    """The `Sweep` of the parsed `--workers`/`--scheduler` options (`_sweep_options`);
    connects to a scheduler at once. Raises `UsageError` as `Sweep` does."""
    return Sweep(args.workers, args.scheduler, progress=not args.no_progress)


def run_with_sweep(args, settings, body) -> int:
    """`body(args, s, sweep, start)` of an experiment's run: `start` its `time.perf_counter()`
    at the call, `s = settings(args)` (the options checked before any cluster starts), and
    `sweep` the `Sweep` of the options (`from_args`), closed when `body` returns or raises."""
    start = time.perf_counter()
    s = settings(args)
    with from_args(args) as sweep:  # an unreachable --scheduler fails here
        return body(args, s, sweep, start)
