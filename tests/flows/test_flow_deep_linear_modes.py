"""Saxe, McClelland & Ganguli 2014: the exact mode dynamics of a two-layer linear network."""

import jax
import jax.numpy as jnp
import numpy as np

import flows
import models

S = np.array([3.0, 2.0, 1.0])  # singular values of Σ31
U0 = 1e-3  # initial mode strength
T1 = 15.0 / S.min()


def _orthogonal(key, n):
    q, r = np.linalg.qr(np.asarray(jax.random.normal(key, (n, n))))
    return q * np.sign(np.diag(r))


def saxe_mode_strength(s, u0, t):
    """u(t) = s / (1 + (s/u0 − 1) e^{−2st}) (Saxe et al. 2014, eq. (6), τ = 1)."""
    return s / (1.0 + (s / u0 - 1.0) * np.exp(-2.0 * s * t))


def _problem():
    """Whitened inputs (Σ_μ x xᵀ = I), Σ31 = U S Vᵀ, R = ½ Σ_μ ‖y − W2 W1 x‖², decoupled init."""
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    d_in, d_out, hidden = 4, 3, 5
    U = _orthogonal(keys[0], d_out)
    V = _orthogonal(keys[1], d_in)[:, :3]
    sigma31 = U @ np.diag(S) @ V.T
    X = _orthogonal(keys[2], d_in)  # rows x_μ
    Y = X @ sigma31.T
    np.testing.assert_allclose(Y.T @ X, sigma31, atol=1e-14)  # Σ_μ y xᵀ = Σ31
    np.testing.assert_allclose(X.T @ X, np.eye(d_in), atol=1e-14)  # whitened
    net0 = models.DeepLinearNet.decoupled(sigma31, u0=U0, hidden=hidden, key=keys[3])
    Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
    squared = flows.SquaredLoss("sum")

    def loss(net):
        return squared(jax.vmap(net)(Xj), Yj)

    def modes(net):  # Uᵀ (W2 W1) V: its diagonal holds the mode strengths
        return jnp.asarray(U).T @ net.end_to_end() @ jnp.asarray(V)

    return loss, net0, modes


LOSS, NET0, MODES = _problem()


def test_mode_strengths_follow_saxe_closed_form_to_1e_8():
    ts = np.linspace(0.0, T1, 61)
    traj = flows.gradient_flow(
        LOSS,
        NET0,
        T1,
        ts=ts,
        solver="dopri8",
        rtol=1e-12,
        atol=1e-14,
        observables={"modes": MODES},
        save_params=False,
    )
    m = traj.observables["modes"]
    strengths = np.diagonal(m, axis1=1, axis2=2)
    err = np.abs(strengths - saxe_mode_strength(S[None, :], U0, ts[:, None])).max()
    print(f"saxe: max |u − u_exact| = {err:.2e}, steps {traj.stats['num_steps']}")
    assert err <= 1e-8
    # The modes stay decoupled: off-diagonal entries remain at round-off.
    assert np.abs(m - strengths[:, :, None] * np.eye(3)[None]).max() <= 1e-8
    # Each mode really learns: from u0 = 1e-3 to within 1e-6 of s.
    np.testing.assert_allclose(strengths[-1], S, atol=1e-6)


def test_gradient_descent_tracks_saxe_closed_form_to_first_order_in_eta():
    # Step k sits at flow time kη: GD's error against the closed form is O(η), so halving η
    # halves it (ratio 2 within 5%), which also checks that the time axes agree.
    ts = np.linspace(0.0, T1, 16)
    errors = []
    for eta in (2e-3, 1e-3):
        gd = flows.gradient_descent(
            LOSS, NET0, T1, eta=eta, ts=ts, observables={"modes": MODES}, save_params=False
        )
        np.testing.assert_allclose(gd.ts, ts, rtol=1e-15)
        strengths = np.diagonal(gd.observables["modes"], axis1=1, axis2=2)
        errors.append(np.abs(strengths - saxe_mode_strength(S[None, :], U0, ts[:, None])).max())
    print(f"GD vs Saxe closed form: errors {errors}")
    assert 1e-6 < errors[1] < 0.05
    np.testing.assert_allclose(errors[0] / errors[1], 2.0, rtol=0.05)
