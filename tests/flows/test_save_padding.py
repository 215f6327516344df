"""A solve call's save array has a fixed length (`flows._integrate.SAVE_BLOCK`), padded with
the call's end time; the save function (the observables) runs at the real save times only and
once at the end state, not at the padding (a lazy pair's measurements cost a few field
evaluations each). Counted through a host callback in an observable, and the values checked
against the closed form of a quadratic's flow."""

import jax
import jax.numpy as jnp
import numpy as np

import flows

_CALLS = [0]
LAMBDA = jnp.array([0.5, 1.0, 2.0, 3.0])  # F(w) = ½ Σ λ_i w_i², w(t) = e^{−λt} w0
W0 = jnp.array([1.0, -0.7, 0.4, 0.25])


def _tick():
    _CALLS[0] += 1


def _counted_loss(w):
    jax.debug.callback(_tick)
    return 0.5 * jnp.sum(LAMBDA * w**2)


def test_the_padded_save_times_are_not_measured_and_the_call_ends_hold_the_flow():
    ts = np.linspace(0.5, 4.0, 8)
    chunks = 8  # one save time per call: 15 padded entries in each
    _CALLS[0] = 0
    traj = flows.gradient_flow(
        lambda w: 0.5 * jnp.sum(LAMBDA * w**2), W0, float(ts[-1]), ts=ts, solver="tsit5",
        rtol=1e-10, atol=1e-12, chunks=chunks, observables={"F": _counted_loss},
    )  # fmt: skip
    jax.effects_barrier()
    # Each call measures its real save times before its end and the end state once: at most
    # len(ts) + chunks evaluations (measured 10; 128, 16 per call, when the padding was
    # measured).
    assert _CALLS[0] <= len(ts) + chunks
    # Every save time here is a call's end: its value is the end state's, the flow's to the
    # solver's tolerance (measured error 1.2e-12 relative; asserted at 1e-8).
    exact = 0.5 * np.sum(np.asarray(LAMBDA * W0**2)[None] * np.exp(-2 * np.outer(ts, LAMBDA)), 1)
    np.testing.assert_allclose(traj.observables["F"], exact, rtol=1e-8)
    np.testing.assert_allclose(traj.loss, exact, rtol=1e-8)
