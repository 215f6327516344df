"""JAX's persistent compilation cache, on by default in a per-user folder.

A solve compiles its programs once per model structure, loss and solver; with the cache on, a
second process (a CLI subprocess, a Dask worker, the next session) loads them from disk
instead of compiling again. Set when `flows` is imported, so every process that imports it
shares the one folder:

- `GRADFLOWS_COMPILATION_CACHE=0` (or `false`, `off`, `no`) in the environment turns it off;
- `JAX_COMPILATION_CACHE_DIR` (JAX's own setting), when set, names the folder and is kept,
  as is a folder given to `jax.config` before `flows` is imported;
- otherwise the folder is `$XDG_CACHE_HOME/gradflows/jax`, by default
  `~/.cache/gradflows/jax`.

Programs that compile in under `MIN_COMPILE_SECONDS` are not written (JAX's default is 1 s,
which leaves out most of a small model's programs), unless
`JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS` says otherwise. JAX does not bound the folder
by default (`JAX_COMPILATION_CACHE_MAX_SIZE`, with the `filelock` package, does); deleting
it is always safe.

An entry that cannot be read (a truncated file: a process killed while writing it, a full
disk) is deleted when JAX fails to read it, so that JAX's write after it recompiles replaces
it: JAX's cache never overwrites an existing file, and every later process warned "Error
reading persistent compilation cache entry" and compiled again.
"""

import contextlib
import os

import jax

#: The environment setting that turns the cache off ("0", "false", "off", "no").
ENV_SWITCH = "GRADFLOWS_COMPILATION_CACHE"
MIN_COMPILE_SECONDS = 0.1


def cache_dir() -> str | None:
    """The folder gradflows gives JAX's persistent compilation cache, or None when
    `GRADFLOWS_COMPILATION_CACHE` turns it off (see the module docstring)."""
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "false", "off", "no"):
        return None
    explicit = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gradflows", "jax")


def enable_compilation_cache() -> str | None:
    """Point JAX's persistent compilation cache at `cache_dir()`; returns the folder, or None
    when turned off or when the folder cannot be made (the cache then stays off: a read-only
    home must not stop an import)."""
    folder = cache_dir()
    if folder is None:
        return None
    configured = jax.config.jax_compilation_cache_dir
    if configured and configured != os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return configured  # set in code before `flows` was imported: kept, with its settings
    if not configured:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            return None
        jax.config.update("jax_compilation_cache_dir", folder)
    # also for a folder named by JAX_COMPILATION_CACHE_DIR: JAX's own 1 s would leave out a
    # first call's solve program once it compiles in under a second
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    _replace_damaged_entries()
    return folder


def _replace_damaged_entries() -> None:
    """Wrap JAX's read of a cache entry: when it raises (JAX then warns and recompiles), the
    entry's file is deleted so that the write after the compilation puts a whole one in its
    place. JAX's private module: if its names change, the cache works as JAX's alone."""
    try:
        from jax._src import compilation_cache as cc
    except ImportError:
        return
    read = getattr(cc, "get_executable_and_time", None)
    if read is None or getattr(read, "replaces_damaged", False):
        return

    def get_executable_and_time(cache_key, *args, **kwargs):
        try:
            return read(cache_key, *args, **kwargs)
        except Exception:
            path = getattr(getattr(cc, "_cache", None), "path", None)
            if path is not None:  # JAX's LRUCache: <folder>/<key>-cache
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(str(path), f"{cache_key}-cache"))
            raise

    get_executable_and_time.replaces_damaged = True
    cc.get_executable_and_time = get_executable_and_time
