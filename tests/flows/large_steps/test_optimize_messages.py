"""What `optimize` says when a run diverges because of its schedule."""

import jax.numpy as jnp
import optax
import pytest

from flows.large_steps import optimize


def test_a_divergence_under_a_schedule_names_the_schedule_not_eta_alone():
    # η_k = 1e300 on L = ½ Σ λ w²: the first step overflows; the advice was "reduce eta
    # (got 0.1)", though eta was not the step taken
    loss = lambda w: 0.5 * jnp.sum(jnp.array([1.0, 3.0]) * w**2)  # noqa: E731
    with pytest.raises(FloatingPointError, match="became non-finite at step 1") as e:
        optimize(loss, jnp.array([1.0, -0.5]), 1.0, optimizer=optax.sgd(0.1), eta=0.1,
                 schedule=lambda k: 1e300)  # fmt: skip
    assert "or the schedule's step sizes (it sets each step)" in str(e.value)
