"""A failed solve says what happened, with the time reached: a step size that collapsed
(with the norms), a state that really grows, or a non-finite one. The step-size floor is
relative to the time reached. Budgets bound the work; advice fits the solver in use."""

import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models


def stiff_quadratic(w):
    return 0.5 * (w[0] ** 2 + 1e-3 * w[1] ** 2)


def test_a_chunk_spanning_fourteen_decades_is_not_a_blow_up():
    # The floor was 1e-13·t_end = 10 for ts = [0, 1e14], so the first steps (≈ 0.01) were
    # declared a collapse at t = 0.01. Relative to the time reached, it solves: 397 steps
    # measured. Exact solution: w(t) = (e^{−t}, e^{−1e-3·t}) = (0, 0) to far below atol.
    traj = flows.gradient_flow(
        stiff_quadratic, jnp.ones(2), 1e14, ts=[0.0, 1e14], solver="kvaerno5"
    )
    # Measured |w(1e14)| ≤ 7.8e-14, below atol = 1e-12 (the controller's absolute scale).
    assert np.abs(traj.params[-1]).max() <= 1e-11
    assert traj.stats["solvers"] == ["kvaerno5"]


def test_default_save_times_to_1e300_end_in_an_honest_message():
    # Far past the slowest time scale (1e3) the state is at rest to round-off; the steps
    # needed at t ≈ 1e168 (≥ 1e-13·t) overflow float64's Newton–GMRES, so the solve stops.
    # It must say so, with the time, and not call it a blow-up (it did at t = 7.3e9).
    with pytest.raises(FloatingPointError) as info:
        # dense_max=0: Newton–GMRES. With the dense LU (the default at p = 2) the solve
        # reaches t = 1e300 (measured), so the message is tested on the GMRES path.
        flows.gradient_flow(stiff_quadratic, jnp.ones(2), 1e300, solver=flows.Kvaerno5(dense_max=0))
    message = str(info.value)
    assert "blowing up" not in message and "come to rest" in message
    t = float(message.split(" at t=")[1].split(" ")[0])
    assert t > 1e100  # measured 1.03e168
    assert info.value.stats["num_steps"] > 0


def test_a_chattering_kink_is_reported_with_its_time_and_the_kink_advice():
    # F(w) = |w|: w' = −sign(w) reaches the kink at t = 1 and chatters there with accepted
    # steps of ~atol, so the budget runs out at t = 1.
    with pytest.raises(flows.MaxStepsReached) as info:
        flows.gradient_flow(
            lambda w: jnp.sum(jnp.abs(w)), jnp.ones(1), 2.0, solver="tsit5", max_steps=2000
        )
    message = str(info.value)
    assert abs(info.value.t - 1.0) <= 1e-5  # measured |t − 1| = 1.5e-7
    assert f"at t={info.value.t:.6g} " in message and "kinks (ReLU)" in message


def test_max_steps_reached_carries_the_time_reached_as_t():
    # gradient_flow: w' = −w from 1 to t = 100 with 5 steps (and so in one chunk).
    with pytest.raises(flows.MaxStepsReached) as flow:
        flows.gradient_flow(lambda w: 0.5 * jnp.sum(w**2), jnp.ones(2), 100.0, solver="tsit5",
                            max_steps=5, chunks=1)  # fmt: skip
    e = flow.value
    assert type(e.t) is float and 0 < e.t < 100 and f"reached at t={e.t:.6g} " in str(e)
    assert e.stats["num_steps"] == 5
    # Pickled (a sweep worker's error) with its time and work.
    again = pickle.loads(pickle.dumps(e))
    assert (again.t, again.stats, str(again)) == (e.t, e.stats, str(e))
    # gradient_descent refuses an over-budget run before any work: t = 0.
    with pytest.raises(flows.MaxStepsReached) as gd:
        flows.gradient_descent(stiff_quadratic, jnp.ones(2), 1.0, eta=0.1, max_steps=5)
    assert gd.value.t == 0.0


