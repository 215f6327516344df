"""Gauss–Legendre solvers (implicit_midpoint, gauss4, gauss6): quadratic invariants to
round-off at any rtol, their orders, and Newton failures as errors (Hairer, Lubich & Wanner,
GNI §IV.2)."""

import diffrax as dfx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

import flows
import models
from flows import GaussLegendre, gauss_legendre_tableau
from tests import problems

# ---------------------------------------------------------------- tableaux and orders


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_gauss_tableau_satisfies_the_quadratic_invariant_condition(stages):
    c, A, b = gauss_legendre_tableau(stages)
    # b_i a_ij + b_j a_ji = b_i b_j (Cooper 1987): measured ≤ 1.2e-16.
    M = b[:, None] * A + (b[:, None] * A).T - np.outer(b, b)
    assert np.abs(M).max() < 1e-14
    # Quadrature of order 2s and row sums c (collocation): measured ≤ 2e-16.
    k = np.arange(1, 2 * stages + 1)
    assert np.abs((b[None, :] * c[None, :] ** (k[:, None] - 1)).sum(1) - 1 / k).max() < 1e-14
    assert np.abs(A.sum(1) - c).max() < 1e-14


@pytest.mark.parametrize("stages", [10, 20, 30])
def test_gauss_tableau_of_many_stages_is_exact_to_round_off(stages):
    # The monomial Vandermonde solve gave A off by 7.6e-12 (s = 10), 2e-4 (s = 20) and
    # entries of 1e2 at s = 30. Checked in the Legendre basis, well conditioned at any s:
    # Σ_j a_ij P_k(u_j) = ∫_{−1}^{u_i} P_k / 2 = (P_{k+1}(u_i) − P_{k−1}(u_i))/(2(2k+1)),
    # u = 2c − 1, for 1 ≤ k < s. Measured ≤ 2.0e-15; asserted to 1e-13.
    c, A, b = gauss_legendre_tableau(stages)
    u = 2 * c - 1
    P = np.polynomial.legendre.legvander(u, stages).T  # P[k, i] = P_k(u_i)
    k = np.arange(1, stages)[:, None]
    exact = (P[2:] - P[:-2]) / (2 * (2 * k + 1))  # rows k = 1 … s−1
    assert np.abs(A @ P[1:stages].T - exact.T).max() < 1e-13
    assert np.abs(A.sum(1) - c).max() < 1e-13  # k = 0: row sums c
    assert np.abs(A).max() < 1  # measured 0.056 at s = 30 (the Vandermonde solve: 104)


# The gradient flow of ½ yᵀSy (S symmetric positive definite): y(T) = e^{−TS} y0.
_rng = np.random.default_rng(0)
_Q = np.linalg.qr(_rng.normal(size=(6, 6)))[0]
S = _Q @ np.diag([0.1, 0.3, 0.5, 1.0, 1.5, 2.0]) @ _Q.T
Y0 = _rng.normal(size=6)
T = 2.0
STEPS = np.array([8, 16, 32, 64])


@pytest.mark.parametrize(
    "name, order, margin",
    # Measured fitted slopes: 1.9993 (midpoint), 4.006 (gauss4), 6.0 (gauss6 on 4…16 steps).
    [("implicit_midpoint", 2, 0.2), ("gauss4", 4, 0.3), ("gauss6", 6, 0.5)],
)
def test_fixed_step_error_falls_with_the_order_of_the_method(name, order, margin):
    exact = scipy.linalg.expm(-T * S) @ Y0
    term = dfx.ODETerm(lambda t, y, args: -jnp.asarray(S) @ y)
    solver = flows.make_solver(name, 1e-8, 1e-10)
    steps = STEPS // 4 if order == 6 else STEPS  # keep gauss6 above round-off
    errors = []
    for n in steps:
        # dt0 as an array: one compilation for every step count.
        sol = dfx.diffeqsolve(
            term,
            solver,
            0.0,
            T,
            jnp.asarray(T / n),
            jnp.asarray(Y0),
            stepsize_controller=dfx.ConstantStepSize(),
            max_steps=64,
        )
        errors.append(float(np.abs(np.asarray(sol.ys[-1]) - exact).max()))
    slope = -np.polyfit(np.log(steps), np.log(errors), 1)[0]
    assert abs(slope - order) < margin, (slope, errors)


# ---------------------------------------------------------------- conservation


