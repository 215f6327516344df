"""Run the benchmarks: `python benchmarks/run.py [--quick] [--cases NAME ...] [--params P ...]`.

Prints a table and writes `benchmarks/results.json` (rows of earlier runs for other cases or
sizes are kept, so cases can be measured one at a time). Every ratio is measured within one
process run, its two sides timed interleaved, best of at least `--repeats` calls, more for a
short call (until ~1.5 s in all, at most 30: `_timing.best_of`).
"""

import argparse
import datetime
import importlib.metadata
import math
import os
import platform
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "benchmarks"

import json  # noqa: E402

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

from experiments import versions, write_json  # noqa: E402

from ._cases import CASES, RUNNERS, TITLES, Config, size  # noqa: E402
from ._timing import load  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NUMBERED = {str(i + 1): name for i, name in enumerate(CASES)}
PER_SIZE = ("overhead", "scipy", "torch", "gd", "horizon", "linear", "stiff", "exprb")


def _usage_error(message: str):
    """A bad option: one line naming it on stderr, exit status 2 (as argparse's own errors)."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


def _parser():
    p = argparse.ArgumentParser(
        prog="python benchmarks/run.py",
        description="gradflows against scipy, torchdiffeq, gradient descent and closed forms.",
    )
    p.add_argument(
        "--cases",
        nargs="+",
        default=list(CASES),
        metavar="NAME",
        help=f"cases to run, by name or number: {', '.join(CASES)} (default: all)",
    )
    p.add_argument(
        "--params",
        nargs="+",
        type=float,
        default=None,
        metavar="P",
        help="parameter counts of the two-layer net (default 1e4 1e5; --quick: 1e3)",
    )
    p.add_argument("--quick", action="store_true", help="small sizes, fewer repeats (minutes)")
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed repeats, at least (default 3; quick 2; short calls more)",
    )
    p.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ablations, host profile and implicit-solver work counts (default: on unless --quick)",
    )
    p.add_argument(
        "--scipy-cap",
        type=float,
        default=None,
        metavar="SECONDS",
        help="case stiff: wall-clock cap of each scipy BDF/LSODA run (default 1200; --quick 120)",
    )
    p.add_argument(
        "--rk45-cap",
        type=float,
        default=None,
        metavar="SECONDS",
        help="case stiff: RK45 runs this long, then is extrapolated (default 60; --quick 15)",
    )
    p.add_argument("--out", default=os.path.join(HERE, "results.json"), help="results file (JSON)")
    return p


def config_from(args) -> Config:
    cases = []
    for name in args.cases:
        name = NUMBERED.get(name, name)
        if name not in CASES:
            _usage_error(f"--cases: unknown case {name!r}; choose from {', '.join(CASES)}")
        cases.append(name)
    args.cases = cases
    cfg = Config(quick=args.quick)
    if args.quick:
        cfg.params, cfg.repeats, cfg.gd_halvings, cfg.profile = (1_000,), 2, 3, False
        cfg.scipy_cap_s, cfg.rk45_cap_s = 120.0, 15.0
    if args.params:
        if not all(math.isfinite(p) and p == int(p) for p in args.params):
            _usage_error("--params: each parameter count must be a whole number, e.g. 1e4")
        if any(p < 100 for p in args.params):
            _usage_error("--params: each parameter count must be >= 100")
        cfg.params = tuple(int(p) for p in args.params)
    if args.repeats is not None:
        if args.repeats < 1:
            _usage_error("--repeats must be >= 1")
        cfg.repeats = args.repeats
    if args.profile is not None:
        cfg.profile = args.profile
    for name, value in (("scipy_cap", args.scipy_cap), ("rk45_cap", args.rk45_cap)):
        if value is not None:
            if not value > 0:
                _usage_error(f"--{name.replace('_', '-')} must be > 0 seconds")
            setattr(cfg, name + "_s", value)
    return cfg


def _value(row):
    v = row["value"]
    if v is None:
        return "—"
    unit = row["unit"]
    text = f"{v:.3g}" if isinstance(v, float) else str(v)
    return f"{text}{unit}" if unit in ("×", "s") else f"{text} {unit}"


def _met(row):
    return {True: "yes", False: "MISSED", None: ""}[row["goal_met"]]


def table(rows) -> str:
    """The rows as a plain-text table, then one line of detail per row."""
    head = ("case", "p", "what", "measured", "goal", "met")
    body = [
        (
            row["title"],
            size(row["params"]) if row["params"] else "",
            row["label"],
            _value(row),
            row["goal"] or "",
            _met(row),
        )
        for row in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(head, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(r, widths)) for r in body]
    lines.append("")
    for row in rows:
        parts = [
            f"ours: {row['ours']}" if row["ours"] else "",
            f"theirs: {row['theirs']}" if row["theirs"] else "",
            row.get("note") or "",
            f"anchor {row['anchor']}" if row["anchor"] else "",
        ]
        lines.append(f"{row['title']} ({_value(row)}): " + "; ".join(p for p in parts if p))
    return "\n".join(lines)


def _key(row):
    return (row["case"], row["params"], row["label"])


def _merge(path, rows, meta):
    """Rows of earlier runs stay unless this run measured the same case, size and label; a
    skipped row is dropped where the same case and size has a measured one."""
    old_rows, runs = [], []
    if os.path.exists(path):
        try:
            with open(path) as f:
                old = json.load(f)
            old_rows, runs = old.get("rows", []), old.get("runs", [])
        except (OSError, ValueError):
            pass
    merged = {_key(r): r for r in old_rows}
    merged.update({_key(r): r for r in rows})
    measured = {(r["case"], r["params"]) for r in merged.values() if r["value"] is not None}
    merged = [
        r
        for r in merged.values()
        if r["value"] is not None or (r["case"], r["params"]) not in measured
    ]
    merged.sort(key=lambda r: (CASES.index(r["case"]), r["params"] or 0))
    return {"latest_run": meta, "runs": (runs + [meta])[-20:], "rows": merged}


def _library_versions():
    out = versions()
    for name in ("scipy", "torch", "torchdiffeq"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def main(argv=None, overrides: dict | None = None) -> int:
    """Run the cases `argv` asks for; `overrides` replaces `Config` fields (as gpu.py does)."""
    args = _parser().parse_args(argv)
    cfg = config_from(args)
    for name, value in (overrides or {}).items():
        setattr(cfg, name, value)
    started = time.perf_counter()
    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    meta = {
        "started": stamp,
        "argv": sys.argv[1:] if argv is None else list(argv),
        "quick": cfg.quick,
        "params": list(cfg.params),
        "repeats": cfg.repeats,
        "load_average_start": load(),
        "cpu_count": os.cpu_count(),
        "machine": platform.platform(),
        "jax_backend": jax.default_backend(),
        "versions": _library_versions(),
    }
    print(
        f"benchmarks: cases {', '.join(args.cases)}; p = {', '.join(map(str, cfg.params))}; "
        f"load average {meta['load_average_start']}",
        flush=True,
    )
    rows = []
    for case in args.cases:
        sizes = cfg.params if case in PER_SIZE else cfg.params[:1]
        for params in sizes:
            print(f"  {TITLES[case]}, p={params} ...", flush=True)
            t0 = time.perf_counter()
            new = RUNNERS[case](cfg, params)
            for r in new:
                r["measured_at"] = stamp
                r["quick"] = cfg.quick
                r["case_seconds"] = time.perf_counter() - t0
            rows += new
    meta["seconds"] = time.perf_counter() - started
    meta["load_average_end"] = load()
    write_json(args.out, _merge(args.out, rows, meta))
    print()
    print(table(rows))
    print(
        f"\n{len(rows)} rows in {meta['seconds']:.0f} s (load average at end "
        f"{meta['load_average_end']}); written to {os.path.relpath(args.out)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
