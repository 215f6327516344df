"""Options every experiment shares: usage errors, list options, bounded numbers, solver settings.

Parsing rules, the same in every experiment:
- a list option takes values separated by commas or spaces (`--alphas 1,10,100` or
  `--alphas 1 10 100`), negative numbers included (`--alphas -1,10` is parsed, then refused
  by name if out of range);
- every message names the flag as typed (`--n-train`), never a Python name;
- solver settings are one `flows.SolveSettings`, built (and so validated by the library's own
  rule) before any computation or file.

Nothing here imports JAX at module level, so `gradflows list` stays cheap.
"""

import argparse
import math
import re

# A token that starts like a negative number is a value, never a flag. argparse would take
# "-1,10" for an unknown option; a leading space makes it a value (argparse treats any token
# containing a space as positional), and float()/int() ignore the space.
_NEGATIVE = re.compile(r"^-\.?\d")

SOLVERS = ("tsit5", "dopri5", "dopri8", "kvaerno5", "auto")  # the CLI's subset of flows.SOLVERS


class UsageError(ValueError):
    """Bad input from the command line: printed as one line, exit code 2."""


def flag(dest: str) -> str:
    """The flag of an argparse destination: `n_train` → `--n-train`."""
    return "--" + dest.replace("_", "-")


def protect_negative_values(argv: list[str]) -> list[str]:
    """`argv` with tokens such as `-1,10` or `-0.5` marked as values for argparse."""
    return [f" {a}" if _NEGATIVE.match(a) else a for a in argv]


def add_list(group, name: str, *, default, help: str, metavar: str | None = None) -> None:
    """A list option: values separated by commas and/or spaces; parse with `parse_list`."""
    group.add_argument(name, nargs="+", default=default, metavar=metavar, help=help)


def parse_list(name: str, values, kind=float, *, positive=False, count=None, unique=False) -> list:
    """The values of list option `name` (a string or argparse's list of strings), converted
    with `kind` (float, int or str); `positive` requires finite values > 0, `count` an exact
    number of values, `unique` each value once. An empty entry ("1,,10", "1,") is refused,
    not dropped. Raises `UsageError` naming `name` and the offending value."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    for v in values:
        if re.search(r"(^|,)\s*(,|$)", str(v).strip()) and str(v).strip():
            raise UsageError(f"{name}: an empty entry in {str(v)!r}")
    tokens = [t for v in values for t in re.split(r"[,\s]+", str(v)) if t]
    if not tokens:
        raise UsageError(f"{name} is empty: give at least one value")
    out = []
    for token in tokens:
        try:
            value = kind(token)
        except ValueError:
            what = {float: "number", int: "whole number"}.get(kind, "value")
            raise UsageError(f"{name}: {token!r} is not a {what}") from None
        if kind is float and not math.isfinite(value):
            raise UsageError(f"{name} must be finite numbers, got {token}")
        if positive and not value > 0:
            raise UsageError(f"{name} must be > 0, got {token}")
        out.append(value)
    if count is not None and len(out) != count:
        raise UsageError(f"{name} takes {count} values, got {len(out)} ({' '.join(tokens)})")
    if unique and len(set(out)) < len(out):
        raise UsageError(f"{name}: each value once, got {','.join(tokens)}")
    return out


def shown(value: float) -> str:
    """A number as a user would type it: the shortest text that reads back as `value`, without
    a trailing ".0" (`-5.0` → "-5", `0.1` → "0.1", `1e-20` → "1e-20")."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def note_defaults(parser: argparse.ArgumentParser) -> None:
    """Append "(default: X)" to the help of every option of `parser` that has a default and
    does not state one: X as typed (a list comma-separated, `-5.0` as -5). Flags without a
    value (`--no-progress`) and options defaulting to None ("not given") are left alone."""
    for action in parser._actions:
        value = action.default
        if (
            value is None
            or action.nargs == 0
            or not action.help
            or action.help is argparse.SUPPRESS
        ):
            continue
        if "default" in action.help.lower():
            continue
        if isinstance(value, (list, tuple)):
            text = ",".join(map(str, value))
        else:
            text = shown(value) if isinstance(value, float) else str(value)
        action.help += f" (default: {text})".replace("%", "%%")


def positive(name: str, value, *, allow_zero=False) -> float:
    """`value` as a finite float > 0 (≥ 0 with `allow_zero`), or a `UsageError` naming `name`
    and echoing the value as typed (`shown`)."""
    value = float(value)
    if not (math.isfinite(value) and (value >= 0 if allow_zero else value > 0)):
        bound = ">=" if allow_zero else ">"
        raise UsageError(f"{name} must be finite and {bound} 0, got {shown(value)}")
    return value


