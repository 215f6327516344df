"""What the central flow reports besides its own quantities: any observable along it, and the
predicted time average g(w) + ½⟨∇²g(w), Σ⟩ of any g, which for g = L is the flow's own
predicted loss L + tr Σ/η while the tracked eigenvalue is at 2/η."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
from tests.flows.large_steps.nets import tanh_regression

LOSS, NET = tanh_regression(4, 12, 2, 40)
X_OUT = jnp.asarray(np.random.default_rng(3).standard_normal((5, 4)))  # held-out inputs


def outputs(net):
    return jax.vmap(net)(X_OUT)


def norm2(net):
    return sum(jnp.sum(a**2) for a in jax.tree.leaves(net.weights))


@pytest.mark.slow  # one central flow through its edge: its compilation dominates
def test_predicted_loss_by_the_generic_rule_equals_the_flows_own_and_observables_are_recorded():
    S0 = float(flows.sharpness(LOSS, NET)[0])
    eta = 2 / (1.6 * S0)  # the edge at t = 21.6 (test_central)
    ts = np.linspace(0, 26.0, 14)
    traj = flows.central_flow(LOSS, NET, 26.0, eta=eta, ts=ts, rtol=1e-8, atol=1e-10,
                              observables={"norm2": norm2},
                              predicted={"L": LOSS, "outputs": outputs})  # fmt: skip
    obs = traj.observables
    after = traj.ts > traj.stats["events"][0][0]
    assert after.any() and (~after).any()
    # g = L: L + ½σ²u'Hu = L + σ²/η with u'Hu = 2/η (held to 1e-8): the flow's own number
    rel = np.abs(obs["predicted_L"] / obs["predicted_loss"] - 1)
    print(f"max |predicted_L / predicted_loss − 1| = {rel.max():.2e}")
    assert rel.max() < 1e-7 and np.all(obs["predicted_L"][after] > traj.loss[after])
    # below the edge Σ = 0: the prediction is g itself
    for i in np.flatnonzero(~after):
        net = traj.at(i)
        np.testing.assert_allclose(obs["predicted_outputs"][i], outputs(net), rtol=1e-12)
        assert obs["norm2"][i] == pytest.approx(float(norm2(net)), rel=1e-12)
    assert obs["predicted_outputs"].shape == (len(traj.ts), 5)


def test_a_name_the_flow_records_itself_is_refused():
    with pytest.raises(ValueError, match="'predicted_loss' is recorded twice"):
        flows.central_flow(LOSS, NET, 1.0, eta=0.1, predicted={"loss": LOSS})
    with pytest.raises(ValueError, match="'sharpness' is recorded twice"):
        flows.central_flow(LOSS, NET, 1.0, eta=0.1, observables={"sharpness": norm2})
