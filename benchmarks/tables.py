"""Markdown tables of the benchmarks' result files, for the docs (never copied by hand).

As a script, `python benchmarks/tables.py` prints every table, and `python
benchmarks/tables.py take eos|balance RUN_FOLDER [ETA]` copies the small results that the
experiment pages' figures are drawn from into docs/figures/. As a mkdocs hook (`hooks:` in
mkdocs.yml), `on_page_markdown` replaces each line `<!-- generated: NAME -->` of a docs page
with the text NAME of `TABLES`, read at build time: the tables from the JSON files in
`benchmarks/`, and `readme`, the README as the docs' home page (links made relative to docs/).
"""

import importlib.util
import io
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


def _headline():
    """benchmarks/_headline.py, loaded by path: mkdocs loads this hook outside any package."""
    spec = importlib.util.spec_from_file_location("_headline", os.path.join(HERE, "_headline.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _times(x) -> str:
    return f"{x:,.0f}×" if x >= 100 else f"{x:.3g}×"


def headline_table() -> str:
    """The short table under the headline figure: alternative, what is compared, the ratio
    (alternative ÷ gradflows, > 1 faster), the goal and whether it is met, p."""
    body = []
    for c in _headline().claims():
        met = {True: "yes", False: "**no**", None: ""}[c["met"]]
        goal = "—" if c["goal"] is None else f"≥ {_times(c['goal'])} {met}"
        ratio = ("≥ " if c["lower_bound"] else "") + _times(c["ratio"])
        body.append((c["alternative"], c["unit"], ratio, goal, _params(c["params"])))
    return _table(("alternative", "compared", "gradflows faster by", "goal", "p"), body)


def headline_commands() -> str:
    """The commands that reproduce the headline, one per line."""
    commands = dict.fromkeys(c["command"] for c in _headline().claims())
    return "```bash\n" + "\n".join(commands) + "\n```"


def headline_figure() -> bytes:
    """The headline figure as PNG bytes: one bar per alternative, the ratio on a log axis,
    the goal marked, bars coloured by whether the goal is met."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    claims = _headline().claims()[::-1]
    colour = {True: "tab:green", False: "tab:red", None: "tab:blue"}
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(claims) + 1.4), layout="constrained")
    y = range(len(claims))
    ax.barh(y, [c["ratio"] for c in claims], color=[colour[c["met"]] for c in claims], height=0.6)
    for i, c in enumerate(claims):
        if c["goal"] is not None:
            ax.plot([c["goal"]] * 2, [i - 0.4, i + 0.4], color="black", lw=2.5)
        text = ("≥ " if c["lower_bound"] else "") + _times(c["ratio"])
        ax.text(max(c["ratio"], c["goal"] or 0) * 1.12, i, text, va="center", fontsize=9)
    p = [f" (p = {_params(c['params'])})" if c["params"] else "" for c in claims]
    ax.set_yticks(list(y), [f"{c['alternative']}{q}\n{c['unit']}" for c, q in zip(claims, p)])
    ax.tick_params(axis="y", labelsize=8)
    ax.set_xscale("log")
    ax.axvline(1.0, color="grey", lw=1, ls="--")
    ax.set_xlim(0.1, 3e5)
    ax.set_xlabel(
        "alternative ÷ gradflows (time, or gradient evaluations where said); > 1: gradflows faster"
    )
    ax.plot([], [], color="black", lw=2.5, label="goal")
    for met, name in ((True, "goal met"), (False, "goal missed"), (None, "no goal set")):
        ax.barh([0], [0], color=colour[met], label=name)
    ax.legend(loc="lower right", fontsize=8)
    goals = [c for c in claims if c["met"] is not None]
    faster = sum(c["ratio"] > 1 for c in claims)
    ax.set_title(
        f"gradflows is faster than {faster} of {len(claims)} alternatives on the same problem; "
        f"{sum(c['met'] for c in goals)} of {len(goals)} goals met\n(benchmarks/results.json and "
        "central_euler(_peer).json; float64; both sides of a ratio timed in one process)",
        fontsize=10,
    )
    png = _png(fig)
    plt.close(fig)
    return png


#: The committed small results of the experiment pages' main figures: per experiment, the
#: results.json keys and the run-folder files its figure reads (`take` copies them from a run).
RUN_FIGURES = os.path.join(HERE, os.pardir, "docs", "figures")


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


def _run_results(name: str) -> tuple[str, dict]:
    folder = os.path.join(RUN_FIGURES, name)
    with open(os.path.join(folder, "results.json"), encoding="utf-8") as f:
        return folder, json.load(f)


def eos_figure() -> bytes:
    """docs/eos.md's figure: `experiments.eos` `eta_figure` of the committed η's run."""
    import numpy as np

    from experiments.eos._plots import eta_figure

    folder, res = _run_results("eos")
    (run,) = res["runs"]
    with np.load(os.path.join(folder, run["file"])) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return _png(eta_figure(run, arrays, res["config"]))


def balance_figure() -> bytes:
    """docs/balance.md's figure: `experiments.balance` `drift_figure` of the committed runs."""
    from experiments.balance._plots import drift_figure

    folder, res = _run_results("balance")
    return _png(drift_figure(folder, res))


def take(experiment: str, run_folder: str, eta: float | None = None) -> None:
    """Copy into docs/figures/EXPERIMENT/ what the page's figure reads from a finished run
    folder: results.json cut to those entries, and their .npz parts (a few to 100 KB each)."""
    import shutil

    with open(os.path.join(run_folder, "results.json"), encoding="utf-8") as f:
        res = json.load(f)
    if experiment == "eos":
        runs = [r for r in res["runs"] if eta is None or r["eta"] == eta][:1]
        cut = {"config": res["config"], "runs": runs}
    elif experiment == "balance":
        cut = {k: res[k] for k in ("settings", "data", "versions", "logistic", "gd")}
        runs = cut["logistic"]["runs"] + cut["gd"]["runs"]
    else:
        raise ValueError(f"no page figure for {experiment!r}: eos or balance")
    out = os.path.join(RUN_FIGURES, experiment)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for r in runs:
        shutil.copy(os.path.join(run_folder, r["file"]), out)
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(cut, f, indent=1)


#: Figures the docs build makes (`on_files`): path under docs/ → function returning PNG bytes.
FIGURES = {
    "generated/performance.png": headline_figure,
    "generated/eos.png": eos_figure,
    "generated/balance.png": balance_figure,
}


def benchmark_rows(case: str | None = None) -> str:
    """Every row of `benchmarks/results.json` (or those of one `case`), one table per case
    (its title a heading, its commands under it): size, value, goal, both sides, note, date."""
    data = _read("results.json")
    cases = {}
    for r in sorted(data["rows"], key=lambda r: (int(r["title"].split(".")[0]), r["params"] or 0)):
        if case is None or r["case"] == case:
            cases.setdefault(r["title"], []).append(r)
    header = ("p", "measured", "value", "goal (met)", "gradflows", "other side", "note, date")
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
                "; ".join(filter(None, (r.get("note"), r["measured_at"][:10])))
                + (" (quick)" if r.get("quick") else ""),
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


def _short(x: float) -> str:
    """x in the docs' exponent form: 5.8e-13, 1.0e-3."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def central_euler_peer() -> str:
    """`benchmarks/central_euler_peer.json`: ours against the Euler baseline on the peer
    example, cold and warm CPU seconds and how closely each holds S at 2/η past the edge;
    then ours warm at each tolerance against the same Euler run."""
    d = _read("central_euler_peer.json")
    body = [
        (
            f"{name}, CPU",
            f"{d[f'ours_{key}_cpu_s']:.1f} s",
            f"{d[f'euler_{key}_cpu_s']:.1f} s",
            f"{d[f'ratio_{key}_cpu']:.2f}",
        )
        for key, name in (
            ("cold", "cold (compilation included)"),
            ("warm", "warm (the solve alone)"),
        )
    ]
    body.append(
        (
            "max |S·η/2 − 1| past the edge",
            _short(d["ours_max_edge_error"]),
            _short(d["euler_max_edge_error"]),
            "",
        )
    )
    body.append(
        (
            "Hessian-vector products",
            f"{d['ours_stats']['hvps']:,}",
            f"{d['euler_hvps']:,}" if "euler_hvps" in d else "—",
            "",
        )
    )
    head = (
        "",
        f"ours (Tsit5, rtol {d.get('rtol', 1e-10):g})",
        "Euler, 4 substeps",
        "ours ÷ Euler",
    )
    load = f"load average {d['load_start'][0]:.1f} at the start, {d['load_end'][0]:.1f} at the end"
    out = f"{_table(head, body)}\n\n{d['steps']:,} GD steps at η = {d['eta']:g}; {load}."
    rows = [dict(rtol=d.get("rtol"), atol=d.get("atol"), warm_cpu_s=d["ours_warm_cpu_s"],
                 ratio_warm_cpu=d["ratio_warm_cpu"], max_edge_error=d["ours_max_edge_error"],
                 **d["ours_stats"])] + d.get("ours_at", [])  # fmt: skip
    if len(rows) > 1 and all("path_error" in r for r in rows):
        rows.sort(key=lambda r: r["rtol"])
        ref = rows[0]["rtol"]
        rows = [{**r, "solver": "Tsit5"} for r in rows]
        rows += [{**r, "solver": "RKC"} for r in d.get("rkc_at", [])]
        body = [
            (
                f"{r['solver']} {r['rtol']:g} / {r['atol']:g}",
                f"{r['num_steps']:,} ({r['num_rejected_steps']:,})",
                f"{r['hvps']:,}",
                f"{r['warm_cpu_s']:.1f} s",
                f"{r['ratio_warm_cpu']:.2f}",
                _short(r["max_edge_error"]),
                _short(r["path_error"])
                if (r["solver"], r["rtol"]) != ("Tsit5", ref)
                else "(reference)",
            )
            for r in rows
        ]
        if "euler_path_error" in d:
            euler = ("Euler, 4 substeps", "4,000 substeps", f"{d['euler_hvps']:,}",
                     f"{d['euler_warm_cpu_s']:.1f} s", "1.00", _short(d["euler_max_edge_error"]),
                     _short(d["euler_path_error"]))  # fmt: skip
            body.append(euler)
        head = ("ours' solver, rtol / atol", "steps (rejected)", "products", "CPU, warm",
                "÷ Euler", "max \\|S·η/2 − 1\\|", "path vs tightest")  # fmt: skip
        out += "\n\n" + _table(head, body)
    if "rkc_cold" in d:
        c = d["rkc_cold"]
        out += (f"\n\nRKC at rtol {_short(c['rtol'])} cold, in a fresh process: "
                f"{c['rkc_cold_cpu_s']:.1f} s of CPU against Euler's "
                f"{c['euler_cold_cpu_s']:.1f} s there, ratio {c['ratio_cold_cpu']:.2f} "
                f"(load {c['load_start'][0]:.1f}).")  # fmt: skip
    if "rkc_uncounted" in d:
        u = d["rkc_uncounted"]
        same = "the same" if u["same_steps"] and u["same_final_loss"] else "NOT the same"
        out += (f" Without the count callbacks (`count=False`; {same} steps and final loss), "
                f"RKC at rtol {_short(u['rtol'])} warm: {u['warm_cpu_s']:.1f} s of CPU, "
                f"{u['ratio_warm_cpu']:.2f} of Euler's.")  # fmt: skip
    return out


def peer_central() -> str:
    """`benchmarks/peer_central.json`: the authors' JAX code and ours run on its own example in
    one process: CPU and wall seconds, cold and warm, how closely each holds the top effective
    eigenvalue at 2 past its edge, and each predicted loss against GD's smoothed loss."""
    d = _read("peer_central.json")
    body = [
        (
            f"{name}, {clock}",
            f"{d[f'ours_{key}'][f'{clock.lower()}_s']:.1f} s",
            f"{d[f'peer_{key}'][f'{clock.lower()}_s']:.1f} s",
            f"{d[f'ratio_{key}_{clock.lower()}']:.2f}",
        )
        for key, name in (("cold", "cold (compilation included)"), ("warm", "warm"))
        for clock in ("CPU", "wall")
    ]
    body.append(
        (
            "first call, one GD step, in a fresh process (cold start)",
            _cpu_wall(d["ours_first_call"]["cpu_s"], d["ours_first_call"]["wall_s"]),
            _cpu_wall(d["peer_cold"]["first_call_cpu_s"], d["peer_cold"]["first_call_wall_s"]),
            "",
        )
    )
    body.append(
        (
            "max |λ₁·η/2 − 1| past the edge",
            _short(d["ours_max_edge_error"]),
            _short(d["peer_max_edge_error"]),
            "",
        )
    )
    for window, name in (("after_edge", "past our edge"), ("centred", "centred")):
        body.append(
            (
                f"predicted loss vs GD's smoothed loss, {name}: mean, max",
                _percent_pair(d["ours_predicted_loss"][window]),
                _percent_pair(d["peer_predicted_loss"][window]),
                "",
            )
        )
    head = ("", "ours (Tsit5, default rtol 1e-10, k = 1)", "peer (Euler, 4 substeps, 5 tracked)",
            "ours ÷ peer")  # fmt: skip
    load = f"load average {d['load_start'][0]:.1f} at the start, {d['load_end'][0]:.1f} at the end"
    commit = (d["peer_versions"]["peer_commit"] or "?")[:7]
    return (
        f"{_table(head, body)}\n\n{d['steps']:,} GD steps at η = {d['eta']:g}, weights "
        f"{d['weights']}; alex-damian/central_flows_jax at {commit}, flax "
        f"{d['peer_versions']['flax']}, cvxpy {d['peer_versions']['cvxpy']}, JAX "
        f"{d['versions']['jax']}; {load}."
    )


def _cpu_wall(cpu: float, wall: float) -> str:
    return f"{cpu:.1f} s CPU, {wall:.1f} s wall"


def _percent_pair(e: dict) -> str:
    return f"{100 * e['mean']:.1f} %, {100 * e['max']:.1f} %"


def readme() -> str:
    """README.md with its `docs/` links made relative to the docs folder."""
    with open(os.path.join(HERE, os.pardir, "README.md"), encoding="utf-8") as f:
        text = f.read()
    return text.replace("](docs/", "](")


TABLES = {
    "headline_table": headline_table,
    "headline_commands": headline_commands,
    "benchmark_rows": benchmark_rows,
    "transport_rows": lambda: benchmark_rows("transport"),
    "benchmark_run": benchmark_run,
    "filippov_rows": filippov_rows,
    "sweep_run": sweep_run,
    "central_euler_peer": central_euler_peer,
    "peer_central": peer_central,
    "readme": readme,
}


def on_files(files, config):
    """mkdocs hook: add the generated figures (`FIGURES`) to the site, made at build time."""
    from mkdocs.structure.files import File

    for path, make in FIGURES.items():
        files.append(File.generated(config, path, content=make()))
    return files


def on_page_markdown(markdown, page=None, config=None, files=None):
    """mkdocs hook: put the generated texts in place of their markers."""
    return MARKER.sub(lambda m: TABLES[m.group(1)](), markdown)


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["take"]:  # python benchmarks/tables.py take eos RUN_FOLDER [ETA]
        take(sys.argv[2], sys.argv[3], float(sys.argv[4]) if len(sys.argv) > 4 else None)
        sys.exit(0)
    for name, make in TABLES.items():
        print(f"## {name}\n\n{make()}\n")
