"""exprk4 (Krogstad's exponential Runge–Kutta method, `flows._solver._exprk`): exact on its
linear part, order 4 on a stiff semilinear field, and the lazy pair's exprk4 solve agrees with
Tsit5 on the joint (ū, d) form."""

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

from flows._solver._exprk import AbstractSpectralSplit, ExpRK4


class _Split(AbstractSpectralSplit):
    """A = −c·V diag(s²) Vᵀ for an orthonormal V (m, k): project = S Vᵀ, lift = V S."""

    V: jax.Array
    s: jax.Array
    scale: jax.Array
    rates: jax.Array

    def project(self, v):
        return self.s * (self.V.T @ v)

    def lift(self, a):
        return self.V @ (self.s * a)


class _Field(eqx.Module):
    split: _Split
    b: jax.Array
    nonlinear_scale: float = eqx.field(static=True)

    def nonlinear(self, t, y):
        return self.b * jnp.cos(t) + self.nonlinear_scale * jnp.sin(y)

    def __call__(self, t, y, args):
        return self.nonlinear(t, y) - self.split.scale * self.split.lift(self.split.project(y))

    def matrix(self):
        V, s, c = self.split.V, self.split.s, self.split.scale
        return -c * (V * s**2) @ V.T


def _field(nonlinear_scale, rates=(1e3, 40.0, 3.0, 0.2), m=6, seed=0):
    rng = np.random.default_rng(seed)
    V, _ = np.linalg.qr(rng.normal(size=(m, len(rates))))
    s = np.sqrt(np.array(rates))  # stiff by default: λ_max·h ≫ 1 below
    c = 0.5
    split = _Split(jnp.asarray(V), jnp.asarray(s), jnp.asarray(c), jnp.asarray(c * s**2))
    return _Field(split, jnp.asarray(rng.normal(size=m)), nonlinear_scale)


def _solve(field, y0, t1, steps):
    sol = dfx.diffeqsolve(
        dfx.ODETerm(field), ExpRK4(), 0.0, t1, t1 / steps, y0,
        stepsize_controller=dfx.ConstantStepSize(), saveat=dfx.SaveAt(t1=True),
    )  # fmt: skip
    return np.asarray(sol.ys[0])


class _Constant(eqx.Module):
    """y' = Ay + b: N = b, constant."""

    field: _Field
    split: _Split

    def nonlinear(self, t, y):
        return self.field.b

    def __call__(self, t, y, args):
        return self.field.b + self.field.matrix() @ y


def test_exprk4_is_exact_on_a_linear_field_with_constant_forcing_in_one_step():
    field = _field(0.0)
    y0 = np.random.default_rng(1).normal(size=6)
    A, b = np.asarray(field.matrix()), np.asarray(field.b)
    t1 = 0.7  # h·λ_max = 350: far outside any explicit method's stability region
    # y(t) = e^{tA}y0 + t·φ1(tA)b by the eigendecomposition of the symmetric A (rank 4 of 6)
    lam, Q = np.linalg.eigh(A)
    lam = np.where(np.abs(lam) < 1e-12, 0.0, lam)
    phi1 = np.where(lam != 0, np.expm1(t1 * lam) / np.where(lam == 0, 1, t1 * lam), 1.0)
    exact = Q @ (np.exp(t1 * lam) * (Q.T @ y0)) + t1 * Q @ (phi1 * (Q.T @ b))
    got = _solve(_Constant(field, field.split), jnp.asarray(y0), t1, 1)
    # measured 3.3e-14 relative (the closed form's own eigendecomposition); tolerance 5e-13
    assert np.linalg.norm(got - exact) / np.linalg.norm(exact) < 5e-13


def _orders(field):
    """Observed orders of exprk4 at 8, 16, 32 fixed steps over [0.2, 1.2]."""
    A, b = np.asarray(field.matrix()), np.asarray(field.b)

    def rhs(t, y):
        return A @ y + b * np.cos(t) + 0.8 * np.sin(y)

    def radau(y, t0, t1):
        return solve_ivp(rhs, (t0, t1), y, method="Radau", rtol=1e-13, atol=1e-14).y[:, -1]

    # start past the initial layer (e^{−500t}): a fixed step cannot resolve it, and the
    # adaptive solves of the lazy pair take small steps there
    y0 = radau(np.random.default_rng(2).normal(size=6), 0.0, 0.2)
    ref = radau(y0, 0.2, 1.2)

    def solve(steps):
        sol = dfx.diffeqsolve(
            dfx.ODETerm(field), ExpRK4(), 0.2, 1.2, 1.0 / steps, jnp.asarray(y0),
            stepsize_controller=dfx.ConstantStepSize(), saveat=dfx.SaveAt(t1=True),
        )  # fmt: skip
        return np.asarray(sol.ys[0])

    errors = np.array([np.linalg.norm(solve(n) - ref) for n in (8, 16, 32)])
    return np.log2(errors[:-1] / errors[1:])


def test_exprk4_converges_with_order_four_on_a_nonstiff_field():
    orders = _orders(_field(0.8, rates=(1e-3, 1e-2, 0.1, 0.2)))
    # measured 3.9998, 4.0004; margin 0.3
    assert np.all(orders > 3.7), orders


def test_exprk4_keeps_order_above_three_on_a_stiff_semilinear_field():
    # h·λ_max = 62 .. 16; Krogstad's method is of stiff order 3 at least (Hochbruck &
    # Ostermann 2005), and 4 on the non-stiff part
    orders = _orders(_field(0.8))
    # measured 3.68, 3.59 (errors 2.6e-6, 2.0e-7, 1.7e-8); margin 0.4
    assert np.all(orders > 3.2), orders
