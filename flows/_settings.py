"""The solve settings: one frozen object, validated once, with the library's one set of
defaults. Every entry point (`gradient_flow`, `lazy_comparison`, `gradient_descent`) and every
CLI builds one and passes it down; nothing else checks or defaults a tolerance."""

import dataclasses

from ._checks import check_number as _number
from ._checks import check_positive, check_ts
from ._solver._solvers import GMRES_MAX_ITERS, KVAERNO_DENSE_MAX, NAMES
from ._times import log_times

_MIN_RTOL = 1e-14  # a few float64 ulps: a controller asked for less only rejects steps


@dataclasses.dataclass(frozen=True)
class SolveSettings:
    """How a flow is solved: solver, tolerances and budgets.

    Built once and validated in its constructor, so that a bad setting is refused before any
    computation, with the same rule everywhere. Change fields with `.replace(rtol=...)`, which
    validates again; record them with `.to_dict()`.

    **Fields:**
    - `solver`: "tsit5", "dopri5", "dopri8" (explicit Runge–Kutta), "kvaerno5" (implicit,
      matrix-free Newton–GMRES), "implicit_midpoint", "gauss4", "gauss6" (Gauss–Legendre,
      conserving quadratic invariants to round-off), "exprb32" (exponential Rosenbrock,
      matrix-free Lanczos) or "auto" (its rule: "How to choose a solver", docs/solvers.md).
    - `rtol`, `atol`: tolerances of the PID step-size controller, on the solved state (and of
      the GMRES solves inside Newton). rtol ∈ [1e-14, 1): float64 cannot do better than a
      few units of its resolution 2.2e-16 per step. atol ≥ 0, in the state's units.
    - `max_steps`: budget of solver steps (accepted + rejected) for the whole solve, ≥ 1.
    - `chunks`: number of diffrax calls the horizon is split into (progress, checkpoints,
      stiffness tests), ≥ 1.
    - `stiff_steps`: with `solver="auto"`, the most solver steps between two stiffness tests
      (tests are 10 steps apart after a switch, and the gap doubles after every test that
      keeps the solver, up to this), ≥ 1.
    - `stiff_tests`: with `solver="auto"`, switch from Tsit5 to exprb32 after this many
      positive stiffness tests in a row (h·λ̂ ≥ 0.8 × Tsit5's stability boundary 3.5, h the
      step Tsit5's controller proposes, λ̂ the Hessian's λ_max by Lanczos), ≥ 1; doubled
      after each switch back (the stiff solver did not pay there).
    - `explicit_tests`: with `solver="auto"`, switch back to Tsit5 after this many negative
      tests in a row (Tsit5's steps would cost less than half exprb32's measured ones:
      6·max(1, h·λ̂/3.5) < c_s/2, h the step exprb32's controller proposes, c_s its measured
      gradients per step), ≥ 1.
    - `gmres_max_iters`: cap on the Hessian-vector products of each GMRES solve inside the
      implicit solver's Newton iterations (rounded up to restart cycles of 10), ≥ 1. A solve
      that exhausts it rejects the step, so `max_steps` and this cap bound the total work:
      at most 6 stages × 10 Newton iterations × `gmres_max_iters` Hessian-vector
      products per Kvaerno5 step.
    - `dense_max`: up to this many state entries "kvaerno5" solves its stage equations with
      the exact dense Jacobian (p batched Hessian-vector products per Newton iteration) and
      an LU factorisation instead of GMRES (`flows.make_solver`), ≥ 0; default 0, always
      GMRES, which was faster on every network measured (see `KVAERNO_DENSE_MAX`); a
      full-rank, ill-conditioned Hessian on which GMRES needs ~p products may gain from it.

    **Raises:** `ValueError` naming the field when a value is out of range.
    """

    solver: str = "auto"
    rtol: float = 1e-10
    atol: float = 1e-12
    max_steps: int = 200_000
    chunks: int = 20
    stiff_steps: int = 200
    stiff_tests: int = 2
    explicit_tests: int = 2
    gmres_max_iters: int = GMRES_MAX_ITERS
    dense_max: int = KVAERNO_DENSE_MAX

    def __post_init__(self):
        if self.solver not in NAMES:
            raise ValueError(f"solver must be one of {NAMES}, got {self.solver!r}")
        checked = {
            "rtol": _number("rtol", self.rtol, float),
            "atol": _number("atol", self.atol, float),
            "max_steps": _number("max_steps", self.max_steps, int),
            "chunks": _number("chunks", self.chunks, int),
            "stiff_steps": _number("stiff_steps", self.stiff_steps, int),
            "stiff_tests": _number("stiff_tests", self.stiff_tests, int),
            "explicit_tests": _number("explicit_tests", self.explicit_tests, int),
            "gmres_max_iters": _number("gmres_max_iters", self.gmres_max_iters, int),
            "dense_max": _number("dense_max", self.dense_max, int),
        }
        if not _MIN_RTOL <= checked["rtol"] < 1:
            raise ValueError(
                f"rtol must lie in [{_MIN_RTOL:g}, 1) (float64 cannot do better), "
                f"got {checked['rtol']:g}"
            )
        for name in ("atol", "dense_max"):
            if checked[name] < 0:
                raise ValueError(f"{name} must be >= 0, got {checked[name]:g}")
        for name in (
            "max_steps",
            "chunks",
            "stiff_steps",
            "stiff_tests",
            "explicit_tests",
            "gmres_max_iters",
        ):
            if checked[name] < 1:
                raise ValueError(f"{name} must be >= 1, got {checked[name]}")
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def replace(self, **changes) -> "SolveSettings":
        """A copy with `changes` applied, validated again.

        **Raises:** `TypeError` for a name that is not a field; `ValueError` as the
        constructor.
        """
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise TypeError(
                f"unknown solve setting(s) {', '.join(unknown)}; the settings are "
                f"{', '.join(f.name for f in dataclasses.fields(self))}"
            )
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The fields as a plain dict of str, int and float (for results.json)."""
        return dataclasses.asdict(self)


def resolve_settings(settings: SolveSettings | None, overrides: dict) -> SolveSettings:
    """`settings` (default: `SolveSettings()`) with the keyword overrides of an entry point
    applied: `gradient_flow(..., rtol=1e-10)` is `settings=SolveSettings(rtol=1e-10)`."""
    if settings is None:
        settings = SolveSettings()
    elif not isinstance(settings, SolveSettings):
        raise ValueError(f"settings must be a flows.SolveSettings, got {type(settings).__name__}")
    return settings.replace(**overrides) if overrides else settings


def resolve_flow_inputs(t1, ts, settings: SolveSettings | None, overrides: dict):
    """The inputs every flow entry point (`gradient_flow`, `lazy_comparison`,
    `filippov_flow`) shares: `t1` checked finite and > 0; `ts` checked, or by default
    `log_times(t1, 100)` from 1e-3·min(1, t1); `settings` resolved by `resolve_settings`.
    Returns `(t1, ts, settings)`; raises the `ValueError` or `TypeError` of each check."""
    t1 = check_positive("t1", t1)
    ts = log_times(t1, 100, t_min=1e-3 * min(1.0, t1)) if ts is None else check_ts(ts, t1)
    return t1, ts, resolve_settings(settings, overrides)
