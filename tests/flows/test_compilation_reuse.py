"""One compilation serves every `ts`, `t1` and `max_steps` of a problem: a second solve with
other save times, horizon and step budget makes no new XLA program (counted by JAX's own
events, not timed: each new program is lowered once, before any persistent-cache lookup),
through both solvers of "auto"; and the traced step budget stops a solve at exactly
`max_steps` steps, as diffrax's static one did."""

import jax
import jax.numpy as jnp
import pytest
from jax import monitoring

import flows
import models

_COMPILES = []


def _count(event, duration, **kwargs):
    if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
        _COMPILES.append(duration)


monitoring.register_event_duration_secs_listener(_count)

X = jax.random.normal(jax.random.PRNGKey(0), (20, 5))
Y = X @ jnp.array([1.0, -2.0, 0.5, 1.0, 0.3]) + 0.3 * jax.random.normal(
    jax.random.PRNGKey(5), (20,)
)
NET0 = models.DeepLinearNet.gaussian([5, 4, 3, 1], scale=1.0, key=jax.random.PRNGKey(1))
_SQUARED = flows.SquaredLoss("mean")


def _loss(net):
    return _SQUARED(jax.vmap(net)(X)[:, 0], Y)


def _compiles(fn):
    """(fn(), the number of new XLA programs it made)."""
    before = len(_COMPILES)
    out = fn()
    return out, len(_COMPILES) - before


def test_new_ts_t1_and_max_steps_compile_nothing_through_both_auto_solvers():
    def solve(t1, n, max_steps):
        return flows.gradient_flow(
            _loss, NET0, t1, ts=flows.log_times(t1, n), rtol=1e-8, atol=1e-10,
            max_steps=max_steps, save_params=True,
        )  # fmt: skip

    first, n_first = _compiles(lambda: solve(2e3, 100, 200_000))
    assert "exprb32" in first.stats["solvers"]  # the stiff machinery was compiled too
    assert n_first > 0
    # 37 save times (one block of 16 is no divisor), another horizon and budget: measured 0
    # compilations (before the fix: 6, as the padded save array had a length from len(ts)).
    second, n_second = _compiles(lambda: solve(5e3, 36, 12_345))
    assert "exprb32" in second.stats["solvers"]
    assert second.params is not None and len(second.ts) == 37
    assert n_second == 0
    # More save times than chunks × block: calls split at full blocks, still nothing compiled.
    third, n_third = _compiles(lambda: solve(1e2, 700, 50_000))
    assert n_third == 0
    assert third.loss.shape == (701,)


def test_traced_step_budget_stops_tsit5_at_exactly_max_steps():
    with pytest.raises(flows.MaxStepsReached) as info:
        flows.gradient_flow(_loss, NET0, 1e4, solver="tsit5", max_steps=77, chunks=1)
    assert info.value.stats["num_steps"] == 77
