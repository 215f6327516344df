"""Choosing a diffrax solver by name."""

import functools
import math

import diffrax as dfx
import jax.numpy as jnp
import lineax as lx
import optimistix as optx

from ._exprb import ExpRosenbrock32
from ._exprk import ExpRK4
from ._gauss import GaussLegendre
from ._rkc import RKC

EXPLICIT = ("tsit5", "dopri5", "dopri8")
GAUSS = {"implicit_midpoint": 1, "gauss4": 2, "gauss6": 3}  # name: stages
IMPLICIT = ("kvaerno5", *GAUSS)
EXPONENTIAL = ("exprb32",)
STIFF = IMPLICIT + EXPONENTIAL  # solvers whose evaluations are counted, not computed
SEMILINEAR = ("exprk4",)  # for fields y' = Ay + N(t, y) that carry A (`ExpRK4`)
STABILIZED = ("rkc",)  # explicit, its stages chosen from the spectral radius (`RKC`)
NAMES = ("auto",) + EXPLICIT + STIFF + SEMILINEAR + STABILIZED
SOLVERS = NAMES  # public as flows.SOLVERS: every name `solver=` accepts

# Built once: diffrax makes a new class on every call, and a new class means a recompilation.
_NewtonWithControllerTols = dfx.with_stepsize_controller_tols(optx.Newton)
_ChordWithControllerTols = dfx.with_stepsize_controller_tols(dfx.VeryChord)

#: GMRES restarts every min(p, this) iterations (Hessian-vector products): a Newton system
#: of p ≤ 40 unknowns is then full GMRES, which cannot stagnate as restarted GMRES(10) did
#: on the indefinite systems I + γh∇²F of a non-convex loss (issue 21 item 5).
GMRES_RESTART = 40
#: Default cap on the Hessian-vector products of one GMRES solve inside Newton.
GMRES_MAX_ITERS = 200

#: Default of `flows.Kvaerno5.dense_max`: "kvaerno5" solves its stage equations with the
#: dense Hessian and LU up to this many state entries, and matrix-free Newton–GMRES above.
#: Measured (issue 21 item 5; two-layer tanh nets, load 10–17): one Newton system
#: (I + c∇²F)x = b costs 0.09–2.4 ms dense against 0.8–5.7 ms for GMRES(40) at p = 40, and
#: 0.6 ms against 1.1–2.0 ms at p = 100, where GMRES(10) failed to converge in 200
#: products; at p = 200 5 ms–0.36 s against 1–8 ms, at p = 400 0.2 s against 6–12 ms, at
#: p = 3,000 13–15 s against 14–37 ms. Whole solves (counting on, same steps): p = 40 to
#: t = 1e4 3.2 s against 222 s warm (323 steps), p = 100 to t = 100 13.4 s against 217 s.
KVAERNO_DENSE_MAX = 100

# New vector-field evaluations per step (first-same-as-last tableaux reuse the last stage).
EVALS_PER_STEP = {"tsit5": 6, "dopri5": 6, "dopri8": 12, "exprk4": 4}  # exprk4: of N


@functools.lru_cache(maxsize=32)
def make_solver(
    name: str,
    rtol: float,
    atol: float,
    gmres_max_iters: int = GMRES_MAX_ITERS,
    dense: bool = False,
    symmetric: bool = True,
    size: int | None = None,
):
    """The diffrax solver called `name`.

    "kvaerno5" is Kvaerno's 5th-order ESDIRK. Its root finder is matrix-free by default:
    Newton's method whose linear systems are solved by GMRES through Jacobian-vector products
    (Hessian-vector products of the objective), so no p×p matrix is ever formed. With
    `dense=True` (`integrate` asks for it up to `SolveSettings.dense_max` state entries) it
    is Newton's method with the exact dense Jacobian, formed from p batched Hessian-vector
    products at every iteration, and a direct LU solve (lineax), as MLPGradientFlow.jl does
    with its exact Hessian (Brea, Martinelli, Şimşek & Gerstner 2023).

    Each GMRES solve is capped at `gmres_max_iters` matrix-vector products (rounded up to
    whole restart cycles of min(`size`, 40, the cap)); lineax's own default, 10·p cycles,
    lets one step cost hundreds of thousands of them. A solve that exhausts the cap fails,
    Newton fails with it, and diffrax rejects the step, so a step costs at most 6 implicit
    stages × 10 Newton iterations × the cap, and `max_steps` bounds the whole solve.

    "implicit_midpoint", "gauss4" and "gauss6" are the 1-, 2- and 3-stage Gauss–Legendre
    collocation methods (orders 2, 4, 6; `GaussLegendre`): they conserve every quadratic
    invariant to the accuracy of their Newton solve (relative residual ≤ 1e-13), whatever
    `rtol`, which only sets their step size.

    "exprb32" is the exponential Rosenbrock method of Hochbruck, Ostermann & Schweitzer (2009),
    order 3 with an embedded order-2 estimate, whose φ-functions of the Jacobian (−Hessian)
    come from Lanczos through Hessian-vector products: exact on linear (quadratic-loss)
    flows, and its steps near a minimum are limited by the nonlinearity only. With
    `symmetric=False` its Krylov spaces are built by Arnoldi instead, for a field whose
    Jacobian is not symmetric (the lazy pair's, `flows.lazy.lazy_comparison`).

    "exprk4" is Krogstad's exponential Runge–Kutta method (order 4, embedded order 3;
    `ExpRK4`) for a semilinear field y' = Ay + N(t, y) that carries its constant linear part
    A (`field.split`, an `AbstractSpectralSplit`) and N (`field.nonlinear`): the lazy pair of
    the squared loss (`flows.lazy.lazy_comparison`), whose A = −c·JᵀJ is exact through the
    eigendecomposition of JJᵀ. Any other field is refused with a ValueError at trace time.

    **Arguments:** `name` (one of `NAMES` but "auto"); `rtol`, `atol` (GMRES tolerances);
    `gmres_max_iters` (≥ 1); `dense`: "kvaerno5" with the dense Jacobian and LU;
    `symmetric`: the field's Jacobian is symmetric ("exprb32": Lanczos, else Arnoldi);
    `size`: the state's entries p (GMRES restarts every min(p, 40) products; None: 40).

    **Returns:** a `diffrax.AbstractSolver`.

    **Raises:** `ValueError` for an unknown name.
    """
    if name == "tsit5":
        return dfx.Tsit5()
    if name == "dopri5":
        return dfx.Dopri5()
    if name == "dopri8":
        return dfx.Dopri8()
    if name == "kvaerno5" and dense:
        return dfx.Kvaerno5(root_finder=_NewtonWithControllerTols(linear_solver=lx.LU()))
    if name == "kvaerno5":
        # A cap below a restart cycle is one shorter cycle: the cap bounds the products.
        restart = max(1, min(GMRES_RESTART, gmres_max_iters, size or GMRES_RESTART))
        cycles = max(1, math.ceil(gmres_max_iters / restart))
        gmres = lx.GMRES(
            rtol=rtol, atol=atol, restart=restart, stagnation_iters=10, max_steps=cycles
        )
        newton = _NewtonWithControllerTols(linear_solver=gmres)
        return dfx.Kvaerno5(root_finder=newton)
    if name == "exprb32":
        return ExpRosenbrock32(jnp.asarray(rtol), jnp.asarray(atol), symmetric=symmetric)
    if name == "exprk4":
        return ExpRK4()
    if name in GAUSS:
        return GaussLegendre(stages=GAUSS[name])
    if name == "rkc":
        return RKC()
    raise ValueError(f"solver must be one of {NAMES}, got {name!r}")
