"""Stiffness decisions of `solver="auto"`, made along the path, both ways.

A step h of an explicit Runge–Kutta method is stable while h·λ ≤ b, b its stability boundary
on the negative real axis (Tsit5 ≈ 3.5). A gradient flow's Jacobian is −∇²F, symmetric, so
λ̂ = λ_max(∇²F) comes from a few Lanczos Hessian-vector products, each test warm-started
from the previous test's Ritz vector. After every solve segment `StiffnessMonitor.decide`
compares h·λ̂, h the step the controller proposes next:
- explicit phase: h·λ̂ ≥ `margin`·b says the controller is held by stability, not by
  accuracy (a positive test); `to_stiff` positive tests in a row switch to the stiff solver;
- stiff phase: h·λ̂ < `back`·b says the explicit solver could take the stiff solver's step
  (a negative test); `to_explicit` negative tests in a row switch back.
The two thresholds differ (hysteresis), so that a flow near the boundary does not flip-flop.
Segments are short (`first` steps) while a test is near the boundary and double, up to
`longest` steps, while tests are far from it, so that a flow turning stiff is caught within
a few short segments and a flow that never does is tested rarely. Every switch is recorded
with its time and h·λ̂.

Reference: Hairer & Wanner, Solving Ordinary Differential Equations II, §IV.2 (the stiffness
test of DOPRI5: h·λ̂ against the stability boundary, repeated along the path); Petzold 1983,
"Automatic selection of methods for solving stiff and nonstiff systems of ordinary
differential equations", SIAM J. Sci. Stat. Comput. 4 (LSODA, switching both ways);
Rackauckas & Nie 2017, J. Open Res. Softw. 5 (DifferentialEquations.jl, AutoSwitch).
"""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ._krylov import krylov_phi

#: Stability boundaries on the negative real axis, |R(−b)| = 1 (Hairer & Wanner II, §IV.2).
BOUNDARY = {"tsit5": 3.5, "dopri5": 3.3, "dopri8": 6.0}
#: The explicit and the stiff solver between which `solver="auto"` switches.
AUTO_EXPLICIT, AUTO_STIFF = "tsit5", "kvaerno5"


@eqx.filter_jit
def lambda_max(field, t, y, start, iters: int):
    """`(λ̂, ritz)`: the largest eigenvalue of −∂field/∂y at (t, y), flat `y` `(p,)`, from
    `iters` Lanczos steps started at `start` `(p,)`, and its Ritz vector `(p,)` (the next
    start); `y` may be a pytree, `p` its number of entries. For a gradient flow
    λ̂ ≤ λ_max(∇²F), with equality once the Krylov space holds the top eigenvector."""
    flat, unravel = ravel_pytree(y)
    _, jvp = jax.linearize(lambda x: ravel_pytree(field(t, unravel(x), None))[0], flat)
    basis = krylov_phi(
        lambda v: -jvp(v), start, 1.0, 1, tol=-1.0, m_max=iters, symmetric=True, check_every=iters
    )
    lam, Q = jnp.linalg.eigh(basis.H)
    top = jnp.argmax(lam)
    ritz = Q[:, top] @ basis.V
    return lam[top], ritz / jnp.maximum(jnp.linalg.norm(ritz), 1e-300)


@dataclasses.dataclass
class StiffnessMonitor:
    """Host-side state of the decisions of one solve. `decide` returns the solver for the
    next segment, appending `{"t", "to", "h_lambda"}` to `switches` when it changes; `steps`
    is the length (solver steps) of the next segment."""

    explicit: str = AUTO_EXPLICIT
    stiff: str = AUTO_STIFF
    to_stiff: int = 2
    to_explicit: int = 2
    margin: float = 0.8
    back: float = 0.5
    iters: int = 8
    first: int = 10
    longest: int = 50
    steps: int = 10
    streak: int = 0
    tests: int = 0
    start: np.ndarray | None = None
    switches: list = dataclasses.field(default_factory=list)
    history: list = dataclasses.field(default_factory=list)  # (t, phase, h·λ̂) of every test

    def __post_init__(self):
        self.steps = min(self.first, self.longest)

    def lam(self, field, t: float, y) -> float:
        """λ̂ at (t, y), warm-starting Lanczos from the last Ritz vector."""
        flat = ravel_pytree(y)[0]
        fresh = jax.random.normal(jax.random.PRNGKey(self.tests), flat.shape, flat.dtype)
        # The last Ritz vector, plus a little of a fresh random one: a start inside an
        # invariant subspace would never see a direction that turns stiff outside it.
        start = fresh if self.start is None else self.start + 0.1 * fresh / jnp.linalg.norm(fresh)
        lam, self.start = lambda_max(field, jnp.asarray(t), y, start, self.iters)
        self.tests += 1
        return float(lam)

    def decide(self, phase: str, field, t: float, y, h: float) -> str:
        hl = float(h) * self.lam(field, t, y)
        self.history.append((float(t), phase, hl))
        b = BOUNDARY[self.explicit]
        stiff_now = phase == self.stiff
        positive = hl >= (self.back if stiff_now else self.margin) * b
        # A test that argues for the other solver extends the streak; any other resets it.
        self.streak = self.streak + 1 if positive != stiff_now else 0
        # Far from the boundary (for the solver in use): test half as often as before.
        settled = hl < 0.5 * self.back * b if not stiff_now else hl >= 2 * self.margin * b
        self.steps = min(self.longest, 2 * self.steps) if settled else self.first
        if self.streak < (self.to_explicit if stiff_now else self.to_stiff):
            return phase
        self.streak, self.steps = 0, self.first
        new = self.explicit if stiff_now else self.stiff
        self.switches.append({"t": float(t), "to": new, "h_lambda": hl})
        return new
