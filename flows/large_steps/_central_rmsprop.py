"""The central flow of RMSProp, per-coordinate and scalar (Cohen, Damian, Talwalkar, Kolter &
Lee, ICLR 2025, "Understanding optimization in deep learning with central flows", §5): a
joint flow of the weights w and the second-moment estimate ν, on the state y = (w, ν).

RMSProp (ε outside the root, no bias correction), with P_k = diag(√ν_{k+1} + ε):

    ν_{k+1} = β2ν_k + (1 − β2)g_k⊙²,   w_{k+1} = w_k − ηP_k⁻¹g_k,   g_k = ∇L(w_k);

scalar RMSProp takes ν scalar, g⊙² → ‖g‖², P = √ν + ε. The step is stable on a quadratic iff
η·λ_max(P⁻¹H) < 2: P⁻¹H is the effective (preconditioned) Hessian, held at 2/η at the edge.
On the flow's time axis (step k at t = kη) with ν(kη) ↔ ν_{k+1}, the preconditioner of step
k, the update of ν reads exactly ν_{k+1} − ν_k = ((1 − β2)/β2)(g_k⊙² − ν_{k+1}), so that
(the paper's §5 equations, time in units of η)

    w' = −P⁻¹[∇L + ½∇⟨H, Σ⟩],   ν' = (1 − β2)/(β2η) · (E[g⊙²] − ν),
    E[g⊙²] = ∇L⊙² + diag(HΣH)      (scalar: ‖∇L‖² + tr(HΣH)),

E[g⊙²] being the time average of the squared gradient of the oscillating iterate w + δ,
g(w + δ) ≈ ∇L + Hδ, E[δδᵀ] = Σ (the mean-field terms of order Σ·∇L dropped, as in the paper).
Σ = UXUᵀ on the top generalised eigenvectors u_i = P^{-1/2}v_i of (H, P) (v_i orthonormal
eigenvectors of P^{-1/2}HP^{-1/2}, eigenvalues λ_i), X ⪰ 0 solving the complementarity
problem of `_complementarity` with Z = minus the rate of the tracked block
B_ij = v_iᵀP^{-1/2}HP^{-1/2}v_j along (w', ν'):

    dB_ij/dt = ∇³L[u_i, u_j]·w' − ½(λ_i + λ_j) Σ_l v_il v_jl ṗ_l/p_l,   ṗ_l = ν'_l/(2√ν_l),

linear in X through w' (the Gram term ½J P⁻¹Jᵀ of gradient descent's problem) and through
ν' (the term of diag(HΣH), Hu_i = P^{1/2}λ_iv_i); its matrix is symmetric where the tracked
λ_i are equal, i.e. to 1e-8 at the edge, and `solve_qp`'s face refinement solves the exact
problem. For one tracked eigenvalue X = σ² = max(0, −q/b) in closed form.
"""

import numbers

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_number
from ._central import _CentralField, _host_qp, _report
from ._complementarity import pairs, svec_scale
from ._hessian import third
from ._preconditioned import check_beta, check_eps
from ._sharpness import top_eigenpairs

OPTIMIZERS = ("gd", "rmsprop", "scalar_rmsprop")
_TOL, _ITERS = 1e-10, 60


