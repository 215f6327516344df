"""One precision rule for every entry point, and the process-wide float64 switch."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models


def _cast32(tree):
    return jax.tree.map(
        lambda a: a.astype(jnp.float32) if hasattr(a, "dtype") and a.dtype == jnp.float64 else a,
        tree,
    )


X = np.random.default_rng(0).standard_normal((5, 3))
Y = np.random.default_rng(1).standard_normal(5)


@pytest.mark.parametrize(
    "call",
    [
        lambda net: flows.gradient_flow(lambda m: jnp.sum(jax.vmap(m)(X) ** 2), net, 1.0),
        lambda net: flows.gradient_descent(
            lambda m: jnp.sum(jax.vmap(m)(X) ** 2), net, 1.0, eta=0.1
        ),
        lambda net: flows.lazy.lazy_comparison(net, (X, Y), 1.0, 1.0),
        lambda net: flows.lazy.linear_closed_form(net, (X, Y), 1.0, [0.0, 1.0]),
        lambda net: flows.lazy.lazy_constants(net, (X, Y)),
        lambda net: flows.ntk.ntk_gram(net, X),
        lambda net: flows.lazy.jacobian_lipschitz(net, X),
    ],
    ids=[
        "gradient_flow",
        "gradient_descent",
        "lazy_comparison",
        "linear_closed_form",
        "lazy_constants",
        "ntk_gram",
        "jacobian_lipschitz",
    ],
)
def test_every_entry_point_refuses_float32_parameters_in_one_line(call):
    net = _cast32(models.TwoLayerNet(3, 4, activation="tanh", key=jax.random.PRNGKey(0)))
    with pytest.raises(ValueError) as info:
        call(net)
    message = str(info.value)
    assert "float32" in message and "float64" in message and "\n" not in message


def test_the_float64_mode_is_turned_on_by_import_and_said_in_the_docstrings():
    code = (
        "import jax; before = jax.config.jax_enable_x64; import models; "
        "print(before, jax.config.jax_enable_x64, jax.numpy.zeros(1).dtype)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "float64"]
    for package in (flows, models):
        assert "turns on JAX's float64 mode for the whole process" in package.__doc__


def test_entry_points_refuse_to_run_when_float64_mode_was_turned_off():
    code = (
        "import jax.numpy as jnp, flows, jax; jax.config.update('jax_enable_x64', False)\n"
        "try:\n    flows.gradient_flow(lambda p: jnp.sum(p**2), jnp.ones(2), 1.0)\n"
        "except ValueError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "jax_enable_x64 is off" in out.stdout
