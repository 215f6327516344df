"""The Filippov flow against a one-ulp change of its inputs (issue #24, part 4).

The balance experiment's abs-activation net (width 8, 10 digits on 3 principal components,
mean squared loss, rtol 1e-8) to t = 10⁴ takes 19,252 steps and 798 events on the machine
this was measured on (19,255 and 813 while events were located by bisection; one ulp more in
a single output weight then gave 19,181 and 757): the counts follow the last bits of the
inputs, so last-bit differences of BLAS or XLA between machines move them too, and no count
is claimed reproducible across machines. What must hold on every machine is that the flow
finishes."""

import jax
import numpy as np
import pytest

import flows
import models
from experiments import digits_pair


def _digits_pca(n=10, d=3):
    X, y = digits_pair((3, 8), n_train=200, n_test=0, seed=0)[:2]
    Xc = X[:n] - X[:n].mean(0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    Z = Xc @ vt[:d].T
    return Z / Z.std(0), y[:n]


@pytest.mark.slow
# One ulp more in X[0, 0] made surfaces (3, 2) and (6, 1) of two neurons enter and leave
# sliding 500 times within 1.5e-7 of flow time at t = 1484 while events were located by
# bisection (MaxStepsReached); with Anderson–Björck regula falsi (flows/nonsmooth/_event_root.py)
# this input finishes. The one-surface-at-a-time re-entry rule is unchanged, so the test keeps
# this input as a regression check.
def test_the_abs_flow_finishes_with_one_ulp_changed_in_the_data():
    X, y = _digits_pca()
    X[0, 0] = np.nextafter(X[0, 0], np.inf)
    net = models.TwoLayerNet(3, 8, activation="abs", key=jax.random.PRNGKey(0))
    traj = flows.nonsmooth.filippov_flow(
        net, (X, y), 1e4, loss=flows.SquaredLoss("mean"), ts=np.linspace(0.0, 1e4, 41),
        rtol=1e-8, atol=1e-10, max_steps=100_000, save_params=False,
    )  # fmt: skip
    assert traj.ts[-1] == 1e4
