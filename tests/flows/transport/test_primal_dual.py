"""The primal–dual Newton steps of the generalised Sinkhorn solve: from the plan of a
larger ε, past the pole of (f*)′, they reach the solution by themselves."""

import jax.numpy as jnp
import numpy as np
import pytest

from experiments.transport._data import clouds
from experiments.transport._data import cost as transport_cost
from flows.divergences import get
from flows.transport import sinkhorn
from flows.transport._loops import newton_loop
from flows.transport._primal_dual import primal_dual_loop


@pytest.mark.parametrize("name", ["reverse_chi2", "triangular"])
def test_steps_from_the_plan_of_a_larger_eps_reach_the_solution_alone(name):
    """60 + 60 points, from the solution at ε = 0.03 to ε = 0.01. At the new ε the old
    potentials put a quarter of the entries of s = (u + v − c)/ε at or past the pole f′(∞)
    of (f*)′ (measured 945 and 928 of 3,600), where no dual step can start; the primal–dual
    steps start from the old plan instead and reach tol = 1e-12 alone (8 steps each): the
    dual Newton loop, allowed no step, measures the c-transformed plan's column error
    ≤ 1e-11 (measured ≤ 3.5e-13), and v equals the reference solve's to 1e-10 up to the
    shift that the rows undo (measured ≤ 7.7e-15)."""
    div = get(name)
    x, y = clouds(60, 0)
    cost = jnp.asarray(transport_cost(x, y))
    a = jnp.full(60, 1.0 / 60)
    old = sinkhorn(a, a, cost, 0.03, name, tol=1e-12, eps_schedule=[1.0, 0.3, 0.1])
    s = (old.u[:, None] + old.v[None, :] - cost) / 0.01
    assert int(jnp.sum(s >= div.f_prime_inf)) > 500
    ratio = old.plan / (a[:, None] * a[None, :])
    eps = jnp.asarray(0.01)
    u, v, steps = primal_dual_loop(div, a, a, cost, eps, old.u, old.v, ratio, 1e-12, 200)
    assert 0 < int(steps) < 200
    _, v, _, error = newton_loop(div, a, a, cost, eps, u, v, 1e-12, 0)
    assert float(error) <= 1e-11
    ref = sinkhorn(a, a, cost, 0.01, name, tol=1e-13, eps_schedule=[1.0, 0.3, 0.1, 0.03])
    np.testing.assert_allclose(v - v.mean(), ref.v - ref.v.mean(), rtol=0, atol=1e-10)
