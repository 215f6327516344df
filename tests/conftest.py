"""Session-wide test setup: float64, one persistent compilation cache per session, XLA without
LLVM optimisation or fusion emitters (below), and a bound on the memory mappings that compiled
programs hold.

The cache: every process of the session (pytest-xdist workers, CLI subprocesses, Dask workers)
inherits `JAX_COMPILATION_CACHE_DIR`, a fresh temporary folder made here and removed at the
end, so runs stay cold and repeatable while a program compiled once is read back elsewhere.
It takes precedence over any default the library sets. Programs with host callbacks (the
stiff solvers' solves, which count evaluations through `jax.debug.callback`) are never written
to a persistent cache by JAX: for those only the in-process cache helps."""

import gc
import os
import shutil
import tempfile

_OWNER = "GRADFLOWS_TEST_CACHE_OWNER"  # pid of the process that made the session's cache

if os.environ.get(_OWNER) is None:  # the session's first process (xdist's controller)
    os.environ[_OWNER] = str(os.getpid())
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="gradflows-jax-cache-")
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"

# XLA's CPU backend without LLVM's optimisation passes: the suite's problems are tiny, so it is
# compile-bound (a tiny `gradflows run lazy`: 71 s of its 89 s compiling). Measured on
# tests/flows/test_failures.py + test_gauss.py: 202 s → 150 s wall, 91 s → 71 s CPU; the
# tiny lazy run's two solve programs compiled in 6.2 s and 11.8 s instead of 16.3 s and
# 15.4 s, with the same printed slopes. Set for every process of the session (subprocesses
# and Dask workers inherit it); results can differ from the optimised build's only at
# round-off, within the tests' margins. Off with GRADFLOWS_TEST_XLA_OPT=1.
# Beside it, XLA's CPU fusion emitters off (`--xla_cpu_use_fusion_emitters=false`: fused loops
# emitted as before them, which compiles faster). Measured 2026-12-04 at load 7-9, CPU seconds:
# tests/flows/test_filippov.py 90.3 → 62.7, test_lazy.py 50.0 → 38.7, every test passing; the
# values they assert unchanged at round-off (slopes equal to 1e-10, the hand-solution errors
# and GD/β errors bit for bit, the invariants' drift to 5 digits). Back on with
# GRADFLOWS_TEST_XLA_FUSION_EMITTERS=1. A flag already in XLA_FLAGS is left as it is.
_FLAGS = []
if os.environ.get("GRADFLOWS_TEST_XLA_OPT") != "1":
    _FLAGS.append("--xla_backend_optimization_level=0")
if os.environ.get("GRADFLOWS_TEST_XLA_FUSION_EMITTERS") != "1":
    _FLAGS.append("--xla_cpu_use_fusion_emitters=false")
for _FLAG in _FLAGS:
    if _FLAG.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FLAG}".strip()

import jax  # noqa: E402  (after the environment it reads)
import pytest  # noqa: E402

from tests.helpers import max_map_count, memory_maps  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def pytest_unconfigure(config):
    if os.environ.get(_OWNER) == str(os.getpid()):
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)


# XLA's CPU backend JIT-compiles each program into its own memory mappings (measured: about
# 9 per small program, released by `jax.clear_caches()`). A process that keeps every program
# of the suite runs into `vm.max_map_count`; there the next mmap inside LLVM fails and XLA's
# compiler dies with a segmentation fault (the crash a full single-process run once hit near
# its end; tests/flows/test_xla_map_limit.py reproduces it). Compiled programs are kept across
# modules, so that modules sharing a problem share its compilation, and released only when
# the process holds more than half of the limit: the other half (~32,000 mappings, some 3,600
# programs) is headroom for the next module (measured: a module adds 500 to 2,500).
MAP_BUDGET = max_map_count() // 2


@pytest.fixture(autouse=True, scope="module")
def _bound_compiled_programs():
    yield
    if memory_maps() > MAP_BUDGET:
        jax.clear_caches()
        gc.collect()


# Scheduling under `pytest -n 2 --dist loadfile` (the README's and CI's command): each file runs
# whole on one worker, and xdist hands files out in its queue's order. By default it sorts the
# queue by the number of tests per file, which sends files of a few slow tests (a Dask sweep,
# Ctrl-C runs) last: the run then ends with one worker on a 2-minute file and the other idle.
# Here the queue starts with the files measured to take longest (the longest first), then the
# rest by number of tests as before, so that short files fill in at the end. Measured
# 2026-12-06, one process running the files in turn (-p no:randomly), seconds of pytest over
# the load average when each file ended (the shared 2-core machine at load 9-18): 27.4, 27.1,
# 23.4, 17.8, 13.7, 13.2, 11.6, 11.3, 10.3, 10.0, 9.4, 8.2, 8.1, 7.7, 7.2, 6.7, 6.6, 6.4, 6.4,
# 4.6, 3.9, 3.8, 4.1, 2.9, 2.9, 2.5 for the files below but the two central-flow ones, which
# keep the places their 2026-12-04 times (76 s and 44 s at load 4-8) gave them.
# test_flow.py and test_sharpness.py (10.3 and 13.7) were not in the list before.
HEAVY_FILES = (
    "tests/experiments/test_interrupt_resume.py",
    "tests/experiments/test_lazy_cli.py",
    "tests/flows/test_filippov.py",
    "tests/flows/large_steps/test_central_k.py",
    "tests/experiments/test_lazy_sweep.py",
    "tests/flows/large_steps/test_sharpness.py",
    "tests/experiments/test_interrupt.py",
    "tests/flows/large_steps/test_central.py",
    "tests/experiments/test_eos_cli.py",
    "tests/experiments/test_figures.py",
    "tests/flows/test_flow.py",
    "tests/flows/test_lazy.py",
    "tests/experiments/test_ntk_cli.py",
    "tests/flows/test_auto_generated.py",
    "tests/experiments/test_balance_cli.py",
    "tests/flows/large_steps/test_modified.py",
    "tests/flows/test_filippov_compiled_loop.py",
    "tests/experiments/test_sweep.py",
    "tests/experiments/test_portrait_cli.py",
    "tests/experiments/test_lazy_api.py",
    "tests/experiments/test_eos_compare.py",
    "tests/flows/games/test_dirac_spectra.py",
    "tests/flows/test_settings.py",
    "tests/experiments/test_tables.py",
    "tests/flows/test_ntk.py",
    "tests/flows/test_solvers_auto_stiffness.py",
    "tests/flows/test_pl.py",
    "tests/flows/test_compilation_reuse.py",
)


def pytest_configure(config):
    missing = [path for path in HEAVY_FILES if not (config.rootpath / path).exists()]
    if missing:  # a renamed file would silently lose its place at the head of the queue
        raise pytest.UsageError(f"tests/conftest.py HEAVY_FILES names no file: {missing}")
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: the order set below is kept
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    files = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)

    def rank(path):
        heavy = HEAVY_FILES.index(path) if path in HEAVY_FILES else len(HEAVY_FILES)
        return heavy, -len(files[path])

    items[:] = [item for path in sorted(files, key=rank) for item in files[path]]
