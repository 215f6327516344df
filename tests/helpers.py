"""Shared test helpers: the CLI runner (in-process and as a real subprocess) and small files."""

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
