"""The preconditioned sharpness λ_max(P⁻¹H) against closed forms on quadratics: it is the top
eigenvalue of the pencil (H, P), and Adam with momentum β1 (no bias correction, ν frozen) is
stable iff η·λ_max(P⁻¹H) < (2 + 2β1)/(1 − β1), 38 at β1 = 0.9 (Cohen et al. 2022)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import flows
from flows.large_steps import adaptive_preconditioner, optimize, preconditioned_sharpness

_rng = np.random.default_rng(7)
_Q, _ = np.linalg.qr(_rng.standard_normal((5, 5)))
H = jnp.asarray(_Q @ np.diag([3.0, 1.5, 0.7, 0.2, 0.05]) @ _Q.T)  # generic, not diagonal
P = jnp.asarray(_rng.uniform(0.3, 2.0, 5))  # a frozen diagonal preconditioner √ν + ε
LAMBDA_P = float(np.max(np.real(np.linalg.eigvals(np.diag(1 / np.asarray(P)) @ np.asarray(H)))))
W0 = jnp.asarray(_rng.standard_normal(5))


def quadratic(w):
    return 0.5 * w @ H @ w


def test_preconditioned_sharpness_is_the_top_eigenvalue_of_p_inverse_h():
    values = preconditioned_sharpness(quadratic, W0, P, k=2)
    ev = np.sort(np.real(np.linalg.eigvals(np.diag(1 / np.asarray(P)) @ np.asarray(H))))[::-1]
    print(f"λ(P⁻¹H) = {np.asarray(values)}, numpy {ev[:2]}")
    np.testing.assert_allclose(values, ev[:2], rtol=1e-10)
    # P = 1 is the sharpness
    np.testing.assert_allclose(preconditioned_sharpness(quadratic, W0, jnp.ones(5)), 3.0, 1e-12)


def _adam_frozen(eta, beta1):
    """Adam's update with bias correction off and ν frozen: θ ← θ − η·EMA_β1(g)/P."""
    return optax.chain(
        optax.ema(beta1, debias=False),
        optax.stateless(lambda g, p: jax.tree.map(lambda a, q: a / q, g, P)),
        optax.scale(-eta),
    )


@pytest.mark.filterwarnings("ignore::flows.DivergenceWarning")
@pytest.mark.parametrize("beta1", [0.9, 0.5])
@pytest.mark.parametrize("side", [0.97, 1.03])
def test_adam_is_stable_iff_eta_lambda_p_below_2_plus_2_beta1_over_1_minus_beta1(beta1, side):
    limit = (2 + 2 * beta1) / (1 - beta1)  # 38 at β1 = 0.9
    eta = side * limit / LAMBDA_P
    K = 300
    traj = optimize(quadratic, W0, K * eta, optimizer=_adam_frozen(eta, beta1), eta=eta,
                    ts=eta * np.arange(K + 1.0), save_params=False)  # fmt: skip
    # each mode of P⁻¹H: x_{k+1} = (1 + β1 − (1 − β1)a)x_k − β1x_{k−1}, a = ηλ; the loss
    # falls or grows at the largest root over the modes, squared
    a = eta * np.real(np.linalg.eigvals(np.diag(1 / np.asarray(P)) @ np.asarray(H)))
    rho = max(max(abs(np.roots([1.0, -(1 + beta1 - (1 - beta1) * x), beta1]))) for x in a)
    top = max(abs(np.roots([1.0, -(1 + beta1 - (1 - beta1) * a.max()), beta1])))
    assert (top < 1) == (side < 1)  # the top mode alone decides stability
    # envelopes over 50 steps, 100 steps apart (complex roots make the loss oscillate)
    measured = (traj.loss[-50:].max() / traj.loss[-200:-150].max()) ** (1 / 300)
    a = a.max()
    print(f"β1={beta1} ηλ_P={a:.3f} (limit {limit:.0f}): ρ={rho:.5f}, measured {measured:.5f}")
    assert (rho < 1) == (side < 1) and (traj.loss[-1] < traj.loss[0]) == (side < 1)
    assert measured == pytest.approx(rho, abs=1e-2)  # measured within 1e-3


