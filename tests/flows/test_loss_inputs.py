"""What a loss is given: a two-argument loss is refused naming `loss` and the expected
signature; float32 data with a float64 model is promoted with a warning naming it (it was
taken silently), as a loss's closed-over data or as `lazy_comparison`'s `data`."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import flows

X64 = jnp.asarray(np.random.default_rng(3).standard_normal((6, 3)))
Y64 = jnp.asarray(np.random.default_rng(4).standard_normal(6))
W0 = jnp.array([0.3, -0.2, 0.5])


def test_a_two_argument_loss_is_refused_naming_loss_and_the_signature():
    # failed inside equinox with "missing 1 required positional argument: 'Y'"
    def mse(w, Y):
        return jnp.mean((X64 @ w - Y) ** 2)

    for run in (
        lambda loss: flows.gradient_flow(loss, W0, 1.0),
        lambda loss: flows.gradient_descent(loss, W0, 1.0, eta=0.1),
    ):
        with pytest.raises(TypeError) as info:
            run(mse)
        message = str(info.value)
        assert message.startswith(
            "loss must be a function of the parameters alone, loss(params) -> float64 scalar; "
            "got mse(w, Y) (missing a required argument: 'Y')"
        ), message
        with pytest.raises(TypeError, match=r"got SquaredLoss\(pred, target\)"):
            run(flows.SquaredLoss())  # a flows loss R(pred, target), not an objective


def test_float32_data_closed_over_by_the_loss_warns_naming_it():
    X32, Y32 = X64.astype(jnp.float32), Y64.astype(jnp.float32)
    with pytest.warns(UserWarning) as caught:
        traj = flows.gradient_flow(lambda w: 0.5 * jnp.mean((X32 @ w - Y32) ** 2), W0, 1.0)
    messages = [str(w.message) for w in caught]
    assert any(
        m.startswith(
            "an array the loss closes over (its data?) is float32 (shape (6, 3)), "
            "promoted to float64: its values keep their float32 rounding (relative "
            "1e-07)"
        )
        for m in messages  # fmt: skip
    ), messages
    assert traj.loss.dtype == np.float64
    with warnings.catch_warnings():  # float64 data: no word
        warnings.simplefilter("error", UserWarning)
        flows.gradient_flow(lambda w: 0.5 * jnp.mean((X64 @ w - Y64) ** 2), W0, 1.0)


def test_float32_data_of_lazy_comparison_warns_naming_it():
    from flows.lazy._comparison import check_pair  # lazy_comparison's check of `data`

    with pytest.warns(UserWarning, match=r"^data inputs is float32 \(shape \(6, 3\)\)"):
        X, Y = check_pair((X64.astype(jnp.float32), Y64))
    assert X.dtype == jnp.float64 and Y.dtype == jnp.float64
    with pytest.warns(UserWarning, match=r"^data targets is float32 \(shape \(6,\)\)"):
        check_pair((X64, np.asarray(Y64, np.float32)))