@pytest.mark.slow
def test_gauss4_keeps_balancedness_to_round_off_at_loose_rtol_where_tsit5_drifts():
    loss, net0, _, _ = problems.separable_deep_linear(20, scale=1.0)
    drift = {"drift": flows.observables.balancedness_drift(net0, relative=True)}
    out = {}
    for solver in ("gauss4", "tsit5"):
        out[solver] = flows.gradient_flow(
            loss,
            net0,
            1e6,
            ts=flows.log_times(1e6, 40),
            solver=solver,
            rtol=1e-3,
            atol=1e-5,
            observables=drift,
            save_params=False,
            max_steps=2_000,  # measured: 76 steps (gauss4), 37 (tsit5)
        )
    # Measured max relative drift of every C_k to t = 1e6: 5.2e-16 (gauss4), 1.6e-4 (tsit5).
    # Each accepted step changes C_k by O(round-off + Newton residual ≤ 1e-13 relative), so
    # the drift grows at most like the number of steps (~10²), not with t.
    assert out["gauss4"].observables["drift"].max() < 1e-12
    assert out["tsit5"].observables["drift"].max() > 1e-6
    assert out["gauss4"].stats["newton_residual"] <= 1e-13  # measured 1.1e-15
    assert out["gauss4"].stats["jvp_evals"] > 0 and out["gauss4"].stats["grad_evals"] > 0
    # Same flow: final losses agree to the tolerance (measured 1.74e-8 and 1.70e-8).
    np.testing.assert_allclose(out["gauss4"].loss[-1], out["tsit5"].loss[-1], rtol=0.1)


@pytest.mark.slow
def test_gauss4_keeps_the_per_neuron_invariant_of_a_homogeneous_net_only():
    """‖b_j‖² − a_j² is conserved for σ = |·| (positively homogeneous, Du, Hu & Lee 2018,
    Thm 2.1) and not for tanh: the solver conserves true invariants, it does not freeze
    quadratic quantities."""
    X = jax.random.normal(jax.random.PRNGKey(0), (10, 3))
    y = jnp.sin(X @ jnp.array([1.0, -2.0, 0.5]))
    squared = flows.SquaredLoss("mean")
    nets0 = {
        a: models.TwoLayerNet(3, 6, activation=a, key=jax.random.PRNGKey(1))
        for a in ("abs", "tanh")
    }

    def loss(nets):
        return sum(squared(jax.vmap(net)(X), y) for net in nets.values())

    traj = flows.gradient_flow(
        loss,
        nets0,
        1.0,
        ts=np.linspace(0.0, 1.0, 5),
        solver="gauss4",
        rtol=1e-3,
        atol=1e-5,
        observables={
            "neuron": lambda nets: {
                k: flows.observables.neuron_balancedness(n) for k, n in nets.items()
            }
        },
        save_params=False,
    )
    neuron = traj.observables["neuron"]
    change = {k: np.abs(v - v[0]).max() / np.abs(v[0]).max() for k, v in neuron.items()}
    # Measured on 8 neurons to t = 2 (this 6-neuron, t = 1 run also passed; not printed):
    # 1.6e-15 relative for abs, 0.12 for tanh.
    assert change["abs"] < 1e-12
    assert change["tanh"] > 1e-3


# ---------------------------------------------------------------- failures


def _blows_up(theta):
    # dθ/dt = θ for θ < 2, reached at t = ln 2; beyond, the objective (and its gradient) is NaN.
    x = theta[0]
    return jnp.where(x < 2.0, -0.5 * x**2, jnp.sqrt(2.0 - x))


@pytest.mark.slow
def test_a_non_finite_newton_residual_is_an_error_naming_the_time_and_residual():
    with pytest.raises(FloatingPointError, match=r"did not converge at t=0\.69.*residual nan"):
        flows.gradient_flow(
            _blows_up, jnp.array([1.0]), 1.0, solver="gauss4", save_params=False, max_steps=2_000
        )


def _quartic_solve(solver, controller):
    # y' = −y³ (the gradient flow of Σy⁴/4), y(t) = y0/√(1 + 2y0²t).
    term = dfx.ODETerm(lambda t, y, args: -(y**3))
    return dfx.diffeqsolve(
        term,
        solver,
        0.0,
        1.0,
        0.5,
        jnp.array([1.0, -2.0]),
        stepsize_controller=controller,
        saveat=dfx.SaveAt(t1=True, solver_state=True),
        throw=False,
    )


def test_a_newton_iteration_out_of_budget_is_a_rejected_step_never_an_accepted_one():
    # One chord iteration cannot reach 1e-13 at the first steps: they are rejected and shrunk.
    sol = _quartic_solve(
        GaussLegendre(stages=2, root_find_max_steps=1), dfx.PIDController(rtol=1e-8, atol=1e-10)
    )
    assert sol.result == dfx.RESULTS.successful
    # Measured: 711 rejected, 708 accepted (4 and 143 with the default budget of 10).
    assert int(sol.stats["num_rejected_steps"]) > 100
    # Every accepted step met the Newton tolerance (largest relative residual: 4.0e-14).
    assert float(sol.solver_state[1]) <= 1e-13
    exact = np.array([1.0, -2.0]) / np.sqrt(1 + 2 * np.array([1.0, 4.0]))
    # Measured error 7.5e-14.
    assert np.abs(np.asarray(sol.ys[-1]) - exact).max() < 1e-6


def test_a_fixed_step_newton_failure_stops_the_solve():
    # Under a constant step size a failed Newton iteration cannot be rejected: the solve stops.
    sol = _quartic_solve(GaussLegendre(stages=1, root_find_max_steps=1), dfx.ConstantStepSize())
    assert sol.result == dfx.RESULTS.nonlinear_divergence
