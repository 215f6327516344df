"""A solve that cannot start says so: a loss or a gradient already non-finite at the start
is reported at t=0 with the largest parameter, not as a trajectory that "became" non-finite
later; and the norms in the messages do not overflow for a huge but finite state."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models
from flows._integrate import _field_norm, _norm


def test_a_huge_finite_start_whose_loss_overflows_is_reported_at_the_start():
    # (1e160)² = 1e320 overflows float64: the loss is inf at t=0, the state is finite.
    with pytest.raises(FloatingPointError) as info:
        flows.gradient_flow(lambda w: jnp.sum(w**2), jnp.array([1e160, 2.0]), 1.0)
    message = str(info.value)
    assert message.startswith("the loss is non-finite at the start, t=0 ")
    assert "(largest |θᵢ| = 1e+160)" in message
    assert "became" not in message and "inf)" not in message


def test_a_nan_loss_at_the_start_is_not_said_to_become_non_finite_later():
    with pytest.raises(FloatingPointError, match=r"^the loss is non-finite at the start, t=0 "
                       r"\(largest \|θᵢ\| = 2\)"):  # fmt: skip
        flows.gradient_flow(lambda w: jnp.sum(w**2) + jnp.nan, jnp.array([1.0, -2.0]), 1.0)


def test_an_infinite_gradient_at_a_finite_loss_is_reported_at_the_start():
    # √|w| is finite at w = 0, its derivative is not.
    with pytest.raises(FloatingPointError) as info:
        flows.gradient_flow(
            lambda w: jnp.sum(jnp.sqrt(jnp.abs(w))), jnp.array([0.0, 1.5]), 1.0, solver="tsit5"
        )
    assert str(info.value).startswith(
        "the gradient is non-finite at the start, t=0 (largest |θᵢ| = 1.5), though the loss "
        "is finite"
    )


def test_norms_of_huge_finite_states_are_finite_and_exact():
    # ‖(3e200, 4e200)‖ = 5e200; the sum of squares would be inf. Relative error measured 0
    # up to a few ulps; asserted to 1e-14.
    y = {"a": jnp.array([3e200]), "b": jnp.array([[4e200]])}
    assert abs(_norm(y) / 5e200 - 1) < 1e-14
    assert _norm({"a": jnp.zeros(3)}) == 0.0
    assert abs(_norm(jnp.array([3.0, -4.0])) - 5.0) < 1e-14
    field = lambda t, y, args: {"a": -2 * y["a"], "b": y["b"]}  # noqa: E731
    assert abs(float(_field_norm(field, 0.0, y)) / np.hypot(6e200, 4e200) - 1) < 1e-14
    assert float(_field_norm(field, 0.0, {"a": jnp.zeros(2), "b": jnp.zeros(1)})) == 0.0
    assert np.isinf(float(_field_norm(field, 0.0, {"a": jnp.array([np.inf]), "b": y["b"]})))


def test_a_huge_finite_start_with_a_finite_flow_solves():
    # loss = Σw has gradient 1: w(t) = w0 − t exactly, at any scale.
    traj = flows.gradient_flow(lambda w: jnp.sum(w), jnp.array([1e160, -3.0]), 2.0, solver="tsit5")
    assert traj.params[-1][0] == 1e160
    assert abs(traj.params[-1][1] + 5.0) < 1e-10


def test_the_lazy_pair_on_overflowing_targets_says_the_loss_is_non_finite_at_the_start():
    # Its state is the displacement ū = α(w̄ − w0), 0 at the start: no largest |θᵢ| is said.
    X = np.random.default_rng(0).normal(size=(6, 3))
    net = models.TwoLayerNet(3, 4, activation="gelu", key=jax.random.PRNGKey(0))
    with pytest.raises(FloatingPointError) as info:
        flows.lazy.lazy_comparison(
            models.symmetrize(net, "doubled"), (X, 1e200 * X[:, 0]), 10.0, 1.0, solver="tsit5"
        )
    assert str(info.value) == (
        "the loss is non-finite at the start, t=0; check the loss, the data scale and the "
        "initialisation"
    )


def test_a_nan_loss_of_a_network_under_auto_is_reported_at_the_start():
    # Every step of the first "auto" call is rejected (the field is NaN), so the call ends at
    # its step cap: it was taken as a capped call and "auto"'s stiffness test met NaN
    # Hessian-vector products (numpy's LinAlgError 'Eigenvalues did not converge').
    kx, kn = jax.random.split(jax.random.PRNGKey(0))
    X = jax.random.normal(kx, (16, 3))
    net = eqx.nn.MLP(3, "scalar", width_size=4, depth=1, activation=jnp.tanh, key=kn)
    loss = lambda m: jnp.mean(jax.vmap(m)(X) ** 2) * jnp.nan  # noqa: E731
    with pytest.raises(FloatingPointError, match=r"^the loss is non-finite at the start, t=0 "):
        flows.gradient_flow(loss, net, 1.0)
