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
