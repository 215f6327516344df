"""Bad input to the transport functions that failed deep inside: one line naming it."""

import jax.numpy as jnp
import pytest

from flows.transport import particle_flow, sinkhorn

A = jnp.ones(3) / 3
COST = jnp.arange(9.0).reshape(3, 3) / 9


@pytest.mark.parametrize("eps", [jnp.array([0.1, 0.2]), [0.1]])
def test_an_array_of_several_eps_is_refused_naming_eps(eps):
    # was "Incompatible shapes for broadcasting: shapes=[(3, 3), (2,)]"
    with pytest.raises(ValueError, match=r"^eps must be one number, got an array of shape"):
        sinkhorn(A, A, COST, eps)
    with pytest.raises(ValueError, match=r"^eps must be one number"):
        particle_flow(jnp.zeros((2, 1)), jnp.ones((3, 1)), 1.0, eps=eps)
