"""The performance page's headline: gradflows against each alternative, from the results files.

One record per alternative (`claims()`): how many times less time (or fewer gradient
evaluations) gradflows needs than the alternative on the same problem, the goal set for it,
whether the goal is met, the size p, and the command that reproduces it. `benchmarks/tables.py`
draws the headline figure and the short table from these records when the docs are built; the
per-row details stay in `benchmarks/results.json` and the appendix page.

Every ratio here is "alternative ÷ gradflows" (> 1: gradflows is faster), whatever way round
the row of results.json states it: a row that states gradflows ÷ the alternative is inverted,
and so is its goal.
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def _read(name: str) -> dict:
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return json.load(f)


def _row(rows, case, params, label_starts):
    for r in rows:
        if r["case"] == case and r["params"] == params and r["label"].startswith(label_starts):
            return r
    raise KeyError(f"benchmarks/results.json has no row {case!r}, p={params}, {label_starts!r}")


def _goal(text):
    """The number of a goal such as '>= 5 at p=1e5' or '<= 1.15', or None."""
    if not text:
        return None
    return float(text.split()[1])


# (alternative, unit of the ratio, case, p, the row's label starts with, True if the row states
# gradflows ÷ alternative)
# fmt: off
_ROWS = (
    ("scipy solve_ivp RK45", "time, equal error", "scipy", 100000, "RK45", False),
    ("scipy solve_ivp DOP853", "time, equal error", "scipy", 100000, "DOP853", False),
    ("torchdiffeq dopri5", "time, same tolerance", "torch", 100000, "torchdiffeq", False),
    ("torchdiffeq dopri5", "time, same tolerance", "torch", 10000, "torchdiffeq", False),
    ("bare lax.scan of GD steps", "time per gradient", "overhead", 10000, "time/grad", True),
    ("fixed-step GD, same error", "gradient evaluations", "gd", 10000, "GD grad", False),
    ("scipy BDF, exact Hessian", "time to t = 1e4 (lower bound)", "stiff", 10000, "scipy BDF",
     False),
    ("best fixed solver, vs auto", "time, worst of 9 flows", "auto_family", None,
     "worst case, warm", True),
    ("first call: bare diffrax", "time, cold process", "latency", 10000, "eqx.nn.MLP", True),
)
# fmt: on


def claims() -> list[dict]:
    """The headline records, in the order of the figure: alternative, what is compared, ratio
    (alternative ÷ gradflows), goal (same sense, or None), met (True/False/None), p, command."""
    rows = _read("results.json")["rows"]
    out = []
    for name, unit, case, params, label, inverted in _ROWS:
        r = _row(rows, case, params, label)
        goal = _goal(r.get("goal"))
        ratio = 1.0 / r["value"] if inverted else r["value"]
        if goal is not None and inverted:
            goal = 1.0 / goal
        if (
            goal is not None
            and "at p=" in r["goal"]
            and f"{params:.0e}".replace("+0", "") not in (r["goal"])
        ):
            goal = None  # the goal is set at another size
        out.append(
            dict(
                alternative=name,
                unit=unit,
                ratio=ratio,
                goal=goal,
                met=None if goal is None else ratio >= goal,
                params=params,
                command=r["command"],
                measured_at=r["measured_at"][:10],
                lower_bound="lower bound" in (r.get("note") or ""),
            )
        )
    raw = _row(rows, "overhead", 10000, "time/grad")["details"]
    out.insert(
        5,
        dict(
            alternative="bare diffrax Tsit5 loop",
            unit="time per gradient",
            ratio=1.0 / raw["gradient_flow_vs_raw_diffrax"],
            goal=None,
            met=None,
            params=10000,
            command=raw_command(rows),
            measured_at=_row(rows, "overhead", 10000, "time/grad")["measured_at"][:10],
            lower_bound=False,
        ),
    )
    euler = _read("central_euler.json")
    out.append(
        _script_claim(
            "Euler central flow (float64)",
            "wall time, compile included",
            euler["euler_float64"]["wall_s"] / euler["ours"]["wall_s_with_compile"],
            "python benchmarks/central_euler.py",
        )
    )
    out += peer_claims()
    out += peer_code_claims()
    return out


# The goal set for the peer example (docs/eos.md): ours at most a third of the Euler baseline.
PEER_GOAL = 3.0


_COLD_WARM = (("cold", "CPU time, compile included"), ("warm", "CPU time, warm"))


def _script_claim(alternative, unit, ratio, command, goal=None) -> dict:
    """A headline row measured by a script of its own (not a `run.py` case): no params, no
    measured_at; `met` against `goal` where one is set."""
    return dict(alternative=alternative, unit=unit, ratio=ratio, goal=goal,
                met=None if goal is None else ratio >= goal, params=None, command=command,
                measured_at=None, lower_bound=False)  # fmt: skip


def peer_claims() -> list[dict]:
    """The peer example against its Euler baseline (`benchmarks/central_euler_peer.json`, both
    sides timed in one process), cold (compilation included) and warm, in CPU seconds: the
    JSON's ratios are ours ÷ Euler, so inverted here."""
    peer = _read("central_euler_peer.json")
    return [
        _script_claim(
            f"Euler central flow, peer example ({peer['steps']:,} GD steps)",
            unit,
            1.0 / peer[f"ratio_{key}_cpu"],
            "python benchmarks/central_euler_peer.py",
            goal=PEER_GOAL,
        )
        for key, unit in _COLD_WARM
    ] + rkc_peer_claims(peer)


def rkc_peer_claims(peer: dict) -> list[dict]:
    """The same with our central flow by RKC (`flows._solver._rkc`) at its first tolerance
    in the JSON: warm against the Euler run of the same process, cold in a fresh process with
    its own Euler cold run (none before the JSON has RKC rows)."""
    if "rkc_at" not in peer:
        return []
    warm, cold = peer["rkc_at"][0], peer["rkc_cold"]
    rtol = f"{warm['rtol']:.0e}".replace("e-0", "e-")
    name = f"Euler central flow by RKC (rtol {rtol}), peer example"
    ratios = {"cold": cold["ratio_cold_cpu"], "warm": warm["ratio_warm_cpu"]}
    units = dict(_COLD_WARM)
    if "rkc_uncounted" in peer:  # the same solve without the count callbacks (count=False)
        ratios["uncounted"] = peer["rkc_uncounted"]["ratio_warm_cpu"]
        units["uncounted"] = "CPU time, warm, count=False"
    command = "python benchmarks/central_euler_peer.py"
    return [
        _script_claim(name, units[key], 1.0 / ratio, command, goal=PEER_GOAL)
        for key, ratio in ratios.items()
    ]


def peer_code_claims() -> list[dict]:
    """The authors' JAX code (alex-damian/central_flows_jax) on its own example against ours
    (`benchmarks/peer_central.json`, both timed in one process), cold and warm, in CPU
    seconds: the JSON's ratios are ours ÷ peer, so inverted here. No goal is set."""
    peer = _read("peer_central.json")
    return [
        _script_claim(
            f"central_flows_jax, its example ({peer['steps']:,} GD steps)",
            unit,
            1.0 / peer[f"ratio_{key}_cpu"],
            "python benchmarks/peer_central.py",
        )
        for key, unit in _COLD_WARM
    ]


def raw_command(rows) -> str:
    return _row(rows, "overhead", 10000, "time/grad")["command"]
