"""Fences around the two private names of equinox that `flows` swaps while tracing.

`flows/_solver/_clip_floor.py` swaps `equinox.internal.prevbefore` (diffrax's t1 − 100 ULPs
threshold in one step) and `flows/_solver/_cacheable.py` swaps `equinox._errors.EQX_ON_ERROR`
(solve programs without host callbacks, so JAX's persistent cache keeps them). Neither name is
public API: a new equinox (or diffrax) release may drop or rewire it without notice, and the swap
would then silently do nothing, or worse. Each fence checks that its name exists and still does
what its swap assumes, and fails with one message naming the module, the name and the installed
versions. pyproject.toml pins equinox to the versions these fences passed on; the upstream
options that would let both swaps go are in docs/performance.md ("Private names").

Each fence is tested both ways: it passes on the installed equinox, and it fails with that
message when its name is removed from the module, or rewired, by a monkeypatched import.
"""

import importlib
import types

import diffrax
import equinox
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows  # noqa: F401  (float64)


def _versions():
    return f"equinox {equinox.__version__}, diffrax {diffrax.__version__}"


def _fail(name, user, what):
    pytest.fail(
        f"{name} ({_versions()}) {what}; {user} swaps it while tracing. Check that module "
        f"against this release, or pin equinox to the last version that passed "
        f"(pyproject.toml)",
        pytrace=False,
    )


def fence_prevbefore():
    """`equinox.internal.prevbefore` exists, is the float before x, and diffrax's integrate
    loop looks it up on the module at trace time, 100 times a solve (what `_clip_floor` swaps)."""
    name, user = "equinox.internal.prevbefore", "flows/_solver/_clip_floor.py"
    eqxi = importlib.import_module("equinox.internal")
    original = getattr(eqxi, "prevbefore", None)
    if original is None:
        _fail(name, user, "no longer exists")
    x = jnp.array([1.0, 3e-3, -2.5, 1e300])
    if not np.array_equal(np.asarray(original(x)), np.nextafter(np.asarray(x), -np.inf)):
        _fail(name, user, "no longer returns the float before x (np.nextafter(x, -inf))")
    calls = []

    def counting(t):
        calls.append(1)
        return original(t)

    term = diffrax.ODETerm(lambda t, y, args: -y)
    eqxi.prevbefore = counting
    try:  # trace only: a traced t1, as gradflows' solves have
        jax.eval_shape(
            lambda t1: diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, t1, 0.1, 1.0).ys,
            jnp.float64(1.0),
        )
    finally:
        eqxi.prevbefore = original
    if len(calls) != 100:
        _fail(
            name,
            user,
            f"is called {len(calls)} times, not 100, when diffrax.diffeqsolve is traced "
            "(diffrax no longer computes t1 − 100 ULPs as 100 chained calls looked up on "
            "equinox.internal)",
        )


def _guarded(mode):
    # one message per mode: equinox keeps one trace per message (its inner filter_jit), which
    # would otherwise hide a change of the setting between two traces of the same guard
    return jax.jit(lambda x: equinox.error_if(x, x < 0.0, f"negative ({mode})"))


def fence_eqx_on_error():
    """`equinox._errors.EQX_ON_ERROR` exists, and `error_if` reads it at trace time: "nan"
    gives a program without host callbacks that returns NaN where the guard fails, "raise"
    one with a callback (what `_cacheable` swaps)."""
    name, user = "equinox._errors.EQX_ON_ERROR", "flows/_solver/_cacheable.py"
    errors = importlib.import_module("equinox._errors")
    if not hasattr(errors, "EQX_ON_ERROR"):
        _fail(name, user, "no longer exists")
    saved = errors.EQX_ON_ERROR
    try:
        errors.EQX_ON_ERROR = "raise"
        raising = _guarded("raise").lower(jnp.float64(1.0)).as_text()
        errors.EQX_ON_ERROR = "nan"
        quiet = _guarded("nan").lower(jnp.float64(1.0)).as_text()
        try:
            value = float(_guarded("nan")(jnp.float64(-1.0)))
        except Exception:  # the guard raised: the setting was not read
            value = 0.0
    finally:
        errors.EQX_ON_ERROR = saved
    if "callback" not in raising or "callback" in quiet or not np.isnan(value):
        _fail(
            name,
            user,
            "no longer sets how equinox.error_if lowers at trace time (wanted: a host "
            f"callback under 'raise' {'callback' in raising}, none under 'nan' "
            f"{'callback' not in quiet}, NaN where the guard fails {np.isnan(value)})",
        )


def test_equinox_internal_prevbefore_does_what_clip_floor_swaps():
    fence_prevbefore()


def test_equinox_errors_eqx_on_error_does_what_cacheable_swaps():
    fence_eqx_on_error()


def _expect_fence_failure(fence, *words):
    with pytest.raises(pytest.fail.Exception) as failure:
        fence()
    message = str(failure.value)
    for word in (*words, f"equinox {equinox.__version__}"):
        assert word in message, message


def test_the_prevbefore_fence_fails_naming_module_and_version_when_the_name_goes(monkeypatch):
    monkeypatch.delattr("equinox.internal.prevbefore")
    _expect_fence_failure(fence_prevbefore, "equinox.internal.prevbefore", "no longer exists")


def test_the_prevbefore_fence_fails_when_the_name_no_longer_does_what_the_swap_assumes(
    monkeypatch,
):
    monkeypatch.setattr("equinox.internal.prevbefore", lambda x: x - 1.0)
    _expect_fence_failure(fence_prevbefore, "no longer returns the float before x")
    monkeypatch.undo()
    # diffrax takes its own copy of the module: a swap on equinox.internal no longer reaches it
    import diffrax._integrate as integrate

    monkeypatch.setattr(integrate, "eqxi", types.SimpleNamespace(**vars(integrate.eqxi)))
    _expect_fence_failure(fence_prevbefore, "is called 0 times, not 100")


def test_the_eqx_on_error_fence_fails_naming_module_and_version_when_the_name_goes(monkeypatch):
    monkeypatch.delattr("equinox._errors.EQX_ON_ERROR")
    _expect_fence_failure(fence_eqx_on_error, "equinox._errors.EQX_ON_ERROR", "no longer exists")


def test_the_eqx_on_error_fence_fails_when_error_if_no_longer_reads_it(monkeypatch):
    import equinox._errors as errors

    impl = errors.branched_error_if_impl

    def reads_elsewhere(x, pred, index, msgs, *, on_error):  # as if read from another place
        return impl(x, pred, index, msgs, on_error="raise" if on_error == "default" else on_error)

    monkeypatch.setattr(errors, "branched_error_if_impl_jit", equinox.filter_jit(reads_elsewhere))
    _expect_fence_failure(fence_eqx_on_error, "no longer sets how equinox.error_if lowers")
