"""`solver="auto"` on small generated problems (issue 21, item 3): it switches to exprb32 where
the flow is stiff, λ_max·t1 at the start ≥ 10⁴ (λ_max of the Hessian, dense here), and stays on
Tsit5 where λ_max·t1 ≤ 10², a factor of at least 100 between the two groups. The same
family, larger and timed against the fixed solvers, is benchmark case 16
(`benchmarks/_case_auto_family.py`)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import flows
import models

N_POINTS, IN_SIZE = 32, 5
RTOL, ATOL = 1e-6, 1e-9
#: Tsit5 alone to t1 = 10⁴ on the stiff members needs h ≤ 3.5/λ_max, ~10⁴ steps or more; a
#: solve within this budget has switched.
MAX_STEPS = 3_000


class _Fitted(eqx.Module):
    """A model with its data held fixed (`models.Frozen`): the data are traced, so that every
    problem of one architecture shares one compilation."""

    net: eqx.Module
    data: models.Frozen

    def __call__(self, x):
        return self.net(x)


def _squared(fitted):
    X, Y = models.read_frozen(fitted.data)
    return flows.SquaredLoss("sum")(jax.vmap(fitted.net)(X).reshape(Y.shape), Y)


def _problem(arch: str, width: int, seed: int):
    """(loss(model), model at θ0) of a generated problem: `N_POINTS` Gaussian inputs,
    squared loss on y = sin(x·v) (all members share one loss, so that each architecture
    compiles once)."""
    kx, kv, kn = jax.random.split(jax.random.PRNGKey(seed), 3)
    X = jax.random.normal(kx, (N_POINTS, IN_SIZE))
    s = X @ jax.random.normal(kv, (IN_SIZE,))
    if arch == "two_layer":
        net = models.TwoLayerNet(IN_SIZE, width, activation="tanh", key=kn)
    else:
        net = models.DeepLinearNet.gaussian((IN_SIZE, width, width, 1), scale=1.0, key=kn)
    return _squared, _Fitted(net, models.Frozen((X, jnp.sin(s))))


def _stiffness_at_start(arch, width, seed, t1):
    """λ_max(∇²F(θ0))·t1, from the dense Hessian (p ≤ 48 here)."""
    objective, net = _problem(arch, width, seed)
    trainable, static = models.partition(net)
    flat, unravel = ravel_pytree(trainable)
    H = jax.hessian(lambda x: objective(eqx.combine(unravel(x), static)))(flat)
    return float(np.linalg.eigvalsh(np.asarray(H))[-1]) * t1


def _solve(arch, width, seed, t1):
    objective, net = _problem(arch, width, seed)
    return flows.gradient_flow(
        objective, net, t1, solver="auto", rtol=RTOL, atol=ATOL, max_steps=MAX_STEPS,
        save_params=False,
    ).stats  # fmt: skip


@pytest.mark.parametrize(
    "arch, width, seed",
    [
        ("deep_linear", 4, 1),
        ("deep_linear", 4, 3),
        # Measured: its trial steps fail while the flow still moves (errors 3.2e4, 187, 78,
        # 9.5 at t = 14, 47, 74, 102: the steps they would accept are shorter than
        # c_s/c_e·h); the one at t = 127 fails too (3.0), but the step it would accept pays,
        # and exprb32 takes over there: 2,008 steps.
        ("two_layer", 8, 0),
    ],
)
def test_auto_switches_to_exprb32_on_a_stiff_generated_flow(arch, width, seed):
    # measured 3.0e6, 2.2e6, 1.7e5: stiff by a wide margin
    assert _stiffness_at_start(arch, width, seed, 1e4) >= 1e4
    stats = _solve(arch, width, seed, t1=1e4)
    assert stats["stiffness"] >= 1e4  # λ̂·t1 of the first test (2.7e6, 1.4e6, 1.9e5)
    assert stats["solvers"][:2] == ["tsit5", "exprb32"]
    first = stats["switches"][0]
    assert first["to"] == "exprb32"
    # The switch was asked for by a positive test: h·λ̂ at Tsit5's boundary, ≥ 0.8·3.5.
    assert first["h_lambda"] >= 0.8 * flows.STABILITY_BOUNDARY["tsit5"]
    assert stats["num_steps"] < MAX_STEPS


@pytest.mark.parametrize(
    "arch, width, seed, t1",
    [("two_layer", 8, 0, 1.0), ("deep_linear", 4, 1, 0.1)],
)
def test_auto_stays_on_tsit5_on_a_non_stiff_generated_flow(arch, width, seed, t1):
    assert _stiffness_at_start(arch, width, seed, t1) <= 1e2  # measured 16.7 and 29.8
    stats = _solve(arch, width, seed, t1=t1)
    assert stats["solvers"] == ["tsit5"]
    assert stats["switches"] == [] and stats["probes"] == []
    # Tsit5's own estimate h·ρ kept every segment calm: no Lanczos test, so none recorded
    assert stats["stiffness_tests"] == 0 and stats["stiffness"] is None