def test_relu_net_at_a_kink_is_a_collapsed_step_with_bounded_norms(digits_3_10_pca3):
    # The case: two-layer ReLU net, width 8, 10 digits on 3 principal components,
    # t1 = 50, the implicit solver that "auto" used to hand over to after 200 Tsit5 steps
    # (its stiffness tests along the path keep Tsit5 here, which chatters until max_steps
    # with 80% of its steps rejected and says so). The step size collapses at a kink while
    # ‖θ‖ stays near its initial norm (measured 4.19 → 3.97 at t = 0.194); it was reported
    # as "blowing up".
    X, y = digits_3_10_pca3
    net = models.TwoLayerNet(3, 8, activation="relu", key=jax.random.PRNGKey(0))

    def loss(m):
        return 0.5 * jnp.sum((jax.vmap(m)(X) - y) ** 2)

    with pytest.raises(FloatingPointError) as info:
        flows.gradient_flow(loss, net, 50.0, solver="kvaerno5")
    message = str(info.value)
    assert "step size collapsed" in message and "not a blow-up" in message
    assert "blowing up" not in message


def test_a_real_blow_up_says_the_norm_grew():
    # x' = exp(x) from x0 = 0 blows up at t = 1 (x = −log(1 − t)).
    with pytest.raises(FloatingPointError, match=r"blowing up: .* at t=(0\.99|1\b)") as info:
        flows.gradient_flow(lambda x: -jnp.sum(jnp.exp(x)), jnp.zeros(1), 2.0, solver="tsit5")
    assert "‖y‖ = 0 at t=0" in str(info.value)


def _many_modes(w):
    # 100 distinct curvatures from 1e-2 to 1e4: GMRES needs ~100 iterations on (I + hγH)
    # once hλ_max ≫ 1.
    lam = jnp.logspace(-2, 4, w.size)
    return 0.5 * jnp.sum(lam * w**2)


def test_gmres_cap_and_max_steps_bound_the_work_and_exhaustion_is_clear():
    # 10 Hessian-vector products per GMRES solve cannot solve the 100-mode system: every
    # step is rejected, and the error says so. Work: at most max_steps × 6 implicit stages ×
    # 10 Newton iterations × (1 restart cycle of 10 products + 1).
    max_steps, cap = 5, 10
    with pytest.raises((flows.MaxStepsReached, FloatingPointError)) as info:
        flows.gradient_flow(
            _many_modes,
            jnp.ones(100),
            100.0,
            # dense_max=0: Newton–GMRES (the default), whatever the default becomes
            solver=flows.Kvaerno5(gmres_max_iters=cap, dense_max=0),
            max_steps=max_steps,
            chunks=1,
        )
    assert "gmres_max_iters=10" in str(info.value)
    stats = info.value.stats
    assert stats["num_steps"] <= max_steps
    assert stats["jvp_evals"] <= max_steps * 6 * 10 * (cap + 1)


def test_max_steps_advice_never_points_at_the_solver_in_use():
    with pytest.raises(flows.MaxStepsReached) as info:
        flows.gradient_flow(
            stiff_quadratic, jnp.ones(2), 1e6, solver="kvaerno5", max_steps=3, chunks=1
        )
    assert "use solver='kvaerno5'" not in str(info.value)
    assert "solver='kvaerno5' is implicit already" in str(info.value)
    # An explicit solver on a stiff flow, few rejections: advise the implicit one.
    with pytest.raises(flows.MaxStepsReached) as info:
        flows.gradient_flow(
            lambda w: 0.5 * 1e4 * jnp.sum(w**2),
            jnp.ones(2),
            10.0,
            solver="tsit5",
            max_steps=50,
            chunks=1,
        )
    assert "use solver='auto', 'exprb32' or 'kvaerno5'" in str(info.value)


def test_a_finite_time_blow_up_caught_before_the_norm_grows_is_called_one():
    # θ' = 2θ·exp(θ²) from θ = 1 blows up at t ≈ 0.055: the step size collapsed at ‖θ‖ = 4.9
    # (under 10× its start) with ‖dθ/dt‖ = 1.1e11, and the message said "the state stayed
    # bounded, so this is not a blow-up".
    with pytest.raises(FloatingPointError, match=r"^the trajectory is blowing up: .* t=0\.05") as e:
        flows.gradient_flow(lambda w: -jnp.sum(jnp.exp(w**2)), jnp.ones(1), 1.0, solver="tsit5")
    assert "not a blow-up" not in str(e.value) and "finite-time blow-up" in str(e.value)
