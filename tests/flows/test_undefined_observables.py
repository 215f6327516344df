"""An observable undefined at a point is reported under its own name with the time, and is
not a failure of the flow; gradient_flow and gradient_descent behave the same."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models


def _setup():
    # Deep linear 5 → 4 → 3 → 1 whose last layer starts at zero: the end-to-end vector is 0
    # at t = 0, so the normalised margin and the angle to the max-margin direction are 0/0.
    k = jax.random.split(jax.random.PRNGKey(0), 4)
    X = np.asarray(jax.random.normal(k[0], (12, 5)))
    y = np.sign(X @ np.array([1.0, -2.0, 0.5, 1.0, 0.3]))
    W1 = jax.random.normal(k[1], (4, 5)) / 2
    W2 = jax.random.normal(k[2], (3, 4)) / 2
    net = models.DeepLinearNet([W1, W2, jnp.zeros((1, 3))])
    logistic = flows.LogisticLoss("mean")

    def loss(m):
        return logistic(X @ m.end_to_end()[0], y)

    observables = {
        "normalised_margin": flows.observables.normalised_margin(X, y),
        "max_margin_angle": flows.observables.max_margin_angle(
            flows.observables.max_margin(X, y).direction
        ),
    }
    return loss, net, observables


@pytest.mark.parametrize("method", ["gradient_flow", "gradient_descent"])
def test_undefined_observable_is_reported_by_name_and_time_not_as_a_flow_failure(method):
    loss, net, observables = _setup()
    ts = np.array([0.0, 0.5, 1.0])
    with pytest.warns(flows.UndefinedObservableWarning) as record:
        if method == "gradient_flow":
            traj = flows.gradient_flow(loss, net, 1.0, ts=ts, observables=observables)
        else:
            traj = flows.gradient_descent(loss, net, 1.0, eta=0.01, ts=ts, observables=observables)
    messages = " ".join(str(w.message) for w in record)
    for name in observables:
        assert f"observable {name!r} is undefined" in messages and "first at t=0" in messages
        np.testing.assert_array_equal(traj.undefined[name], [0.0])
        assert np.all(np.isfinite(traj.observables[name][1:]))
    assert np.all(np.isfinite(traj.loss)) and traj.loss[-1] < traj.loss[0]
