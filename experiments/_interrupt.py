"""Ctrl-C during `gradflows run`: never a crash, never a half-written file.

Raising KeyboardInterrupt at an arbitrary point lands inside JAX/XLA work or a garbage
collection callback: the process can then crash (exit 139) or swallow the interrupt. So SIGINT
never raises here. The signal's byte goes to a wakeup pipe, and a watcher thread acts at once:

- the first Ctrl-C sets a flag; the run stops at its next safe point (between α, parts,
  figures: `check()` raises `Interrupted`), exit 130 with one line saying what is kept;
- a second Ctrl-C stops at once: temporary files of writes in progress are removed, the same
  line is printed, and the process ends with `os._exit(130)`. Every file is written by a
  rename, so whatever is in the folder is whole.

SIGTERM (`kill PID`, a batch scheduler ending the job, a container stopping) stops at once by
the same path as a second Ctrl-C, with the same line and exit 143 (128 + 15): finished parts
are kept and `--resume` continues. It used to end the process at Python's default with no
line, leaving the temporaries of writes in progress.
"""

import contextlib
import os
import signal
import sys
import threading

_STATE = {"count": 0, "run": None}
_STOP = b"\x00"  # written to the pipe to end the watcher


class Interrupted(Exception):
    """The user pressed Ctrl-C; raised at a safe point by `check()`."""


def check() -> None:
    """Raise `Interrupted` if Ctrl-C was pressed: call between units of finished work."""
    if _STATE["count"]:
        raise Interrupted


def watch(run) -> None:
    """Report on the `RunFolder` `run` if interrupted."""
    _STATE["run"] = run


def current_run():
    """The `RunFolder` being watched, or None."""
    return _STATE["run"]


def line() -> str:
    run = _STATE["run"]
    if run is None:
        return "interrupted before the run folder was made: nothing to keep"
    return run.interrupted_line()


def _on_sigint() -> None:
    _STATE["count"] += 1
    if _STATE["count"] == 1:
        sys.stderr.write(
            "\ninterrupt: stopping after the current step (Ctrl-C again to stop at once)\n"
        )
        sys.stderr.flush()
        return
    _stop_now(130)


def _on_sigterm() -> None:
    _STATE["count"] += 1
    _stop_now(128 + signal.SIGTERM, "SIGTERM: ")


def _stop_now(code: int, prefix: str = "") -> None:
    """Remove the temporaries of writes in progress, print the line and end the process."""
    run = _STATE["run"]
    if run is not None and run.started:
        run.remove_temporaries()
    sys.stderr.write(f"\n{prefix}{line()}\n")
    sys.stderr.flush()
    _release_semaphores()
    os._exit(code)


def _release_semaphores() -> None:
    """Unlink this process's multiprocessing semaphores before `os._exit`.

    A local Dask cluster's nannies hold multiprocessing queues and events in this process
    (12 named semaphores for 2 workers), registered with the resource tracker that spawning
    the workers started. A normal exit runs multiprocessing's exit finalizers, which unlink
    them; `os._exit` skips those, and the tracker, left with them, printed "There appear to be
    12 leaked semaphore objects to clean up at shutdown" after the interrupt line. Running the
    finalizers of priority >= 0 unlinks the semaphores (priority 0) and closes the queues'
    buffers (10); those that join threads (priority < 0) are left out, so nothing waits."""
    util = sys.modules.get("multiprocessing.util")
    if util is None:  # no multiprocessing object was ever made
        return
    try:
        util._run_finalizers(0)
    except Exception:  # the process is ending: an exit must not fail here
        pass


def _watcher(fd: int) -> None:
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        for byte in data:
            if byte == _STOP[0]:
                return
            if byte == signal.SIGINT:
                _on_sigint()
            elif byte == signal.SIGTERM:
                _on_sigterm()


@contextlib.contextmanager
def handling():
    """Inside the block, SIGINT and SIGTERM follow this module's rules (main thread only;
    elsewhere the block does nothing)."""
    _STATE.update(count=0, run=None)
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # SIGINT is held back while the handler is set up, and the watcher starts only after it:
    # a Ctrl-C in between (thread.start() waits for the thread, long under load) would meet
    # Python's own handler and end in a traceback. The byte waits in the pipe for the watcher.
    held = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        read, write = os.pipe()
        os.set_blocking(write, False)
        old_fd = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        old_handler = signal.signal(signal.SIGINT, lambda signum, frame: None)
        old_term = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
    thread = threading.Thread(target=_watcher, args=(read,), daemon=True, name="gradflows-sigint")
    thread.start()
    try:
        yield
    finally:
        # After an interrupt the process is on its way out: a further Ctrl-C must not kill it
        # with a traceback while it exits with 130.
        signal.signal(signal.SIGINT, signal.SIG_IGN if _STATE["count"] else old_handler)
        signal.signal(signal.SIGTERM, old_term)
        signal.set_wakeup_fd(old_fd)
        os.write(write, _STOP)
        thread.join(timeout=5)
        os.close(read)
        os.close(write)
        _STATE["run"] = None
