"""The central flow with several eigenvalues at the edge: the complementarity problem as a
QP (k = 1: max(0, −A/B)), eigenvalues joining and leaving as events, S held at 2/η, L
non-increasing, on a toy where the answers are closed forms."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

from flows.large_steps import ComplementarityError, EdgeLimitReached, _central, central_flow
from flows.large_steps._complementarity import residual, smat, solve_qp

ETA = 0.2  # 2/η = 10
Q = np.linalg.qr(np.random.default_rng(3).standard_normal((5, 5)))[0]  # generic axes
C = (9.5, 9.0)


def toy(w):
    """w = Q(x1, x2, z1, z2, z3): H has eigenvalues C_j + z_j along x_j (x → 0 fast, at
    rate ≈ 9) and ≤ 3.5 on z. V pulls z2 to 2 (h2 = 9 + z2 reaches 10 at t = ln 2.1 when
    x = 0) and z1 to 2.5 − 1.5 z3 while z3 grows: h1 joins first, h2 joins, then the
    force on z1, F1 = 2.5 − z1 − 1.5 z3, turns negative and h1 leaves. Held (x = 0),
    X = diag(2F1, 2F2), F2 = 2 − z2: tr Σ = 2(F1 + F2) on the tracked ones."""
    v = jnp.asarray(Q).T @ w
    x, z = v[:2], v[2:]
    V = 0.5 * (z[0] + 1.5 * z[2] - 2.5) ** 2 + 0.5 * (z[1] - 2.0) ** 2
    V = V + 0.125 * (z[2] - 2.0) ** 2
    return 0.5 * jnp.sum((jnp.asarray(C) + z[:2]) * x**2) + V


W0 = jnp.asarray(Q @ np.array([0.3, -0.2, 0.05, -0.1, 0.02]))
TS = np.linspace(0.0, 2.0, 21)


@pytest.fixture(scope="module")
def flow():
    return central_flow(toy, W0, 2.0, eta=ETA, k=2, ts=TS, rtol=1e-8, atol=1e-10)


def test_qp_with_one_eigenvalue_is_the_closed_form():
    for A, B in ((-2.0, 0.7), (3.0, 0.7), (-1e-4, 250.0), (0.0, 1.0)):
        x, res = solve_qp(np.array([[B]]), np.array([A]), 1.0)
        # measured: |x − max(0, −A/B)| ≤ 2e-13, residual ≤ 2e-13
        assert abs(x[0] - max(0.0, -A / B)) <= 1e-11 * max(1.0, abs(A / B)) and res < 1e-11


def test_qp_solves_the_complementarity_problem():
    rng = np.random.default_rng(0)
    for k in (2, 3):
        n = k * (k + 1) // 2
        for _ in range(10):
            J = rng.standard_normal((n, 30)) * 10 ** rng.uniform(-3, 3)
            g = rng.standard_normal(30) * 10 ** rng.uniform(-3, 3)
            P, q = 0.5 * J @ J.T, J @ g
            x, res = solve_qp(P, q, np.linalg.norm(g))
            X = smat(x)
            # X ⪰ 0, Z ⪰ 0, ⟨X, Z⟩ = 0 (measured residual ≤ 9e-11 over 120 such problems)
            assert res == residual(P, q, x, np.linalg.norm(g)) and res < 1e-9
            assert np.linalg.eigvalsh(X)[0] >= -1e-9 * np.linalg.norm(X)


def test_eigenvalues_join_and_leave_as_events(flow):
    (t1, m1), (t2, m2), (t3, m3) = flow.stats["events"]
    assert (m1, m2, m3) == (1, 2, 1)
    # h2 reaches 10 at ln 2.1 = 0.7419 when x = 0; x's drag delays it (measured 5.6e-4)
    assert t1 < t2 < t3 and abs(t2 - np.log(2.1)) < 1e-2
    v = np.asarray(flow.params) @ Q
    F1 = 2.5 - v[:, 2] - 1.5 * v[:, 4]
    # h1 leaves where F1 = 0: measured F1 ≈ −0.0051 at the save 0.02 after it
    assert np.all(F1[TS < t3 - 1e-9] > 0) and np.all(F1[TS > t3] < 0)


def test_tracked_eigenvalues_held_at_the_edge_and_the_loss_falls(flow):
    m = flow.observables["tracked"].astype(int)
    E = flow.observables["eigenvalues"]
    v = np.asarray(flow.params) @ Q
    F = np.stack([2.5 - v[:, 2] - 1.5 * v[:, 4], 2.0 - v[:, 3]], axis=1)
    assert set(m) == {0, 1, 2}
    for i in np.flatnonzero(m > 0):
        # the tracked ones at 2/η (measured 1.0e-8 relative), the others below (the one
        # just let go: 0.9999945 × 2/η at the save after it)
        assert np.max(np.abs(E[i, : m[i]] * ETA / 2 - 1)) < 1e-3
        assert E[i, m[i]] * ETA / 2 < 1
    both = m == 2
    # X = diag(2F1, 2F2) held: tr Σ = 2(F1 + F2) (measured 4.7e-8 relative)
    np.testing.assert_allclose(flow.observables["trace_sigma"][both], 2 * F[both].sum(1), rtol=1e-6)
    assert np.all(np.diff(flow.loss) < 0)  # measured: the largest step −7.0e-4


@pytest.mark.slow  # its own compilation (k = 1): 39 s at load 8
def test_one_tracked_eigenvalue_stops_where_a_second_reaches_the_edge():
    with pytest.raises(EdgeLimitReached, match=r"eigenvalue 2 .* t=0\.74") as e:
        central_flow(toy, W0, 2.0, eta=ETA, k=1, ts=TS, rtol=1e-8, atol=1e-10)
    assert e.value.partial.ts[-1] < e.value.t < e.value.partial.ts[-1] + 0.1


def test_a_failing_complementarity_solve_names_the_time_and_residual(monkeypatch):
    monkeypatch.setattr(_central, "solve_qp", lambda P, q, g: (np.zeros(len(q)), 0.5))
    with pytest.raises(ComplementarityError, match=r"failed at t=0\.31\d*: residual 0\.5 >"):
        central_flow(toy, W0, 2.0, eta=ETA, k=2, ts=TS, rtol=1e-8, atol=1e-10)


def test_one_tracked_eigenvalue_uses_the_closed_form_the_qp_gives():
    # k = 1 solves σ² = max(0, −q/P) inside the compiled field (no host QP): the same x
    from flows.large_steps._hessian import flat_loss

    f, w, spec, static = flat_loss(toy, W0)
    field = _central._CentralField(toy, static, spec, jnp.asarray(ETA), 1, jnp.asarray(-1))
    solve = eqx.filter_jit(field.solve)  # one compilation for the four points, not op by op
    rng = np.random.default_rng(5)
    for _ in range(4):
        y = w + 0.3 * jnp.asarray(rng.standard_normal(w.shape))
        g, _, P, q, x = solve(0.0, y, jnp.asarray(1), jnp.zeros((2, 5)))[:5]
        expected, _ = solve_qp(np.asarray(P), np.asarray(q), float(jnp.linalg.norm(g)))
        # measured: equal to 1e-13 (relative to max(1, x))
        assert abs(float(x[0]) - expected[0]) <= 1e-11 * max(1.0, abs(expected[0]))
    P, q = np.asarray(P), np.asarray(q)
    assert float(x[0]) == pytest.approx(max(0.0, -q[0] / P[0, 0]), rel=1e-12, abs=1e-15)
