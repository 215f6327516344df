"""f-GAN output activations g_f, keyed by the names of the f-divergence registry
(`flows.divergences`), whose generators are normalised to f′(1) = 0.

Nowozin, Cseke & Tomioka (2016, Table 2) pair each f with an activation g that maps the
critic's raw output into dom f*. With f normalised by subtracting c·(u − 1), c = f′(1) of
their f, the conjugate shifts, f_c*(s) = f*(s + c) − c, and the objective
E_P g(V) − E_Q f*(g(V)) is unchanged when the activation is g − c (the constants cancel):
these are the g_f here. k(t) = d/dt f*(g_f(t)) is then the same for both normalisations.
"""

import math

import jax.numpy as jnp

from ..divergences._generators import expm1


def _minus_exp(v):
    return -expm1(-v)  # 1 − e^{−v}, dom f* ⊆ (−∞, 1); its derivative e^{−v} to every digit


#: name ↦ g_f (registry-normalised), elementwise on float64 arrays.
ACTIVATIONS = {
    "kl": lambda v: v - 1.0,  # Nowozin: v, c = 1
    "reverse_kl": _minus_exp,  # Nowozin: −e^{−v}, c = −1
    "chi2": lambda v: v,  # Pearson χ²: v, c = 0
    "reverse_chi2": _minus_exp,  # Neyman χ²: 1 − e^{−v}, c = 0
    "hellinger2": _minus_exp,  # squared Hellinger: 1 − e^{−v}, c = 0
    "js": lambda v: math.log(2.0) - jnp.logaddexp(0.0, -v),  # c = 0
    "jeffreys": lambda v: v,  # dom f* = ℝ (Terjék 2021), c = 0
    "triangular": _minus_exp,  # dom f* = (−∞, 1] (as Neyman's), c = 0
    "tv": lambda v: 0.5 * jnp.tanh(v),  # c = 0 (the subgradient of |u − 1|/2 at 1)
}

#: k(0) = d/dt f*(g_f(t)) at 0: the Dirac-GAN's eigenvalues at (0, 0) are ±i k(0).
K0 = {name: 1.0 for name in ACTIVATIONS} | {"kl": math.exp(-1.0), "js": 0.5, "tv": 0.5}
