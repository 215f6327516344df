"""The `gradflows run` runs that tests/experiments/test_interrupt.py (as subprocesses) and
test_interrupt_resume.py (in its own process) interrupt, and the steps they share: wait for a
file, Ctrl-C, look for half-written files."""

import os
import signal
import time

from experiments._sweep import task_key
from tests.helpers import gradflows

NTK_FIRST = {"measure": "errors", "data": "digits", "activation": "relu", "scheme": "quadratic",
             "width": 8}  # fmt: skip
RUNS = {  # small, but several units of work each, so that an interrupt lands mid-run
    # lazy: six α below flows.lazy.LAZY_REMAINDER_ALPHA = 30, so one form of the flows compiles
    "lazy": (["--width", "8", "--n-train", "12", "--n-test", "0", "--t1", "0.5", "--n-times",
              "10", "--alphas", "1,2,3,5,10,20", "--no-progress", "--workers", "0", "--solver",
              "tsit5"],
             f"part-{task_key({'alpha': 1.0})}.json"),  # Dask: tests/experiments/test_lazy_sweep.py
    # gd only: the largest step finishes in a second, the two smaller ones take ~2 s more
    # (100,000 and 200,000 steps; 1,200,000 took ~8 s), so the interrupt, 0.5 s after the
    # first part, lands in the middle of the run
    "balance": (["--parts", "gd", "--n-train", "40", "--hidden", "4,3", "--etas",
                 "0.2,0.02,0.01", "--gd-t1", "2000", "--n-save", "10", "--workers", "0"],
                f"part-{task_key({'part': 'gd', 'eta': 0.2})}.json"),
    "portrait": (["--grid", "9", "--field-grid", "7", "--alphas", "1,10", "--gd-steps", "4",
                  "--workers", "0"], f"part-{task_key({'figure': 'seed'})}.json"),
    "ntk": (["--widths", "4,8", "--seeds", "2", "--depth", "2", "--n", "6", "--cond-depth", "4",
             "--no-progress", "--workers", "0"],
            f"part-{task_key(NTK_FIRST)}.json"),  # the largest network starts first
    "eos": (["--data", "digits", "--activation", "tanh", "--output-scale", "0.1",
             "--n-train", "20", "--width", "4", "--etas", "0.8,0.4,0.2", "--t1", "8",
             "--flows", "gradient", "--uv-points", "4", "--uv-steps", "10", "--no-progress",
             "--workers", "0"], f"part-{task_key({'part': 'eta', 'eta': 0.8})}.json"),
    # two Dirac-GAN variants, the locus and a tiny mixture: the first part is the GAN's
    "gan": (["--dirac", "gan,wgan", "--mixture", "gan", "--mixture-t1", "1", "--mixture-eta",
             "0.25", "--saves", "3", "--width", "3", "--samples", "16", "--t1", "6",
             "--no-progress", "--workers", "0"],
            f"part-{task_key({'part': 'dirac', 'variant': 'gan'})}.json"),
    # 16 (f, ε) cells, the smaller ε first, then two particle flows: the first part is KL's
    "transport": (["--n", "6", "--eps", "1,0.1", "--plan-eps", "1", "--flow-n", "3", "--t1",
                   "0.2", "--no-progress", "--workers", "0"],
                  f"part-{task_key({'measure': 'cell', 'divergence': 'kl', 'eps': 0.1})}.json"),
}  # fmt: skip


def wait_for(path, proc, timeout=240):
    start = time.monotonic()
    while not os.path.exists(path):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - start < timeout, f"{path} never appeared"
        time.sleep(0.05)


def interrupt(proc, times=1):
    for _ in range(times):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
    out, err = proc.communicate(timeout=240)
    return proc.returncode, err


def no_temporaries(folder):
    names = os.listdir(folder)
    assert not [n for n in names if n.startswith((".tmp-", "tmp"))], names


def start_run(name, tmp_path):
    """`gradflows run name` (its `RUNS` options) into tmp_path/run: (the file of its first
    finished unit, the folder, the process)."""
    argv, first = RUNS[name]
    folder = tmp_path / "run"
    return first, folder, gradflows("run", name, *argv, "--out", folder)


def assert_says_what_it_keeps(last, folder, name):
    """The last line of an interrupted run that made its folder: what it keeps, how to resume."""
    assert last.startswith(f"interrupted: {folder} keeps "), last
    assert last.endswith(f"resume with: gradflows run {name} --resume {folder}"), last
