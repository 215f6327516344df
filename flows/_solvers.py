"""Choosing a diffrax solver by name."""

import functools

import diffrax as dfx
import lineax as lx
import optimistix as optx

EXPLICIT = ("tsit5", "dopri5", "dopri8")
IMPLICIT = ("kvaerno5",)
NAMES = ("auto",) + EXPLICIT + IMPLICIT

# Built once: diffrax makes a new class on every call, and a new class means a recompilation.
_NewtonWithControllerTols = dfx.with_stepsize_controller_tols(optx.Newton)

# New vector-field evaluations per step (first-same-as-last tableaux reuse the last stage).
EVALS_PER_STEP = {"tsit5": 6, "dopri5": 6, "dopri8": 12}


@functools.lru_cache(maxsize=32)
def make_solver(name: str, rtol: float, atol: float):
    """The diffrax solver called `name`.

    "kvaerno5" is Kvaerno's 5th-order ESDIRK with a matrix-free root finder: Newton's method
    whose linear systems are solved by GMRES through Jacobian-vector products (Hessian-vector
    products of the objective), so no p×p matrix is ever formed. diffrax's default Kvaerno root
    finder builds a dense Jacobian, unusable beyond ~10³ parameters.
    """
    if name == "tsit5":
        return dfx.Tsit5()
    if name == "dopri5":
        return dfx.Dopri5()
    if name == "dopri8":
        return dfx.Dopri8()
    if name == "kvaerno5":
        gmres = lx.GMRES(rtol=rtol, atol=atol, restart=10, stagnation_iters=10)
        newton = _NewtonWithControllerTols(linear_solver=gmres)
        return dfx.Kvaerno5(root_finder=newton)
    raise ValueError(f"solver must be one of {NAMES}, got {name!r}")
