import gc

import jax
import pytest

jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """After each test module, drop JAX's compiled programs and collect garbage.

    The suite compiles several hundred XLA programs in one process; one full run on the 2-core
    machine died with a segmentation fault inside XLA's compiler near its end (a test that
    passes alone in 21 s). Releasing them per module keeps the process's state bounded."""
    yield
    jax.clear_caches()
    gc.collect()
