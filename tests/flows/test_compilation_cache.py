"""The persistent compilation cache: on by default in a per-user folder (XDG), JAX's own
setting kept, one environment setting turns it off, and a second process loads what the
first compiled."""

import os
import subprocess
import sys

import pytest

from flows import _cache
from tests.helpers import ROOT


def test_cache_folder_follows_xdg_then_jax_setting_and_the_switch_turns_it_off(monkeypatch):
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.delenv(_cache.ENV_SWITCH, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert _cache.cache_dir() == os.path.join("/xdg", "gradflows", "jax")
    monkeypatch.delenv("XDG_CACHE_HOME")
    home = os.path.expanduser("~")
    assert _cache.cache_dir() == os.path.join(home, ".cache", "gradflows", "jax")
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "/explicit")
    assert _cache.cache_dir() == "/explicit"
    for off in ("0", "false", "OFF", "no"):
        monkeypatch.setenv(_cache.ENV_SWITCH, off)
        assert _cache.cache_dir() is None


_PROGRAM = """
import jax, jax.numpy as jnp
from jax import monitoring
hits = []
monitoring.register_event_listener(
    lambda e, **kw: hits.append(e) if e == "/jax/compilation_cache/cache_hits" else None)
import flows
assert jax.config.jax_compilation_cache_dir == {folder!r}, jax.config.jax_compilation_cache_dir
jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)(jnp.arange(3.0)).block_until_ready()
print(len(hits))
"""


@pytest.mark.parametrize("switch", ["1", "0"])
def test_a_second_process_loads_the_first_process_compilation_unless_turned_off(tmp_path, switch):
    env = {
        **os.environ,
        "PYTHONPATH": ROOT,
        "XDG_CACHE_HOME": str(tmp_path),
        _cache.ENV_SWITCH: switch,
    }
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"  # the tiny program is cached too
    expected = os.path.join(str(tmp_path), "gradflows", "jax") if switch == "1" else None
    code = _PROGRAM.format(folder=expected)
    hits = [
        subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                       text=True, check=True).stdout.split()[-1]
        for _ in range(2)
    ]  # fmt: skip
    # measured: 0 then 2 (jnp.arange's program and ours) with the cache, 0 and 0 without
    assert int(hits[0]) == 0
    assert (int(hits[1]) >= 1) == (switch == "1")


_SOLVE = """
import jax, jax.numpy as jnp
from jax import monitoring
events = {"/jax/compilation_cache/compile_requests_use_cache": 0,
          "/jax/compilation_cache/cache_hits": 0}
def listen(e, **kw):
    if e in events:
        events[e] += 1
monitoring.register_event_listener(listen)
import flows
from tests.problems import separable_deep_linear
problem = separable_deep_linear(20, scale=1.0)
flows.gradient_flow(problem.loss, problem.net0, t1=5.0, solver="tsit5", progress=False)
print(*events.values())
"""


def test_a_second_process_loads_every_program_of_a_solve_from_the_cache(tmp_path):
    # diffrax's argument guards (equinox.error_if) lowered to host callbacks, and JAX writes
    # no program with one: the solve program compiled anew in every process (flows/_solver/
    # _cacheable.py). Measured: the second process asks for 36 programs and loads all 36
    # (35 of 36 before, the solve program compiled again).
    env = {**os.environ, "PYTHONPATH": ROOT, "JAX_COMPILATION_CACHE_DIR": str(tmp_path)}
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    runs = [
        subprocess.run([sys.executable, "-c", _SOLVE], env=env, cwd=ROOT, capture_output=True,
                       text=True, check=True).stdout.split()[-2:]
        for _ in range(2)
    ]  # fmt: skip
    requests, hits = (int(x) for x in runs[1])
    assert int(runs[0][1]) == 0 and requests >= 3
    assert hits == requests


_THRESHOLD = """
import jax
import flows
print(jax.config.jax_compilation_cache_dir, jax.config.jax_persistent_cache_min_compile_time_secs)
"""


@pytest.mark.parametrize("named", ["xdg", "jax"])
def test_the_write_threshold_is_gradflows_own_whichever_setting_names_the_folder(tmp_path, named):
    # A folder named by JAX_COMPILATION_CACHE_DIR used to keep JAX's 1 s threshold: a first call
    # whose solve program compiled in 0.93 s wrote nothing, and a second process started cold.
    env = {**os.environ, "PYTHONPATH": ROOT, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", None)
    env.pop(_cache.ENV_SWITCH, None)
    folder = os.path.join(str(tmp_path), "gradflows", "jax")
    if named == "jax":
        folder = str(tmp_path / "named")
        env["JAX_COMPILATION_CACHE_DIR"] = folder
    else:
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", _THRESHOLD], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert out == [folder, str(_cache.MIN_COMPILE_SECONDS)]


_DAMAGED = """
import warnings
import jax, jax.numpy as jnp
from jax import monitoring
hits = []
monitoring.register_event_listener(
    lambda e, **kw: hits.append(e) if e == "/jax/compilation_cache/cache_hits" else None)
import flows
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    jax.jit(lambda x: jnp.cos(x) * 3.0 - 1.0)(jnp.ones(4)).block_until_ready()
damaged = sum("Error reading persistent compilation cache" in str(w.message) for w in caught)
print(len(hits), damaged)
"""


def test_a_truncated_cache_entry_is_replaced_not_warned_about_in_every_process(tmp_path):
    # JAX's cache never overwrites an existing file: a truncated entry made every later
    # process warn "Error reading persistent compilation cache entry" and compile again
    env = {**os.environ, "PYTHONPATH": ROOT, "JAX_COMPILATION_CACHE_DIR": str(tmp_path)}
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"

    def run():
        out = subprocess.run([sys.executable, "-c", _DAMAGED], env=env, cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
        return int(out[-2]), int(out[-1])

    assert run() == (0, 0)  # compiled and written
    entries = [p for p in tmp_path.iterdir() if p.name.endswith("-cache")]
    assert entries
    for p in entries:  # a process killed while writing: half of each file
        p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    hits, damaged = run()
    assert hits == 0 and damaged >= 1  # read, warned once, compiled, written anew
    hits, damaged = run()
    assert hits >= 1 and damaged == 0  # was: the same warning in every process, no hit
