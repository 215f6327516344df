"""Shared test helpers: the CLI runner (in-process and as a real subprocess), small files, and
the count of this process's memory mappings (see tests/conftest.py)."""

import os
import subprocess
import sys

from experiments import _cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(*argv) -> int:
    """`gradflows *argv` in this process; argparse's own exits become their code."""
    try:
        return _cli.main([str(a) for a in argv])
    except SystemExit as e:
        return e.code


def gradflows(*argv, **popen) -> subprocess.Popen:
    """`gradflows *argv` as a real subprocess (`python -m experiments`), output captured."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "experiments", *map(str, argv)],
        cwd=popen.pop("cwd", ROOT),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def wait_for_sigint_handler(proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Wait until the `gradflows` subprocess `proc` handles Ctrl-C itself: its SIGINT wakeup
    pipe (`experiments._interrupt.handling`, the first thing `main` does) is open, seen as a
    pipe at a descriptor above stderr in /proc (Linux). Before that, SIGINT meets Python's own
    handler, a KeyboardInterrupt at interpreter start; a fixed sleep did not cover it at load 17."""
    import time

    start = time.monotonic()
    while time.monotonic() - start < timeout:
        assert proc.poll() is None, proc.communicate()
        try:
            links = [
                os.readlink(f"/proc/{proc.pid}/fd/{fd}")
                for fd in os.listdir(f"/proc/{proc.pid}/fd")
                if int(fd) > 2
            ]
        except OSError:  # a descriptor closed while listed
            links = []
        if any(link.startswith("pipe:") for link in links):
            return  # SIGINT is blocked from before the pipe is made until the handler is set
        time.sleep(0.01)
    raise AssertionError(f"no SIGINT handler after {timeout} s")


def write(path, text: str, encoding: str = "utf-8") -> str:
    with open(path, "w", encoding=encoding) as f:
        f.write(text)
    return str(path)


def one_line(err: str) -> str:
    """The single line of a one-line error message (fails if there are more)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def memory_maps() -> int:
    """The number of memory mappings of this process (lines of /proc/self/maps; 0 where that
    file does not exist)."""
    try:
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def max_map_count() -> int:
    """The kernel's limit on one process's memory mappings (`vm.max_map_count`, 65530 by
    default on Linux)."""
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 65530


def help_defaults(module) -> dict:
    """The `--help` of experiment `module` as {option: its help text, formatted}, only the
    options that take a value and have a default (not None)."""
    import argparse

    parser = _cli._Parser(prog="gradflows run x")
    module.add_arguments(parser)
    formatter = parser._get_formatter()
    return {
        a.option_strings[-1]: formatter._expand_help(a)
        for a in parser._actions
        if a.default is not None and a.nargs != 0 and a.help is not argparse.SUPPRESS
    }
