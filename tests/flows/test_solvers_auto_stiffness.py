"""The long squared-loss flow of a deep linear network is stiff near its minimum:
`solver="auto"` detects it along the path (h·λ̂ at Tsit5's stability boundary, a trial
exprb32 step accepted) and finishes with exprb32 within a stated budget."""

import jax
import jax.numpy as jnp
import numpy as np

import flows
import models

T1 = 1e4
RTOL = 1e-8
# Tsit5 alone needs 74,938 steps to t = 10⁴ and exprb32 alone 992; "auto" measured 347 (Tsit5
# to t = 36.9, then exprb32), the stated budget is 700.
STEP_BUDGET = 700


def test_squared_loss_flow_switches_to_the_stiff_solver_and_reaches_least_squares():
    X = jax.random.normal(jax.random.PRNGKey(0), (20, 5))
    noise = 0.3 * jax.random.normal(jax.random.PRNGKey(5), (20,))
    y = X @ jnp.array([1.0, -2.0, 0.5, 1.0, 0.3]) + noise
    squared = flows.SquaredLoss("mean")

    def loss(net):
        return squared(jax.vmap(net)(X)[:, 0], y)

    net0 = models.DeepLinearNet.gaussian([5, 4, 3, 1], scale=1.0, key=jax.random.PRNGKey(1))
    traj = flows.gradient_flow(
        loss,
        net0,
        T1,
        ts=flows.log_times(T1, 40),
        solver="auto",
        rtol=RTOL,
        atol=1e-2 * RTOL,
        max_steps=STEP_BUDGET,
        save_params=False,
        observables={
            "drift": flows.observables.balancedness_drift(net0),
            "beta": flows.observables.end_to_end,
        },
    )
    stats = traj.stats
    print(
        f"squared loss to t=1e4: {stats['num_steps']} steps, {stats['grad_evals']} evals, "
        f"solvers {stats['solvers']}, max drift {traj.observables['drift'].max():.2e}"
    )
    assert stats["solvers"][-1] == "exprb32"
    assert stats["num_steps"] <= STEP_BUDGET
    # The end-to-end vector reaches the least-squares solution (closed form).
    beta_ls = np.linalg.lstsq(np.asarray(X), np.asarray(y), rcond=None)[0]
    np.testing.assert_allclose(traj.observables["beta"][-1, 0], beta_ls, rtol=0, atol=1e-6)
    assert traj.loss[-1] - float(squared(X @ beta_ls, y)) <= 1e-12
    # Balancedness holds through the switch to the solver's tolerance scale.
    assert traj.observables["drift"].max() <= 100 * RTOL
