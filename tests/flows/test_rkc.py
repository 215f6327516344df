"""rkc (Runge–Kutta–Chebyshev, order 2, `flows._solver._rkc`) on y' = −Ay, A symmetric
positive definite with eigenvalues 1 … 10³: second order, the exact solution at a stated
tolerance, stable with many stages where Tsit5 at the same step blows up, and its power
iteration finds ρ = λ_max(A)."""

import diffrax as dfx
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import expm

from flows._solver._rkc import RKC, _power_rho, stability_bound, stages
from flows.transport import particle_flow


def _system(top=1e3, n=12, seed=0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    A = (Q * np.geomspace(1.0, top, n)) @ Q.T
    return A, rng.normal(size=n)


def _linear(t, y, A):
    return -A @ y


def _rho(t, y, A):
    return jnp.linalg.norm(A, 2)  # the exact spectral radius of −A


def _solve(A, y0, t1, solver, dt0=None, **kw):
    return _jit_solve(jnp.asarray(A), jnp.asarray(y0), t1, solver, dt0, **kw)


@eqx.filter_jit
def _jit_solve(A, y0, t1, solver, dt0, **kw):
    term = dfx.ODETerm(_linear)
    return dfx.diffeqsolve(term, solver, 0.0, t1, dt0, y0, args=A, max_steps=4096, **kw)


def test_rkc_is_second_order():
    # eigenvalues 1 … 20 over t ∈ [0, 1], constant steps of 1/40 … 1/320 (s = 2)
    A, y0 = _system(top=20.0)
    exact = expm(-A) @ y0
    fixed = dict(stepsize_controller=dfx.ConstantStepSize())
    errors = [
        np.linalg.norm(
            _solve(A, y0, 1.0, RKC(rho=_rho), jnp.asarray(1.0 / n), **fixed).ys[-1] - exact
        )
        for n in (40, 80, 160, 320)
    ]
    slopes = np.log2(np.asarray(errors[:-1]) / errors[1:])
    # measured slopes 2.045, 2.022, 2.011
    np.testing.assert_allclose(slopes, 2.0, atol=0.1)


def test_rkc_solves_a_stiff_linear_system_with_many_stages_where_tsit5_blows_up():
    A, y0 = _system()
    # adaptive to t = 5 at rtol = atol = 1e-6: 351 steps, up to 16 stages, 1,439 evaluations,
    # error 3.4e-6·‖y0‖ (measured); Tsit5 takes 1,823 steps (10,938 evaluations)
    pid = dfx.PIDController(rtol=1e-6, atol=1e-6)
    sol = _solve(A, y0, 5.0, RKC(rho=_rho), stepsize_controller=pid, saveat=dfx.SaveAt(steps=True))
    n = int(sol.stats["num_accepted_steps"])
    s = [int(stages(h, 1e3, 200)[0]) for h in np.diff(np.concatenate([[0.0], sol.ts[:n]]))]
    assert max(s) > 10  # the stages follow hρ
    error = np.linalg.norm(np.asarray(sol.ys)[n - 1] - expm(-A * 5.0) @ y0)
    assert error < 3.4e-5 * np.linalg.norm(y0)
    # a constant step h = 0.05 (hρ = 50): RKC takes s = 9 stages (β(9) = 52.3 ≥ 50) and
    # stays bounded (‖y‖ ≤ ‖y0‖; error measured 0.089‖y0‖, the stiff modes damped slowly);
    # Tsit5 (stable to hρ ≈ 3.5) grows to 1.7e72
    assert int(stages(0.05, 1e3, 200)[0]) == 9 and stability_bound(9) > 50
    fixed = dict(dt0=jnp.asarray(0.05), stepsize_controller=dfx.ConstantStepSize())
    rkc = _solve(A, y0, 0.5, RKC(rho=_rho), **fixed).ys[-1]
    assert np.linalg.norm(rkc) <= np.linalg.norm(y0)
    assert np.linalg.norm(rkc - expm(-A * 0.5) @ y0) < 0.2 * np.linalg.norm(y0)
    tsit5 = _solve(A, y0, 0.5, dfx.Tsit5(), **fixed).ys[-1]
    assert not np.linalg.norm(tsit5) < 1e10


def test_rkc_power_iteration_finds_the_spectral_radius():
    A, y0 = _system()
    f = lambda t, y: -jnp.asarray(A) @ y  # noqa: E731
    f0 = f(0.0, jnp.asarray(y0))
    rho, _ = _power_rho(f, 0.0, jnp.asarray(y0), f0, f0)
    # measured 998.1 against λ_max = 1e3 (the iteration stops at a 1 % change)
    assert abs(float(rho) / 1e3 - 1) < 0.02
    # an adaptive solve by it (ρ × 1.2) as accurate as by the exact ρ: 259 steps, error
    # 9.19e-6·‖y0‖ against 9.19e-6 (measured)
    pid = dfx.PIDController(rtol=1e-6, atol=1e-6)
    sol = _solve(A, y0, 0.5, RKC(), stepsize_controller=pid)
    assert np.linalg.norm(sol.ys[-1] - expm(-A * 0.5) @ y0) < 9.2e-5 * np.linalg.norm(y0)


def test_rkc_refuses_bad_options_and_flows_it_cannot_solve_name_the_argument():
    for kw, name in (({"max_stages": 1}, "max_stages"), ({"rho_every": 0}, "rho_every"),
                     ({"damping": 1.5}, "damping"), ({"rho": 3.0}, "rho")):  # fmt: skip
        with pytest.raises(ValueError, match=f"^{name} must be"):
            RKC(**kw)
    # a flow whose solver must be a classical explicit Runge–Kutta method says which
    with pytest.raises(ValueError, match="solver must be one of .*got 'rkc'"):
        particle_flow(np.zeros((3, 2)), np.ones((3, 2)), 1.0, eps=0.1, solver="rkc")


def test_the_max_steps_advice_for_rkc_says_stiffness_costs_it_stages():
    from flows._failures import max_steps_advice
    from flows._settings import SolveSettings
    from flows._stats import SolveStats

    stats = SolveStats()
    stats.num_steps, stats.num_rejected_steps = 500, 10
    advice = max_steps_advice("rkc", SolveSettings(solver="rkc", rtol=1e-8), stats)
    assert "solver='rkc' is stabilized, so stiffness costs it stages" in advice
    assert "is explicit, so its steps are limited by stability" not in advice


def test_gradient_flow_by_rkc_on_a_stiff_quadratic_matches_the_closed_form():
    import flows

    A, y0 = _system()
    loss = lambda w: 0.5 * w @ (jnp.asarray(A) @ w)  # noqa: E731  (w' = −Aw)
    traj = flows.gradient_flow(loss, jnp.asarray(y0), 2.0, ts=[0.0, 2.0], rtol=1e-6,
                               atol=1e-8, solver="rkc")  # fmt: skip
    exact = expm(-2.0 * A) @ y0
    # measured error 8.9e-7·‖y0‖, 736 steps, 2,113 evaluations counted (Tsit5: 740 steps,
    # 4,442 evaluations)
    assert np.linalg.norm(np.asarray(traj.params)[-1] - exact) < 8.9e-6 * np.linalg.norm(y0)
    assert traj.stats["grad_evals"] > traj.stats["num_steps"] >= 1
