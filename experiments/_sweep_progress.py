"""What the client shows of a sweep while its tasks run: flow time within each running task.

A task reports the flow time it reached (`TaskContext.report(t, t1)`: the lazy α at the start
of its solve, then with each checkpoint, i.e. after each chunk and every few seconds within
one, `flows._checkpoint.CHECKPOINT_S`). In a Dask worker the report is a structured event on
the topic `TOPIC` (`distributed.Worker.log_event`), which the client receives through
`Client.subscribe_topic`; in-process it is a plain call. The client's `Watch` turns the
reports into the progress bar's position (finished tasks plus t/t1 of each running one) and,
without a bar (`--no-progress`), into a one-line heartbeat on stderr about every
`HEARTBEAT_S` seconds: tasks done, tasks running, their flow times and wall seconds so far.
The client ticks the watch on its own (`ticking`), so the heartbeat goes on while a task
compiles or runs between reports.
"""

import contextlib
import sys
import threading
import time

TOPIC = "gradflows-progress"
HEARTBEAT_S = 10.0


def worker_report(key: str):
    """The `report(t, t1, what=None)` of task `key` in a Dask worker: an event to the client."""
    from distributed import get_worker

    worker = get_worker()

    def report(t, t1, what=None):
        worker.log_event(TOPIC, {"key": key, "t": float(t), "t1": float(t1), "what": what})

    return report


def _name(task: dict) -> str:
    return ",".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in task.items())


class Watch:
    """The client's view of the running tasks (module docstring). `bar`: the sweep's tqdm bar
    (disabled or not); `heartbeat`: print the heartbeat line (when there is no bar)."""

    def __init__(self, tasks, keys, bar, done: int, desc: str, heartbeat: bool, stream=None):
        self.names = {k: _name(t) for k, t in zip(keys, tasks)}
        self.bar, self.done, self.total, self.desc = bar, done, len(keys), desc
        self.heartbeat, self.stream = heartbeat, stream
        self.running: dict[str, tuple[float, float | None]] = {}
        self.what: dict[str, str] = {}  # the part of a task running now, when it says
        self.since: dict[str, float] = {}  # when each running task started (monotonic)
        self.last = time.monotonic()
        self.drawn = -float("inf")  # when the bar was last redrawn by `tick`
        self.lock = threading.Lock()

    def started(self, key: str) -> None:
        self.running.setdefault(key, (0.0, None))
        self.since.setdefault(key, time.monotonic())

    def report(self, key: str, t: float, t1: float, what: str | None = None) -> None:
        """Task `key` reached flow time t of t1, in its part `what` when it names one (a
        task of several solves: "central flow", say) (called from any thread)."""
        if key in self.running or key in self.names:
            self.running[key] = (t, t1)
            if what:
                self.what[key] = what
            else:
                self.what.pop(key, None)

    def on_event(self, event) -> None:
        """`Client.subscribe_topic` handler: event = (timestamp, message)."""
        msg = event[1]
        self.report(msg["key"], msg["t"], msg["t1"], msg.get("what"))

    def finished(self, key: str) -> None:
        self.running.pop(key, None)
        self.since.pop(key, None)
        self.what.pop(key, None)
        self.done += 1

    def line(self) -> str:
        parts, now = [], time.monotonic()
        for key, (t, t1) in sorted(self.running.items(), key=lambda kv: self.names[kv[0]]):
            where = "started (no flow time yet)" if t1 is None else f"t={t:.3g} of {t1:.3g}"
            if key in self.what:
                where = f"{self.what[key]} {where}"
            parts.append(f"{self.names[key]} {where} ({now - self.since.get(key, now):.0f} s)")
        running = "; ".join(parts) if parts else "none"
        return f"{self.desc}: {self.done}/{self.total} done; running: {running}"

    def tick(self) -> None:
        """Move the bar to the flow time reached; print the heartbeat when it is due (from
        any thread)."""
        with self.lock:
            fractions = sum(t / t1 for t, t1 in list(self.running.values()) if t1)
            if not self.bar.disable:
                self.bar.n = round(self.done + fractions, 2)
                self.bar.set_postfix_str(self.line().split("running: ", 1)[1][:80], refresh=False)
            now = time.monotonic()
            # the bar's own pace (flows._progress: every 10 s off a terminal): a redraw per
            # tick, twice a second, filled a log with a line each
            if not self.bar.disable and now - self.drawn >= self.bar.mininterval:
                self.drawn = now
                self.bar.refresh()
            if self.heartbeat and now - self.last >= HEARTBEAT_S:
                self.last = now
                stream = self.stream or sys.stderr
                stream.write(self.line() + "\n")
                stream.flush()

    @contextlib.contextmanager
    def ticking(self, every: float = 0.5):
        """Inside the block, a daemon thread ticks the watch every `every` seconds (the
        in-process sweep, whose own thread is busy in its task)."""
        stop = threading.Event()

        def run():
            while not stop.wait(every):
                self.tick()

        thread = threading.Thread(target=run, daemon=True, name="gradflows-heartbeat")
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=5)
