"""Case 7: `gradflows run lazy` end to end, in a subprocess."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from ._case_common import _row, _skip


def _peak_rss_mb(stderr: str):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(m.group(1)) / 1024 if m else None


def case_lazy(cfg, params=None):
    """Wall time and peak memory of the whole default `gradflows run lazy`, in a subprocess."""
    if importlib.util.find_spec("experiments.lazy") is None:
        return [_skip(cfg, "lazy", None, "experiments.lazy is not on this branch yet")]
    if cfg.quick:
        return [_skip(cfg, "lazy", None, "not in --quick (runs the whole default experiment)")]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "experiments", "run", "lazy"]
    gnu_time = shutil.which("time")
    with tempfile.TemporaryDirectory() as work:
        full = [gnu_time, "-v", *cmd] if gnu_time else cmd
        start = time.perf_counter()
        proc = subprocess.run(full, cwd=work, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    peak = _peak_rss_mb(proc.stderr) if gnu_time else None
    if peak is None:
        import resource

        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        return [_skip(cfg, "lazy", None, f"gradflows run lazy failed ({proc.returncode}): {tail}")]
    return [
        _row(
            cfg,
            "lazy",
            None,
            "default `gradflows run lazy`: wall time",
            seconds,
            "s",
            ours=f"{seconds:.1f} s, peak RSS {peak:.0f} MB",
            details={"seconds": seconds, "peak_rss_mb": peak, "command": " ".join(cmd)},
            note=f"peak RSS {peak:.0f} MB",
            command="gradflows run lazy  (timed by " + cfg.command("lazy") + ")",
        )
    ]


# -- 8. α sweep --------------------------------------------------------------------------------
