"""One task of `gradflows run gan` for the sweep layer (`experiments._sweep`): a Dirac-GAN
variant, a mixture variant, or the R1 root locus."""

import numpy as np

import flows

from ._dirac import dirac_variant, r1_locus
from ._mixture import run_variant


def tasks(s: dict) -> list[dict]:
    """The run's tasks, in the order of the figures."""
    return (
        [{"part": "dirac", "variant": v} for v in s["dirac"]]
        + [{"part": "locus"}]
        + [{"part": "mixture", "variant": v} for v in s["mixture"]]
    )


def name(task: dict) -> str:
    """`dirac-gan`, `locus`, `mixture-r1`: the task's files in the run folder."""
    return "-".join([task["part"], *([task["variant"]] if "variant" in task else [])])


def gan_task(task: dict, shared: dict, ctx) -> tuple[dict, dict]:
    """Compute the arrays of `task` for the run's settings `shared`; returns (record, arrays):
    the numbers results.json keeps, and the arrays drawn from `<name>.npz`."""
    solve = flows.SolveSettings(solver=shared["solver"], rtol=shared["rtol"], atol=shared["atol"])
    if task["part"] == "locus":
        data = r1_locus(np.linspace(0.0, 2.0, 81))
        error = np.abs(data["numeric"] - data["expected"]).max()
        return {"max_error_against_closed_form": float(error)}, data
    if task["part"] == "dirac":
        data = dirac_variant(task["variant"], t1=shared["t1"], eta=shared["eta"],
                             gamma=shared["gamma"], settings=solve)  # fmt: skip
        return _dirac_record(data), data
    data = run_variant(task["variant"], t1=shared["mixture_t1"], eta=shared["mixture_eta"],
                       saves=shared["saves"], width=shared["width"], n=shared["samples"],
                       seed=shared["seed"], k=4, settings=solve)  # fmt: skip
    return _mixture_record(data), data


def _dirac_record(d: dict) -> dict:
    r = np.linalg.norm(d["orbit"], axis=1)
    record = {
        "eigenvalues_at_0": [[float(z.real), float(z.imag)] for z in d["eigenvalues"]],
        "r0": float(r[0]),
        "r_t1": float(r[-1]),
        "max_relative_drift_of_r2": float(np.max(np.abs(r**2 / r[0] ** 2 - 1))),
        "flow_steps": int(d["flow_steps"]),
    }
    if "expected" in d:
        found, expected = np.sort_complex(d["eigenvalues"]), np.sort_complex(d["expected"])
        record["eigenvalue_error"] = float(np.abs(found - expected).max())
    for key in ("simgd", "altgd"):
        path = d[key]
        record[f"{key}_steps"] = len(path) - 1
        # hypot, not norm: a map that diverged stops at entries near 1e156, whose squares
        # overflow (--gamma 1e3 failed the run with "refusing to write ... (inf)")
        record[f"{key}_r_last"] = float(np.hypot(*path[-1])) if len(path) else None
    return record


def _mixture_record(d: dict) -> dict:
    record = {"ts": d["ts"].tolist(), "flow_steps": int(d["flow_steps"])}
    for run in ("flow", "simgd", "altgd", "odegan"):
        if f"{run}_loss" not in d:
            record[run] = None
            continue
        record[run] = {
            "saves": len(d[f"{run}_loss"]),
            "loss": d[f"{run}_loss"].tolist(),
            "modes": d[f"{run}_modes"].tolist(),
            "max_real_eigenvalue": d[f"{run}_eigs"].real.max(axis=1).tolist(),
            "gap_to_flow": d[f"{run}_gap"].tolist(),
        }
    return record
