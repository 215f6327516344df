"""Tsit5 that also estimates the stiffness of each step from its own stages, at no extra
evaluation: the explicit phase of `solver="auto"` (`_stiffness.StiffnessMonitor`).

Hairer & Wanner, Solving Ordinary Differential Equations II, §IV.2 ("Automatic Stiffness
Detection"): the last two stages of DOPRI5 are both at t + h, so
ρ = ‖f(t+h, y₇) − f(t+h, y₆)‖ / ‖y₇ − y₆‖ estimates the Jacobian's dominant |λ| (a
difference quotient of f between two nearby states) and h·ρ is compared with the stability
boundary. Tsit5's tableau has the same structure (c₆ = c₇ = 1, first same as last), so the
same quotient is free there.
"""

import diffrax as dfx
import jax
import jax.numpy as jnp
import numpy as np

_TABLEAU = dfx.Tsit5.tableau
#: y₇ − y₆ = Σⱼ (a₇ⱼ − a₆ⱼ)·kⱼ over the first six stages (a₇ = b, first same as last).
_Y7_MINUS_Y6 = np.asarray(_TABLEAU.a_lower[5]) - np.append(_TABLEAU.a_lower[4], 0.0)


def _quotient(k, dt):
    """ρ from the stage increments `k` (kⱼ = h·fⱼ, leading axis 7 per leaf) of a step of
    length `dt`; 0 where y₇ = y₆."""
    weights = jnp.asarray(_Y7_MINUS_Y6)
    leaves = jax.tree.leaves(k)
    num = sum(jnp.sum((x[6] - x[5]) ** 2) for x in leaves)
    den = sum(jnp.sum(jnp.tensordot(weights, x[:6], axes=1) ** 2) for x in leaves)
    ok = (den > 0) & (dt > 0)
    return jnp.where(ok, jnp.sqrt(num / jnp.where(ok, den, 1.0)) / jnp.where(ok, dt, 1.0), 0.0)


class IndicatedTsit5(dfx.Tsit5):
    """`diffrax.Tsit5` whose solver state is `(Tsit5's state, ρ)`, ρ (1/time, ≥ 0) the
    stiffness estimate of the last accepted step (0 before the first): see the module. The
    steps, and so the solution, are Tsit5's own, bit for bit."""

    def init(self, terms, t0, t1, y0, args):
        return super().init(terms, t0, t1, y0, args), jnp.zeros((), jnp.float64)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        inner, _ = solver_state
        y1, y_error, dense, inner, result = super().step(terms, t0, t1, y0, args, inner, made_jump)
        return y1, y_error, dense, (inner, _quotient(dense["k"], t1 - t0)), result
