"""The options of the solvers that have any: "auto" (`Auto`) and "kvaerno5" (`Kvaerno5`).

Give one as the solver, `SolveSettings(solver=flows.Auto(stiff_steps=100))`; the name alone
("auto", "kvaerno5") means its defaults. What the options do, and when to change them:
"How to choose a solver", docs/solvers.md.
"""

import dataclasses
from typing import ClassVar

from ._checks import check_number
from ._solver._solvers import GMRES_MAX_ITERS, KVAERNO_DENSE_MAX


class _Options:
    """Shared by the option classes: each field a whole number, checked in the constructor
    against its lower bound (`_LOWEST`), with a `ValueError` naming it."""

    name: ClassVar[str]
    _LOWEST: ClassVar[dict]

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = check_number(field.name, getattr(self, field.name), int)
            low = self._LOWEST[field.name]
            if value < low:
                raise ValueError(f"{field.name} must be >= {low}, got {value}")
            object.__setattr__(self, field.name, value)

    def to_dict(self) -> dict:
        """The fields as a plain dict of int."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Auto(_Options):
    """`solver="auto"` with its options: Tsit5, switching to exprb32 and back where that is
    cheaper, decided by stiffness tests along the solve (the rule: "How to choose a solver",
    docs/solvers.md).

    **Fields** (whole numbers):
    - `stiff_steps`: the most solver steps between two stiffness tests, ≥ 5 (with 1 or 2 a
      stiff quadratic stalled: each short call's steps were rejected and the solve made no
      progress until `max_steps`; 5 finished).
    - `stiff_tests`: positive tests in a row that switch Tsit5 to exprb32, ≥ 1.
    - `explicit_tests`: negative tests in a row that switch exprb32 back to Tsit5, ≥ 1.

    **Raises:** `ValueError` naming the field when a value is out of range.
    """

    name: ClassVar[str] = "auto"
    _LOWEST: ClassVar[dict] = {"stiff_steps": 5, "stiff_tests": 1, "explicit_tests": 1}

    stiff_steps: int = 200
    stiff_tests: int = 2
    explicit_tests: int = 2


@dataclasses.dataclass(frozen=True)
class Kvaerno5(_Options):
    """`solver="kvaerno5"` with its options: Kvaerno's implicit ESDIRK of order 5, whose
    stage equations Newton's method solves matrix-free by GMRES on Hessian-vector products
    (`flows.make_solver`; when to choose it: docs/solvers.md).

    **Fields:**
    - `gmres_max_iters`: cap on the Hessian-vector products of each GMRES solve (rounded up
      to restart cycles of min(p, 40)), ≥ 1. A solve that exhausts it rejects the step, so a step
      costs at most 6 stages × 10 Newton iterations × this cap, and `max_steps` bounds the
      whole solve.
    - `dense_max`: up to this many state entries, the stage equations are solved with the
      exact dense Jacobian (p batched Hessian-vector products per Newton iteration) and an
      LU factorisation instead of GMRES, ≥ 0. Default 100, where the dense solve was
      measured cheaper (`KVAERNO_DENSE_MAX` in flows/_solver/_solvers.py); 0: always GMRES.

    **Raises:** `ValueError` naming the field when a value is out of range.
    """

    name: ClassVar[str] = "kvaerno5"
    _LOWEST: ClassVar[dict] = {"gmres_max_iters": 1, "dense_max": 0}

    gmres_max_iters: int = GMRES_MAX_ITERS
    dense_max: int = KVAERNO_DENSE_MAX


#: The solvers that have options, by name.
OPTIONS = {cls.name: cls for cls in (Auto, Kvaerno5)}

#: The old `SolveSettings` fields, now options of a solver: field -> option class.
MOVED = {f.name: cls for cls in OPTIONS.values() for f in dataclasses.fields(cls)}


def moved_error(names) -> TypeError:
    """The `TypeError` for old `SolveSettings` field names that are now a solver's options."""
    said = "; ".join(
        f"{n} is an option of solver {MOVED[n].name!r}: solver=flows.{MOVED[n].__name__}({n}=...)"
        for n in names
    )
    return TypeError(f"{said} (no longer a field of SolveSettings)")