def test_adaptive_preconditioner_reads_adam_and_rmsprop_states():
    g = jnp.array([0.5, -2.0, 1e-3])
    params = jnp.zeros(3)
    for make, beta2, nu_hat in [
        (lambda: flows.large_steps.adam(0.1, 0.9, 0.99, 1e-3), 0.99, g**2),  # ν̂ = g² at t=1
        (lambda: flows.large_steps.rmsprop(0.1, 0.99, 1e-3), None, 0.01 * g**2),
        (lambda: flows.large_steps.adam(0.1, 0.9, 0.99, 1e-3, bias_correction=False), None,
         0.01 * g**2),
    ]:  # fmt: skip
        opt = make()
        _, state = opt.update(g, opt.init(params), params)
        P_read = adaptive_preconditioner(state, eps=1e-3, beta2=beta2)
        np.testing.assert_allclose(P_read, np.sqrt(nu_hat) + 1e-3, rtol=1e-13)
    root = adaptive_preconditioner(state, eps=1e-3, eps_in_sqrt=True)
    np.testing.assert_allclose(root, np.sqrt(0.01 * g**2 + 1e-3), rtol=1e-13)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda s: adaptive_preconditioner(s, eps=-1.0), "eps must be >= 0"),
        (lambda s: adaptive_preconditioner(s, eps=1e-8, beta2=1.0), r"beta2 must lie in \[0, 1\)"),
        (lambda s: adaptive_preconditioner(optax.sgd(0.1).init(W0), eps=0.0), "opt_state holds"),
        (lambda s: preconditioned_sharpness(quadratic, W0, -P), "preconditioner must be finite"),
        (lambda s: preconditioned_sharpness(quadratic, W0, P[:3]), "preconditioner must have"),
        # the message printed the two (equal) tree structures only, not the shapes that differ
        (lambda s: preconditioned_sharpness(quadratic, W0, P[:3]), r"shapes \[\(3,\)\], for"),
    ],
)
def test_bad_preconditioner_input_is_refused_naming_it(call, message):
    state = flows.large_steps.adam(0.1).init(W0)
    with pytest.raises(ValueError, match=message):
        call(state)


@pytest.mark.slow  # 15 s at load 20 (40 Lanczos runs and their compilation)
def test_rmsprop_preconditioned_sharpness_rises_to_2_over_eta_and_hovers_there():
    # Cohen et al. 2022 on a small tanh MLP (4 → 12 → 12 → 1, 40 points): bias-corrected
    # RMSProp, η = 2e-3. Measured: η·λ_max(P⁻¹H)/2 = 0.16 at step 20, first ≥ 1 at step 160
    # (overshoot 1.8 at 200), median 1.04 over steps 400–800 (q10–q90 0.98–1.09).
    from tests.flows.large_steps.nets import tanh_regression

    loss, net = tanh_regression(4, 12, 2, 40, seed=0, key=1)
    eta, beta2, eps, K = 2e-3, 0.99, 1e-8, 800

    def ratio(p, s):
        P = adaptive_preconditioner(s, eps=eps, beta2=beta2)
        return eta * preconditioned_sharpness(loss, p, P, max_iters=40, tol=1e-9)[0] / 2

    opt = flows.large_steps.rmsprop(eta, beta2, eps, bias_correction=True)
    traj = optimize(loss, net, K * eta, optimizer=opt, eta=eta, ts=eta * np.arange(20, K + 1, 20),
                    state_observables={"ratio": ratio}, save_params=False)  # fmt: skip
    r, steps = traj.observables["ratio"], np.rint(traj.ts / eta)
    late = r[steps >= 400]
    q10, q90 = np.quantile(late, [0.1, 0.9])
    print(f"ratio at step 20: {r[0]:.3f}, first >= 1 at step {steps[np.argmax(r >= 1)]:.0f}, "
          f"median over 400-800 {np.median(late):.4f}, q10-q90 {q10:.3f}-{q90:.3f}")  # fmt: skip
    assert r[0] < 0.3  # below the edge at the start: it rises to it
    assert 100 <= steps[np.argmax(r >= 1)] <= 300
    assert 0.97 <= np.median(late) <= 1.15 and np.all(late > 0.85) and np.all(late < 1.3)