def bounded(name: str, value: int, low: int, high: int) -> int:
    """`value` if low ≤ value ≤ high, else a `UsageError` naming `name`."""
    if not low <= value <= high:
        raise UsageError(f"{name} must lie in [{low}, {high}], got {value}")
    return value


def add_solver_options(
    parser: argparse.ArgumentParser,
    *,
    solver: str | None = "tsit5",
    max_steps: bool = True,
    max_steps_help: str = "step budget of each solve",
    solvers: tuple = SOLVERS,
    solver_help: str = "diffrax solver, or 'auto' (Tsit5, exprb32 where cheaper)",
    default_in_help: bool = False,
    solver_option: bool = False,
) -> argparse._ArgumentGroup:
    """The solver group: `--solver` (unless `solver` is None: fixed by the experiment; with
    `solver_option`, offered with the default None, which the experiment resolves),
    `--rtol`, `--atol`, `--max-steps` (with `max_steps`). The tolerances and the budget
    default to None, "not given": `solve_settings` then takes `flows.SolveSettings`'s own
    defaults, the library's one set (not restated here: building a parser imports no JAX)."""
    g = parser.add_argument_group("solver (validated as flows.SolveSettings before any work)")
    if solver is not None or solver_option:
        g.add_argument(
            "--solver",
            choices=solvers,
            default=solver,
            help=solver_help if default_in_help else f"{solver_help}; default %(default)s",
        )
    library = "default: flows.SolveSettings's, recorded in config.json"
    g.add_argument("--rtol", type=float, help=f"relative tolerance ({library})")
    g.add_argument("--atol", type=float, help=f"absolute tolerance ({library})")
    if max_steps:
        g.add_argument("--max-steps", type=int, help=f"{max_steps_help} ({library})")
    return g


def solve_settings(flags: dict | None = None, **fields):
    """`flows.SolveSettings(**fields)`, fields that are None left out (not given: the
    library's defaults); its `ValueError` becomes a `UsageError` that names the flag (`flags`
    maps a field to the flag that set it; default `--rtol`, `--max-steps`, …)."""
    import flows  # JAX only once a run starts

    fields = {k: v for k, v in fields.items() if v is not None}
    try:
        return flows.SolveSettings(**fields)
    except ValueError as e:
        message = " ".join(str(e).split())
        field = message.split(" ", 1)[0]
        if field in fields:
            name = (flags or {}).get(field, flag(field))
            message = f"{name}{message[len(field) :]}"
        # a flag takes a name: the Python objects the library also accepts are not for it
        message = message.replace(" or a flows.Auto/flows.Kvaerno5", "")
        raise UsageError(message) from None


def add_data_options(
    parser: argparse.ArgumentParser,
    *,
    files: bool,
    classes: str = "3,8",
    n_train: int = 100,
    n_test: int | None = 100,
) -> argparse._ArgumentGroup:
    """The data group: `--data` (digits, teacher or a FILE, when `files`), `--classes`,
    `--n-train`, `--n-test` (unless None), and for files `--target` and `--task`."""
    g = parser.add_argument_group("data")
    if files:
        g.add_argument(
            "--data",
            default="digits",
            help="'digits' (scikit-learn's bundled 8x8 digits, two classes, targets ±1), "
            "'teacher' (inputs on the sphere, ReLU teacher), or a .csv/.npz FILE "
            "(CSV: header row, numeric columns, one named by --target, UTF-8 with or without a "
            "byte order mark; a pandas index column is dropped; NPZ: arrays X (n, d) and the "
            "--target array (n,)). Default: %(default)s",
        )
    add_list(g, "--classes", default=classes, help=f"digits: two classes ({classes})")
    g.add_argument("--n-train", type=int, default=n_train, help="training points (%(default)d)")
    if n_test is not None:
        g.add_argument("--n-test", type=int, default=n_test, help="held-out points (%(default)d)")
    if files:
        g.add_argument("--target", default="target", help="FILE: target column/array (target)")
        g.add_argument(
            "--task",
            choices=("auto", "classification", "regression"),
            default="auto",
            help="FILE: classification maps a two-valued target to ±1 and refuses more values; "
            "regression uses the values as they are; auto (default) is classification for two "
            "values, regression otherwise. The choice is printed and recorded",
        )
    return g


def parse_classes(values) -> list[int]:
    """`--classes`: two different digits in 0..9."""
    classes = parse_list("--classes", values, int, count=2)
    if classes[0] == classes[1] or not all(0 <= c <= 9 for c in classes):
        raise UsageError(
            f"--classes must be two different digits in 0..9, got {classes[0]},{classes[1]}"
        )
    return classes
