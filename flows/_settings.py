"""The solve settings: one frozen object, validated once, with the library's one set of
defaults. Every entry point (`gradient_flow`, `lazy_comparison`, `gradient_descent`) and every
CLI builds one and passes it down; nothing else checks or defaults a tolerance."""

import dataclasses

from ._checks import check_number as _number
from ._checks import check_positive, check_ts
from ._solver._solvers import NAMES
from ._solver_options import MOVED, OPTIONS, Auto, Kvaerno5, moved_error
from ._times import log_times

_MIN_RTOL = 1e-14  # a few float64 ulps: a controller asked for less only rejects steps


@dataclasses.dataclass(frozen=True)
class SolveSettings:
    """How a flow is solved: solver, tolerances and budgets.

    Built once and validated in its constructor, so that a bad setting is refused before any
    computation, with the same rule everywhere. Change fields with `.replace(rtol=...)`, which
    validates again; record them with `.to_dict()` and rebuild them with `from_dict`.

    **Fields:**
    - `solver`: a name of `flows.SOLVERS`, or a solver with its options, `flows.Auto(...)`
      or `flows.Kvaerno5(...)` (the names "auto" and "kvaerno5" mean their defaults). Which
      to choose, and the "auto" rule: "How to choose a solver", docs/solvers.md.
    - `rtol`, `atol`: tolerances of the PID step-size controller, on the solved state (and of
      the Krylov solves inside the implicit and exponential solvers). rtol ∈ [1e-14, 1):
      float64 cannot do better than a few units of its resolution 2.2e-16 per step.
      atol ≥ 0, in the state's units.
    - `max_steps`: budget of solver steps (accepted + rejected) for the whole solve, ≥ 1.
    - `chunks`: number of diffrax calls the horizon is split into (progress, checkpoints,
      stiffness tests), ≥ 1. A call ends at a save time, so a solve makes
      min(`chunks`, len(ts)) calls (its `stats["chunks"]`): a larger value, even 10**9,
      means one call per save time. It is not refused, because the default
      20 already exceeds len(ts) for a short `ts`, and no other bound follows from the settings
      alone.

    **Properties:** `name`, the solver's name; `auto` and `kvaerno5`, the options of those
    solvers (their defaults unless given as `solver`).

    **Raises:** `ValueError` naming the field when a value is out of range; `TypeError` for a
    field that is now a solver's option (`stiff_steps=...`: give `solver=flows.Auto(...)`).
    """

    solver: str | Auto | Kvaerno5 = "auto"
    rtol: float = 1e-10
    atol: float = 1e-12
    max_steps: int = 200_000
    chunks: int = 20

    def __new__(cls, *args, **fields):
        moved = [name for name in fields if name in MOVED]
        if moved:
            raise moved_error(moved)
        return super().__new__(cls)

    def __post_init__(self):
        solver = self.solver
        if isinstance(solver, tuple(OPTIONS.values())):
            if solver == type(solver)():  # the defaults: the name says it
                solver = solver.name
        elif solver not in NAMES:
            raise ValueError(
                f"solver must be one of {NAMES} or a flows.Auto/flows.Kvaerno5, got {solver!r}"
            )
        checked = {
            "rtol": _number("rtol", self.rtol, float),
            "atol": _number("atol", self.atol, float),
            "max_steps": _number("max_steps", self.max_steps, int),
            "chunks": _number("chunks", self.chunks, int),
        }
        if not _MIN_RTOL <= checked["rtol"] < 1:
            raise ValueError(
                f"rtol must lie in [{_MIN_RTOL:g}, 1) (float64 cannot do better), "
                f"got {checked['rtol']:g}"
            )
        if checked["atol"] < 0:
            raise ValueError(f"atol must be >= 0, got {checked['atol']:g}")
        for name in ("max_steps", "chunks"):
            if checked[name] < 1:
                raise ValueError(f"{name} must be >= 1, got {checked[name]}")
        for name, value in {"solver": solver, **checked}.items():
            object.__setattr__(self, name, value)

    @property
    def name(self) -> str:
        """The solver's name, one of `flows.SOLVERS`."""
        return self.solver if isinstance(self.solver, str) else self.solver.name

    @property
    def auto(self) -> Auto:
        """The options of solver "auto" (its defaults unless `solver` is a `flows.Auto`)."""
        return self.solver if isinstance(self.solver, Auto) else Auto()

    @property
    def kvaerno5(self) -> Kvaerno5:
        """The options of "kvaerno5" (its defaults unless `solver` is a `flows.Kvaerno5`)."""
        return self.solver if isinstance(self.solver, Kvaerno5) else Kvaerno5()

    def replace(self, **changes) -> "SolveSettings":
        """A copy with `changes` applied, validated again.

        **Raises:** `TypeError` for a name that is not a field (naming the solver whose
        option it is, if it is one); `ValueError` as the constructor.
        """
        fields = [f.name for f in dataclasses.fields(self)]
        unknown = sorted(set(changes) - set(fields))
        if set(unknown) & set(MOVED):
            raise moved_error([n for n in unknown if n in MOVED])
        if unknown:
            raise TypeError(
                f"unknown solve setting(s) {', '.join(unknown)}; the settings are "
                f"{', '.join(fields)}"
            )
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The settings as a plain dict of str, int and float (for results.json and the
        checkpoint's fingerprint): `solver` by name, with `solver_options`, the options of
        that solver (`{}` for one that has none)."""
        options = {}
        if self.name in OPTIONS:
            options = getattr(self, self.name).to_dict()
        return {
            "solver": self.name,
            **{k: getattr(self, k) for k in ("rtol", "atol", "max_steps", "chunks")},
            "solver_options": options,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "SolveSettings":
        """The settings `to_dict` wrote (a record read back, a Dask worker's copy).

        **Raises:** as the constructor; `TypeError` for a key that is no field."""
        d = dict(d)
        options = d.pop("solver_options", None) or {}
        name = d.get("solver", "auto")
        if options:
            if name not in OPTIONS:
                raise TypeError(f"solver {name!r} has no options, got solver_options={options}")
            d["solver"] = OPTIONS[name](**options)
        return cls(**d)


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
