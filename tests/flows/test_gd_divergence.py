"""Gradient descent above the stability limit says so, by the rule shared with
`experiments.eos` (flows/_divergence.py): a loss more than 1e3·max(|L(0)|, tiny) above L(0)
that does not come back within 100 steps warns `flows.DivergenceWarning` once, naming η, the
step and the loss; a spike that comes back (the catapult) or a falling loss does not; a
non-finite loss raises `FloatingPointError` naming η and the step, with the finite saves
before as `.partial`. Closed form: on L = w², each step multiplies w by 1 − 2η."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import flows

W0, ETA = 0.8, 1.5  # 1 − 2η = −2: the loss grows 4 times per step


def quadratic(w):
    return jnp.sum(w**2)  # one rounding: no reordering of constants moves the overflow


def test_a_loss_that_stays_1e3_times_above_warns_once_naming_eta_the_step_and_the_loss():
    # 4^k − 1 > 1e3 first at k = 5 (0.64·4^5 = 655.36); the run ends at step 20, inside the
    # window: GD goes on (unsaved) to step 105, where the loss is 0.64·4^105 = 1.05e63.
    with pytest.warns(flows.DivergenceWarning) as caught:
        traj = flows.gradient_descent(
            quadratic, jnp.array([W0]), 30.0, eta=ETA, ts=ETA * np.arange(21.0)
        )
    caught = [w for w in caught if issubclass(w.category, flows.DivergenceWarning)]
    assert len(caught) == 1  # besides, S = 2 > 2/η = 1.33: one EdgeOfStabilityWarning
    assert caught[0].filename == __file__  # the user's call
    message = str(caught[0].message)
    assert "rose from 0.64 to 655.36 by step 5 (t=7.5)" in message, message
    assert "within 100 steps (it was 1.05312e+63 at step 105); eta=1.5" in message, message
    np.testing.assert_allclose(traj.loss, W0**2 * 4.0 ** np.arange(21), rtol=1e-13)
    assert traj.ts[-1] == 30.0  # the steps past t1 are not saved


def _divergence(caught) -> str:
    """The one DivergenceWarning's message (S(0) > 2/η also warns EdgeOfStabilityWarning)."""
    (warning,) = [w for w in caught if issubclass(w.category, flows.DivergenceWarning)]
    return str(warning.message)


def _silent_gd(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", flows.DivergenceWarning)
        return flows.gradient_descent(*args, **kwargs)


def test_the_catapult_is_not_divergence():
    # uv model, m = 1e4, η = 3/λ0: the loss spikes 1,745 times at step 6, then converges
    from flows.large_steps import uv_init, uv_loss, uv_ntk

    params = uv_init(10**4, 0)
    eta = 3.0 / float(uv_ntk(params))
    traj = _silent_gd(uv_loss(0.0), params, 300 * eta, eta=eta, ts=eta * np.arange(301))
    assert traj.loss.max() / traj.loss[0] == pytest.approx(1744.643, rel=1e-5)
    assert traj.loss[-1] < 1e-30  # measured 6.7e-33


def test_a_slow_divergence_below_1e10_is_caught():
    # ηλ = 2.01 on ½w²: the loss grows 1.0201 times per step, 1e3 times L(0) above it first
    # at step 365 (0.32·1.0201^365 = 456.8); was silent: 1e10 needed 1,162 steps
    eta = 2.01
    with pytest.warns(flows.DivergenceWarning) as caught:
        flows.gradient_descent(lambda w: 0.5 * jnp.sum(w**2), jnp.array([W0]), 500 * eta, eta=eta)
    message = _divergence(caught)
    assert "rose from 0.32 to 456.828 by step 365 (t=733.65)" in message, message


def test_a_falling_loss_below_zero_is_not_divergence():
    # L = −w²: GD doubles w each step (η = 0.5) and the loss falls to −4^30·0.64 = −7e17; it
    # was "diverges: the loss grew 1.15e+18 times ... reduce eta" (|L| against |L(0)|)
    traj = _silent_gd(lambda w: -jnp.sum(w**2), jnp.array([W0]), 15.0, eta=0.5)
    assert traj.loss[-1] == pytest.approx(-(W0**2) * 4.0**30, rel=1e-12)


def test_a_shifted_objective_with_negative_loss_diverges_at_the_closed_form_step():
    # L = w² − 1 from L(0) = −0.36: the excess 0.64·(4^k − 1) passes 1e3·0.36 first at k = 5
    with pytest.warns(flows.DivergenceWarning) as caught:
        flows.gradient_descent(lambda w: jnp.sum(w**2) - 1.0, jnp.array([W0]), 15.0, eta=ETA)
    message = _divergence(caught)
    assert "rose from -0.36 to 654.36 by step 5 (t=7.5)" in message, message


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
    assert ", after rising to 655.36 at step 5 (1.02e+03 times |L(0)|" in message
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


def test_a_loss_falling_to_minus_inf_says_unbounded_below_not_reduce_eta():
    # L = −w²: w doubles each step (η = 0.5), and w² overflows at k = 513 (as above), so the
    # loss is −inf there; it said "reduce eta", which only delays −inf (every η > 0 gets there)
    ts = 0.5 * np.arange(0.0, 521.0)
    with pytest.raises(FloatingPointError) as info:
        _silent_gd(lambda w: -jnp.sum(w**2), jnp.array([W0]), ts[-1], eta=0.5, ts=ts)
    message = str(info.value)
    assert message.startswith("gradient descent became non-finite at step 513 (t=256.5)")
    assert "the loss is -inf" in message and "unbounded below" in message
    assert "reduce eta" not in message and "\n" not in message
    assert info.value.partial.loss[-1] == pytest.approx(-2 * W0**2 * 2.0**1023, rel=1e-12)
