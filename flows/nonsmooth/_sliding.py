"""The vector field of one piece of a two-layer Filippov flow, sliding slopes included.

On a piece every pre-activation z_ij = b_j·x̃_i has a fixed side: off the kink (sign s_ij,
slope σ'(z_ij) = σ'_± fixed) or sliding on it (z_ij = 0, slope θ_ij solved for). With slopes
Θ fixed, the network is linear in each z, and with r = ∇R(prediction) the flow reads
  ȧ_j = −c_j Σ_i r_i Θ_ij z_ij,   ḃ_j = −c_j a_j Σ_i r_i Θ_ij x̃_i,   β̇_k = −e_k Σ_i r_i.
Both use the same Θ, so a_j ȧ_j = b_j·ḃ_j exactly and ‖b_j‖² − a_j² is conserved by the
field itself (Du, Hu & Lee 2018, Thm 2.1), sliding or not.

Sliding slopes (Filippov 1988, §2.4; neurons decouple given r): for neuron j with sliding set
S_j, ż_kj = x̃_k·ḃ_j = 0 for k ∈ S_j reads Σ_{l∈S_j} (x̃_k·x̃_l) φ_l = −x̃_k·Σ_{i∉S_j} r_i Θ_ij x̃_i
with φ_l = r_l θ_lj: a linear system on the Gram matrix of the sliding inputs. All neurons'
systems are solved at once as one block-diagonal system over "slots" (i, j); padding slots
are identity rows. Where the sliding inputs are linearly dependent the slopes are not unique
but ḃ_j is (it is −c_j a_j times the one-sided field projected orthogonally to the sliding
inputs): the pseudo-inverse picks the minimum-norm φ, and the field is the unique element of
the Filippov set tangent to all the surfaces, hence its minimum-norm element.

Resolution of the slopes: θ = φ/r is a ratio of two quantities of the size of the residual r,
while r = ∂R/∂f is computed from f and y with an absolute round-off ρ that does not fall with
r. Near a zero of the loss θ is therefore known only to ν ≈ (|G_SS⁺|·|G|ρ + |θ|ρ)/|r| (a
bound from the magnitudes, `_slopes`): at |r| ~ 1e-8 that is ~1e-7, and a change of one ulp
in the state moves θ by about as much. The exit test (a margin at an end of [σ'₋, σ'₊]) is
taken on that resolution: the event function uses the margin less `_SAFETY`·ν, and the
decision accepts a margin within `_AT_KINK` plus that again (`_pieces.at_end`), so an event
that the solver located is always decided, however the last bits of the two evaluations
differ. An exit up to 2·`_SAFETY`·ν early moves the state by O(ν·|r|·Δt), Δt = ν/|θ̇|.
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

_EPS = float(jnp.finfo(jnp.float64).eps)
# The margin of a slot is taken less this many times its slope's round-off bound ν (module
# docstring): ν is a sum of magnitudes, measured 7× the spread of θ over states two ulps apart
# on the balance experiment's abs net at |r| ~ 1e-8.
_SAFETY = 2.0


class Mode(eqx.Module):
    """The current piece: sides, sliding entries, and their slots. All arrays, so that every
    piece with the same number of slots reuses one compilation."""

    sign: Float[Array, "n m"]  # ±1 off the kink (ignored where sliding)
    sliding: Bool[Array, "n m"]
    slack: Float[Array, "n m"]  # keeps the event function > 0 right after an event
    slot_i: Int[Array, " K"]
    slot_j: Int[Array, " K"]
    slot_on: Bool[Array, " K"]


class PieceField(eqx.Module):
    """The flow of R(α·f(w))/α² on one piece (`Mode`, passed as diffrax `args`), for the flat
    state y = (a (m,), B (m·d̃,), β (k,))."""

    Xt: Float[Array, "n dt"]
    G: Float[Array, "n n"]
    xnorm: Float[Array, " n"]
    coef: Float[Array, " m"]
    bias_coef: Float[Array, " k"]
    offset: Float[Array, " n"]
    Y: Array
    alpha: Float[Array, ""]
    slope_minus: Float[Array, ""]
    slope_plus: Float[Array, ""]
    loss: Callable = eqx.field(static=True)
    m: int = eqx.field(static=True)

    def unpack(self, y):
        m, dt = self.m, self.Xt.shape[1]
        return y[:m], y[m : m + m * dt].reshape(m, dt), y[m + m * dt :]

    def residual(self, pred):
        """r = ∂/∂pred of R(α·pred)/α²."""
        return jax.grad(lambda p: self.loss(self.alpha * p, self.Y) / self.alpha**2)(pred)

    def solve(self, y, mode: Mode):
        """(z (n, m), Θ (n, m), θ of the slots (K,), r (n,))."""
        a, B, beta = self.unpack(y)
        z = self.Xt @ B.T
        return (z, *self.slopes(z, a, beta, mode))

    def slopes(self, z, a, beta, mode: Mode):
        """(Θ (n, m), θ of the slots (K,), r (n,)) from the pre-activations z (n, m): no product
        with X̃, so a change of side is cheap to try (`zdot_at`)."""
        return self._slopes(z, a, beta, mode, None)[:3]

    def slopes_resolved(self, z, a, beta, bnorm, mode: Mode):
        """`slopes` and a bound ν (K,) on the round-off of each slot's slope θ (module
        docstring), given the row norms ‖b_j‖ (m,) of B."""
        return self._slopes(z, a, beta, mode, bnorm)

    def _slopes(self, z, a, beta, mode: Mode, bnorm):
        side = jnp.where(mode.sign > 0, self.slope_plus, self.slope_minus)
        theta0 = jnp.where(mode.sliding, 0.0, side)
        pred = (theta0 * z) @ (self.coef * a) + beta @ self.bias_coef + self.offset
        r = self.residual(pred)
        si, sj, on = mode.slot_i, mode.slot_j, mode.slot_on
        mid = 0.5 * (self.slope_minus + self.slope_plus)
        zero = jnp.zeros(on.shape, z.dtype)

        def sliding():
            # x̃_k·Σ_{i∉S_j} r_i Θ_ij x̃_i = Σ_i G_ki r_i Θ_ij for each slot (k, j): from the
            # Gram matrix, without the (m, d̃) product of the field
            rhs = jnp.where(on, -jnp.sum(self.G[si] * (r[:, None] * theta0[:, sj]).T, 1), 0.0)
            pair = on[:, None] & on[None, :] & (sj[:, None] == sj[None, :])
            gram = jnp.where(pair, self.G[si][:, si], 0.0) + jnp.diag(jnp.where(on, 0.0, 1.0))
            w, V = jnp.linalg.eigh(gram)
            inv = jnp.where(w > 1e-12 * jnp.max(w), 1.0 / jnp.where(w > 0, w, 1.0), 0.0)
            phi = V @ (inv * (V.T @ rhs))
            r_s = r[si]
            theta = jnp.where(r_s == 0, mid, phi / jnp.where(r_s == 0, 1.0, r_s))
            theta = jnp.where(on, theta, mid)
            if bnorm is None:
                return theta, zero
            rho = self._residual_roundoff(z, a, beta, bnorm, theta0, pred, r)
            # |rhs|'s and φ's round-off from ρ, through |G| and |V| diag(1/w) |V|ᵀ
            d_rhs = jnp.sum(jnp.abs(self.G[si]) * (rho[:, None] * jnp.abs(theta0[:, sj])).T, 1)
            d_rhs = jnp.where(on, d_rhs + _EPS * jnp.abs(rhs), 0.0)
            d_phi = jnp.abs(V) @ (inv * (jnp.abs(V).T @ d_rhs)) + _EPS * jnp.abs(phi)
            nu = (d_phi + jnp.abs(theta) * rho[si]) / jnp.where(r_s == 0, 1.0, jnp.abs(r_s))
            return theta, jnp.where(on & (r_s != 0), nu, 0.0)

        # the sliding solve only where some pre-activation slides
        theta, nu = jax.lax.cond(
            jnp.any(on), sliding, lambda: (jnp.full(on.shape, mid, z.dtype), zero)
        )
        Theta = theta0.at[si, sj].add(jnp.where(on, theta, 0.0))
        return Theta, theta, r, nu

    def _residual_roundoff(self, z, a, beta, bnorm, theta0, pred, r):
        """ρ (n,): the round-off of the residual r as computed, |∂r/∂pred|·P·ε with P_i the
        sum of the magnitudes that make pred_i and the target (z_ij = x̃_i·b_j to
        d̃·‖x̃_i‖‖b_j‖·ε). As the loss falls, r → 0 while ρ stays put: the slopes
        θ = φ/r of the sliding slots are then known only to about ρ/|r| (module docstring)."""
        dt = self.Xt.shape[1]
        zmag = jnp.abs(z) + dt * self.xnorm[:, None] * bnorm[None, :]
        mag = (jnp.abs(theta0) * zmag) @ jnp.abs(self.coef * a)
        mag = mag + jnp.abs(beta) @ jnp.abs(self.bias_coef) + jnp.abs(self.offset)
        mag = mag + jnp.abs(self.Y) / self.alpha + jnp.abs(pred)
        _, curvature = jax.jvp(self.residual, (pred,), (mag,))
        return _EPS * (jnp.abs(curvature) + jnp.abs(r))

    def __call__(self, t, y, mode: Mode):
        a, _, _ = self.unpack(y)
        z, Theta, _, r = self.solve(y, mode)
        rTheta = r[:, None] * Theta
        a_dot = -self.coef * jnp.sum(rTheta * z, axis=0)
        B_dot = -(self.coef * a)[:, None] * (rTheta.T @ self.Xt)
        beta_dot = -self.bias_coef * jnp.sum(r)
        return jnp.concatenate([a_dot, B_dot.ravel(), beta_dot])

    def zdot(self, y, mode: Mode):
        """ż (n, m) on this piece."""
        _, B_dot, _ = self.unpack(self(0.0, y, mode))
        return self.Xt @ B_dot.T

    def zdot_at(self, z, y, mode: Mode, i, j):
        """ż_ij on this piece from z = X̃Bᵀ (n, m): x̃_i·ḃ_j = −c_j a_j Σ_l G_il r_l Θ_lj, from
        the Gram matrix (O(nm), where `zdot` costs a field evaluation)."""
        a, _, beta = self.unpack(y)
        Theta, _, r = self.slopes(z, a, beta, mode)
        return -self.coef[j] * a[j] * (self.G[i] @ (r * Theta[:, j]))

    def values(self, y, mode: Mode):
        """(distances (n, m), margins (K,), resolutions (K,)): s_ij z_ij/‖x̃_i‖ + slack off the
        kink (+inf where sliding); each slot's slope distance to the nearer end of [σ'₋, σ'₊]
        over its length, less `_SAFETY` times the slope's round-off ν over that length (+inf
        on padding slots); and that round-off term (0 on padding slots). An event is one of the
        first two reaching 0."""
        a, B, beta = self.unpack(y)
        z = self.Xt @ B.T
        _, theta, _, nu = self.slopes_resolved(z, a, beta, jnp.linalg.norm(B, axis=1), mode)
        return self.distances(z, theta, nu, mode)

    def distances(self, z, theta, nu, mode: Mode):
        """`values` from z (n, m), the slots' slopes θ (K,) and their round-off ν (K,)."""
        dist = jnp.where(mode.sliding, jnp.inf, mode.sign * z / self.xnorm[:, None] + mode.slack)
        lo = jnp.minimum(self.slope_minus, self.slope_plus)
        hi = jnp.maximum(self.slope_minus, self.slope_plus)
        width = jnp.where(hi > lo, hi - lo, 1.0)
        on = mode.slot_on & (hi > lo)
        resolution = jnp.where(on, _SAFETY * nu / width, 0.0)
        margin = jnp.minimum(theta - lo, hi - theta) / width - resolution
        return dist, jnp.where(on, margin, jnp.inf), resolution

    def event(self, t, y, args: Mode, **kwargs):
        dist, margin, _ = self.values(y, args)
        return jnp.minimum(jnp.min(dist), jnp.min(margin, initial=jnp.inf))

    def loss_value(self, y):
        """R(α·f)/α² with the true activation (no slopes chosen)."""
        a, B, beta = self.unpack(y)
        z = self.Xt @ B.T
        phi = jnp.where(z > 0, self.slope_plus, self.slope_minus) * z
        pred = phi @ (self.coef * a) + beta @ self.bias_coef + self.offset
        return self.loss(self.alpha * pred, self.Y) / self.alpha**2