class _RMSPropField(eqx.Module):
    """(w', ν') on the flat state y = (w, ν), ν of size p (per-coordinate) or 1 (scalar);
    `args = (m, V0, start)` as `_CentralField`'s, V0 (k+1, len(y)) the warm start of Lanczos (the
    top eigenvectors of P^{-1/2}HP^{-1/2} at the last save, zero on the ν part)."""

    loss: object = eqx.field(static=True)
    static: object
    spec: object = eqx.field(static=True)
    eta: jax.Array
    k: int = eqx.field(static=True)
    cid: jax.Array  # the call's id in `_central._COUNTS`, as `_CentralField.cid`
    count: bool = eqx.field(static=True)
    observables: tuple = eqx.field(static=True)
    predicted: tuple = eqx.field(static=True)
    beta2: float = eqx.field(static=True)
    eps: float = eqx.field(static=True)
    scalar: bool = eqx.field(static=True)
    symmetric_jacobian = False
    edge_of = ("λ_max(P⁻¹H)", "RMSProp")  # the start's refusal names them

    f = _CentralField.f
    join = _CentralField.join
    leave = _CentralField.leave
    leave_value = _CentralField.leave_value
    event = _CentralField.event
    tally = _CentralField.tally
    thirds = _CentralField.thirds

    def split(self, y):
        """(w (p,), ν (p,) or (1,), P = √ν + ε broadcast to (p,))."""
        p = self.spec.size
        w, nu = y[:p], y[p:]
        return w, nu, jnp.broadcast_to(jnp.sqrt(nu) + self.eps, (p,))

    def eig(self, y, V0, below=None):
        """The top k+1 eigenpairs of P^{-1/2}HP^{-1/2} and the Hessian-vector products
        taken, as `_CentralField.eig`: (values (k+1,), vectors (k+1, len(y)) zero on the ν
        part, products)."""
        w, _, P = self.split(y)
        root = jnp.sqrt(P)
        f = self.f()
        top = top_eigenpairs(lambda x: f(x / root), w * root, self.k + 1, V0[:, : w.shape[0]],
                             tol=_TOL, max_iters=_ITERS, below=below)  # fmt: skip
        V = jnp.zeros((self.k + 1, y.shape[0]), y.dtype).at[:, : w.shape[0]].set(top.vectors)
        return top.values, V, jnp.asarray(top.products + self.k + 2, jnp.int32)

    def rates(self, y, lam, V, m):
        """The affine maps x ↦ w', x ↦ ν' and the problem (J, Q, q): w' = w0 + Wx,
        ν' = n0 + Nx, Z = Qx + q (svec order, entries outside the m-block zero)."""
        w, nu, P = self.split(y)
        p = w.shape[0]
        f = self.f()
        V = V[:, :p]
        U = V / jnp.sqrt(P)
        pp = pairs(self.k)
        inside = (jnp.asarray([max(i, j) for i, j in pp]) < m)[:, None]
        scale = jnp.asarray(svec_scale(self.k))[:, None]
        g = jax.grad(f)(w)
        J = jnp.where(inside, jnp.stack([third(f, w, U[i], U[j]) for i, j in pp]) * scale, 0.0)
        HU = jnp.sqrt(P) * lam[:, None] * V
        K = jnp.where(inside, jnp.stack([HU[i] * HU[j] for i, j in pp]) * scale, 0.0)
        B = jnp.where(inside, jnp.stack([0.5 * (lam[i] + lam[j]) * V[i] * V[j] for i, j in pp])
                      * scale, 0.0)  # fmt: skip
        c = (1.0 - self.beta2) / (self.beta2 * self.eta)
        reduce = (lambda a: jnp.sum(a, axis=-1, keepdims=True)) if self.scalar else (lambda a: a)
        w0, W = -g / P, -0.5 * J.T / P[:, None]
        n0, N = c * (reduce(g * g) - nu), c * reduce(K).T.reshape(nu.shape[0], -1)
        # ṗ/p per unit ν'; 0 where ν = 0 (a coordinate of zero gradient, frozen: P = ε)
        root = jnp.sqrt(nu)
        a = jnp.where(nu > 0, 1.0 / (2.0 * jnp.where(nu > 0, root * (root + self.eps), 1.0)), 0.0)
        wide = (lambda v: jnp.broadcast_to(v, (p,) + v.shape[1:])) if self.scalar else (lambda v: v)
        # minus the rate of the block: −J w' + B (a ⊙ ν')
        q = -J @ w0 + B @ (jnp.broadcast_to(a, (p,)) * wide(n0))
        Q = -J @ W + B @ (jnp.broadcast_to(a, (p,))[:, None] * wide(N))
        return (w0, W, n0, N), g, J, Q, q

    def solve(self, t, y, m, V0, eig=None):
        """(g, J, Q, q, x, λ, V, Hessian-vector products) as `_CentralField.solve` (what
        `leave` and `report` read), x = svec(X)."""
        return self.solve_maps(t, y, m, V0, eig)[:8]

    def solve_maps(self, t, y, m, V0, eig=None):
        """`solve`'s eight and the affine maps of `rates`."""
        lam, V, hvps = self.eig(y, V0) if eig is None else (*eig[:2], 0)
        maps, g, J, Q, q = self.rates(y, lam, V, m)
        if self.k == 1:
            b = Q[0, 0]
            x = jnp.where(b > 0, jnp.maximum(0.0, -q / jnp.where(b > 0, b, 1.0)), 0.0)
        else:
            shape = jax.ShapeDtypeStruct(q.shape, q.dtype)
            x = jax.pure_callback(_host_qp, shape, Q, q, jnp.linalg.norm(g), m, t,
                                  vmap_method="sequential")  # fmt: skip
        return g, J, Q, q, x, lam, V, hvps, maps

    def stable(self, y):
        """(w', ν') below the edge: w' = −P⁻¹∇L, ν' = (1 − β2)/(β2η)(∇L⊙² − ν)."""
        w, nu, P = self.split(y)
        g = jax.grad(self.f())(w)
        g2 = jnp.sum(g * g, keepdims=True) if self.scalar else g * g
        return jnp.concatenate([-g / P, (1.0 - self.beta2) / (self.beta2 * self.eta) * (g2 - nu)])

    def __call__(self, t, y, args):
        m, V0 = args[:2]

        def on_edge(y):
            *_, x, _, _, hvps, (w0, W, n0, N) = self.solve_maps(t, y, m, V0)
            return jnp.concatenate([w0 + W @ x, n0 + N @ x]), hvps

        def below(y):
            return self.stable(y), jnp.asarray(0, jnp.int32)

        v, hvps = jax.lax.cond(m > 0, on_edge, below, y)
        edge = (m > 0).astype(jnp.int32)
        self.tally(1, hvps, edge * self.thirds, edge)
        return v

    def record(self, t, y, args):
        return self.report(y, args[0], self.solve(t, y, args[0], args[1]))

    def report(self, y, m, solved):
        """What a save records, from the solved problem (a tuple of `solve`), counted as
        `_CentralField.report`'s: GD's record at w with u_i = P^{-1/2}v_i, plus ν, and "U"
        the padded V (k+1, len(y)), the warm start of the next Lanczos."""
        _, _, _, _, x, lam, V, hvps = solved
        self.tally(0, hvps, self.thirds, (m > 0).astype(jnp.int32))
        w, nu, P = self.split(y)
        out = _report(self, w, x, lam, V[:, : w.shape[0]] / jnp.sqrt(P), m)
        out["user"]["nu"] = nu[0] if self.scalar else nu
        out["U"] = V
        return out


