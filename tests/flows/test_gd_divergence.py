"""Gradient descent above the stability limit says so: a loss grown 1e10 times warns
`flows.DivergenceWarning` once, naming η and the step; a non-finite loss raises
`FloatingPointError` naming η and the step, with the finite saves before as `.partial`.
Closed form: on L = w², each step multiplies w by 1 − 2η."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import flows

W0, ETA = 0.8, 1.5  # 1 − 2η = −2: the loss grows 4 times per step


def quadratic(w):
    return jnp.sum(w**2)  # one rounding: no reordering of constants moves the overflow


def test_a_loss_grown_1e10_times_warns_once_naming_eta_and_the_step():
    # 4^k > 1e10 first at k = 17 (4^17 = 1.718e10).
    with pytest.warns(flows.DivergenceWarning) as caught:
        traj = flows.gradient_descent(
            quadratic, jnp.array([W0]), 30.0, eta=ETA, ts=ETA * np.arange(21.0)
        )
    caught = [w for w in caught if issubclass(w.category, flows.DivergenceWarning)]
    assert len(caught) == 1  # besides, S = 2 > 2/η = 1.33: one EdgeOfStabilityWarning
    message = str(caught[0].message)
    assert "grew 1.72e+10 times" in message and "by step 17 (t=25.5)" in message
    assert "eta=1.5" in message
    np.testing.assert_allclose(traj.loss, W0**2 * 4.0 ** np.arange(21), rtol=1e-13)


def test_no_warning_below_the_threshold():
    with warnings.catch_warnings():
        warnings.simplefilter("error", flows.DivergenceWarning)
        flows.gradient_descent(quadratic, jnp.array([W0]), 24.0, eta=ETA, ts=ETA * np.arange(17.0))


def test_a_non_finite_loss_names_eta_and_the_step_and_keeps_the_finite_saves():
    # w_k = 0.8·(−2)^k stays finite to k = 1023, but w² overflows first at k = 513
    # (0.64·4^512 = 1.15e308 < 1.80e308 < 0.64·4^513).
    ts = ETA * np.arange(0.0, 521.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", flows.DivergenceWarning)
        with pytest.raises(FloatingPointError) as info:
            flows.gradient_descent(quadratic, jnp.array([W0]), ts[-1], eta=ETA, ts=ts)
    message = str(info.value)
    assert message.startswith("gradient descent became non-finite at step 513 (t=769.5): the loss")
    assert message.endswith("reduce eta (got 1.5)") and "\n" not in message
    partial = info.value.partial
    assert partial.ts[-1] == 512 * ETA and len(partial.ts) == 513
    # Measured relative error 1e-15; each step rounds once.
    assert partial.loss[-1] == pytest.approx(2 * W0**2 * 2.0**1023, rel=1e-12)


def test_a_loss_not_finite_at_the_start_does_not_blame_eta():
    # said "became non-finite at step 0 ...; reduce eta (got 0.1)": no step had been taken
    with pytest.raises(FloatingPointError) as info:
        flows.gradient_descent(lambda w: jnp.nan * jnp.sum(w), jnp.array([1.0, 2.0]), 1.0, eta=0.1)
    assert str(info.value) == (
        "the loss is nan at the start, t=0, before any step (not a matter of eta); check the "
        "loss, the data scale and the initialisation"
    )
    assert info.value.partial is None
