"""Markdown tables of the benchmarks' result files, for the docs (never copied by hand).

As a script, `python benchmarks/tables.py` prints every table. As a mkdocs hook (`hooks:` in
mkdocs.yml), `on_page_markdown` replaces each line `<!-- generated: NAME -->` of a docs page
with the text NAME of `TABLES`, read at build time: the tables from the JSON files in
`benchmarks/`, and `readme`, the README as the docs' home page (links made relative to docs/).
"""

import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
MARKER = re.compile(r"^<!-- generated: ([a-z_]+) -->$", re.MULTILINE)


def _read(name: str) -> dict:
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return json.load(f)


def _cell(value) -> str:
    if value is None:
        return "—"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _value(value, unit) -> str:
    if value is None:
        return "—"
    if unit == "steps" or (unit == "×" and abs(value) >= 1e4):
        digits = f"{value:,.0f}"
    else:
        digits = f"{value:.3g}"
    return f"{digits} {unit}" if unit not in ("×", "") else f"{digits}{unit}"


def _params(p) -> str:
    return "—" if p is None else f"{p:.0e}".replace("e+0", "e")


def _goal(row) -> str:
    if row.get("goal") is None:
        return "—"
    met = {True: " (yes)", False: " (**no**)", None: ""}[row.get("goal_met")]
    return f"{row['goal']}{met}"


def benchmark_rows() -> str:
    """Every row of `benchmarks/results.json`, one table per case (its title a heading, its
    commands under it): size, value, goal, both sides, note, date."""
    data = _read("results.json")
    cases = {}
    for r in sorted(data["rows"], key=lambda r: (int(r["title"].split(".")[0]), r["params"] or 0)):
        cases.setdefault(r["title"], []).append(r)
    header = ("p", "measured", "value", "goal (met)", "gradflows", "other side", "note", "on")
    parts = []
    for title, rows in cases.items():
        commands = list(dict.fromkeys(r["command"] for r in rows))
        body = [
            (
                _params(r["params"]),
                r["label"],
                _value(r["value"], r["unit"]),
                _goal(r),
                r.get("ours"),
                r.get("theirs"),
                r.get("note"),
                r["measured_at"][:10] + (" (quick)" if r.get("quick") else ""),
            )
            for r in rows
        ]
        runs = "; ".join(f"`{c}`" for c in commands)
        parts.append(f"### {title}\n\n{runs}\n\n{_table(header, body)}")
    return "\n\n".join(parts)


def benchmark_run() -> str:
    """One sentence on the latest `benchmarks/run.py` run: its command, length and load."""
    run = _read("results.json")["latest_run"]
    start, end = run["load_average_start"][0], run["load_average_end"][0]
    return (
        f"Latest run: `python benchmarks/run.py {' '.join(run['argv'])}`, started "
        f"{run['started'].replace('T', ' ')}, {run['seconds']:.0f} s, on {run['cpu_count']} "
        f"cores ({run['jax_backend']}), load average {start} at the start and {end} at the end; "
        f"jax {run['versions']['jax']}, diffrax {run['versions']['diffrax']}."
    )


def filippov_rows() -> str:
    """Every row of `benchmarks/filippov_results.json` (exact Filippov flows and baselines)."""
    data = _read("filippov_results.json")
    body = [
        (
            r["case"],
            r.get("activation") or f"α = {r['alpha']:g}",
            f"{r['t1']:.3g}" if r.get("t1") is not None else None,
            r.get("num_steps"),
            r.get("events"),
            r.get("wall_s"),
            f"{r['invariant_drift_over_rtol']:.2g}" if "invariant_drift_over_rtol" in r else None,
            f"{r['loss_final']:.2g}" if r.get("loss_final") is not None else None,
            r.get("stopped"),
        )
        for r in data["rows"]
    ]
    header = ("case", "activation", "t1", "steps", "events", "wall s", "drift / rtol", "loss")
    text = _table(header + ("stopped",), body)
    return f"{text}\n\n`{data['command']}`; rtol {data['rtol']}, atol {data['atol']}."


def sweep_run() -> str:
    """`benchmarks/sweep_results.json`: the default lazy run in one process and on two workers."""
    data = _read("sweep_results.json")
    sides = (
        ("in one process (`--workers 0`)", data["in_process"]),
        ("two workers", data["local_cluster"]),
    )
    body = [
        (
            name,
            f"{run['wall_s']:.0f}",
            f"{run['cpu_s']:.0f}",
            f"{run['cores_used']:.2f}",
            f"{run['others_cores']:.2f}",
        )
        for name, run in sides
    ]
    text = _table(("run", "wall s", "CPU s", "cores used", "cores taken by others"), body)
    spans = ", ".join(f"{float(s):.0f} s ({k})" for k, s in data["cluster_makespan_s"].items())
    return (
        f"{text}\n\nMeasured {data['date'][:10]} on {data['machine']['cores']} cores: wall "
        f"speed-up {data['speedup_wall']:.2f}×, CPU ratio {data['cpu_ratio']:.2f}, results "
        f"{'equal to the last bit' if data['same_bits'] else 'different'}. The tasks' wall "
        f"times sum to {data['task_wall_s_total']:.0f} s, critical path "
        f"{data['critical_path_s']:.0f} s; k single-thread workers would take {spans} "
        "(k in brackets; longest-first schedule of the measured times)."
    )


def readme() -> str:
    """README.md with its `docs/` links made relative to the docs folder."""
    with open(os.path.join(HERE, os.pardir, "README.md"), encoding="utf-8") as f:
        text = f.read()
    return text.replace("](docs/", "](")


TABLES = {
    "benchmark_rows": benchmark_rows,
    "benchmark_run": benchmark_run,
    "filippov_rows": filippov_rows,
    "sweep_run": sweep_run,
    "readme": readme,
}


def on_page_markdown(markdown, page=None, config=None, files=None):
    """mkdocs hook: put the generated texts in place of their markers."""
    return MARKER.sub(lambda m: TABLES[m.group(1)](), markdown)


if __name__ == "__main__":
    for name, make in TABLES.items():
        print(f"## {name}\n\n{make()}\n")