BETA2, EPS = 0.99, 1e-8  # central_flow's defaults of beta2 and eps


def check_optimizer(optimizer, beta2, eps, nu0) -> tuple[str, float, float]:
    """`(optimizer, β2, ε)` checked: one of `OPTIMIZERS`, β2 in (0, 1), ε ≥ 0, and for
    gradient descent no `nu0` and β2, ε at their defaults; else a ValueError naming the
    argument."""
    if not isinstance(optimizer, str) or optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    # (0, 1) before check_beta's [0, 1), which named 1 as outside [0, 1), then 0 as outside (0, 1)
    if optimizer != "gd" and not 0.0 < check_number("beta2", beta2) < 1.0:
        raise ValueError(
            f"beta2 must lie in (0, 1) for the central flow of RMSProp, got {float(beta2)!r}"
            + (
                " (at β2 = 0, ν = g⊙² is no longer a state: ν' = (1 − β2)/(β2η)(E[g⊙²] − ν))"
                if float(beta2) == 0.0
                else ""
            )  # fmt: skip
        )
    beta2, eps = check_beta("beta2", beta2), check_eps(eps)
    if optimizer == "gd":
        if nu0 is not None:
            raise ValueError("nu0 is RMSProp's initial ν: pass optimizer='rmsprop' or "
                             "'scalar_rmsprop', or no nu0")  # fmt: skip
        # beta2=0.5 with gradient descent was ignored, and the flow recorded nothing of it
        unused = [f"{name}={value!r}" for name, value, default in
                  (("beta2", beta2, BETA2), ("eps", eps, EPS)) if value != default]  # fmt: skip
        if unused:
            raise ValueError(
                f"{', '.join(unused)}: RMSProp's, not used by gradient descent's central flow "
                "(optimizer='gd'): pass optimizer='rmsprop' or 'scalar_rmsprop', or drop it"
            )
    return optimizer, beta2, eps


