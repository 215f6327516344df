"""results.json's content and the summary line."""

from ._design import DIVERGENCES


def results(results, s) -> dict:
    """The table {f: {ε: cell record}} and the flows' records, JSON-ready (no NaN)."""
    cells = {f: {} for f in DIVERGENCES}
    flows = {}
    for r in results:
        if r.task["measure"] == "cell":
            cells[r.task["divergence"]][f"{r.task['eps']:g}"] = {
                **r.record,
                "wall_s": r.stats.get("wall_s"),
            }
        else:
            flows[r.task["divergence"]] = r.record
    smallest = {
        f: min((float(e) for e, c in by_eps.items() if c["converged"]), default=None)
        for f, by_eps in cells.items()
    }
    return {"cells": cells, "flows": flows, "smallest_converged_eps": smallest}


def summary_line(res: dict, folder: str) -> str:
    conv = sum(c["converged"] for by in res["cells"].values() for c in by.values())
    total = sum(len(by) for by in res["cells"].values())
    means = ", ".join(f"{f} {r['mean_error']:.1e}" for f, r in res["flows"].items())
    return (
        f"transport: {conv} of {total} (f, ε) cells converged; flows' mean vs e^-t: {means} "
        f"— {folder}"
    )
