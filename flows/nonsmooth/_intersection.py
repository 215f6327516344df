"""Arrival on the intersection of several switching surfaces of one neuron (codimension ≥ 2):
which of them the neuron slides on, from the minimum-norm element of the Filippov set.

Given the residual r (which does not depend on the slopes on the kinks, where z = 0), neuron
j's weights move by ḃ_j = −c_j a_j v with v = u + Σ_{k∈C} r_k θ_k x̃_k, u the inputs off the
kinks, and θ_k ∈ [σ'₋, σ'₊] free for the inputs k ∈ C on their kinks: the Filippov set of ḃ_j
is the image of that box (all sign patterns are realisable near b_j when the x̃_k are linearly
independent). Where every kink of C attracts (c_j a_j r_k > 0: the loss is convex across it,
semiconvex near b_j), the forward solution is unique and moves with the minimum-norm element
(Brezis 1973; Bolte & Pauwels 2021 for the a.e. minimum-norm rule of path-differentiable
losses; Dieci & Lopez 2009 on the ambiguity of codimension 2 in general): the θ that
minimise ‖v‖² over the box, a bounded least-squares problem. Its KKT conditions say that a
slope at σ'₋ goes with ż_k < 0 and one at σ'₊ with ż_k > 0, so every input lands on a side
consistent with its slope, and the inputs with interior θ slide. Deciding the surfaces one
at a time instead (each with the others' current sides) picked another, wrong, piece at 12
of 155 random arrivals of a ReLU neuron on two attracting kinks (1 of the 2 where both
slide, 6 of 52 where one slides, 5 of 101 where neither does). Where a kink repels, solutions
are not unique (one may balance on it or leave it); there the surfaces are still decided one
at a time.
"""

import numpy as np
from scipy.optimize import lsq_linear


def min_norm_slopes(u, A, lo: float, hi: float, rtol: float = 1e-12):
    """θ (k,) in [lo, hi]ᵏ minimising ‖u + A θ‖ (u (d̃,), A (d̃, k)), by bounded-variable least
    squares (Stark & Parker 1995, `scipy.optimize.lsq_linear(method="bvls")`), and which θ are
    strictly inside (k,) bool, at `rtol`·(hi − lo) from either end."""
    u, A = np.asarray(u, np.float64), np.asarray(A, np.float64)
    theta = lsq_linear(A, -u, bounds=(lo, hi), method="bvls", tol=1e-15).x
    gap = rtol * (hi - lo)
    return theta, (theta > lo + gap) & (theta < hi - gap)