def rmsprop_field(field, optimizer, beta2, eps, nu0, w):
    """`(field, y0)`: the RMSProp field with `field`'s loss, η, k and user functions, and its
    initial state (`rmsprop_state`). A user observable named "nu" is refused (the flow
    records ν under that name)."""
    names = [name for name, _ in field.observables]
    if "nu" in names:
        raise ValueError("observables: the name 'nu' is recorded by the flow of RMSProp (ν)")
    out = _RMSPropField(field.loss, field.static, field.spec, field.eta, field.k, field.cid,
                        field.count, field.observables, field.predicted, beta2, eps,
                        optimizer == "scalar_rmsprop")  # fmt: skip
    return out, rmsprop_state(optimizer, w, field.spec, field.f(), nu0, eps)


def rmsprop_state(optimizer, w, spec, f, nu0, eps):
    """y0 = (w, ν0): ν0 (p,), or (1,) for scalar RMSProp, from `nu0`: None for ∇L(w0)⊙²
    (scalar: ‖∇L(w0)‖²), a number (every entry), or for per-coordinate RMSProp a pytree of
    the trainable parameters' structure; every entry finite and ≥ 0, and > 0 where ε = 0,
    else a ValueError naming nu0. A coordinate with ν = 0 (its gradient 0 at w0) is held
    at P = ε while ν stays 0 (ṗ taken 0 there: ν'/(2√ν) is 0/0)."""
    size = 1 if optimizer == "scalar_rmsprop" else w.shape[0]
    if nu0 is None:
        g = np.asarray(jax.grad(f)(w))
        nu = np.array([g @ g]) if size == 1 else g * g
    elif isinstance(nu0, (numbers.Real, np.ndarray, jax.Array)) and np.ndim(nu0) == 0:
        nu = np.full(size, check_number("nu0", nu0))
    elif size == 1:
        raise ValueError(f"nu0 must be a number for scalar_rmsprop, got {type(nu0).__name__}")
    else:
        try:
            nu = np.asarray(spec.ravel(nu0), np.float64)
            assert jax.tree.structure(nu0) == spec.treedef and nu.shape == (size,)
        except Exception:
            raise ValueError(
                "nu0 must be a number or a pytree of the trainable parameters' structure and shapes"
            ) from None
    if not np.all(np.isfinite(nu) & (nu >= 0)) or (eps == 0 and not np.all(nu > 0)):
        raise ValueError(
            "nu0 must be finite and >= 0 everywhere, and > 0 where eps = 0 (P = √ν + ε > 0; "
            f"the default is ∇L(params0)⊙²), got min {np.min(nu):.3g} with eps = {eps:g}"
        )
    return jnp.concatenate([w, jnp.asarray(nu, w.dtype)])
