"""The balance run as a grid of sweep tasks (`experiments._sweep`): one task per flow.

A task is `{"part": ..., <its settings>}` (a tolerance, a solver, a step η, an activation);
`balance_task` runs it on a worker (or in-process) and returns its record and arrays, which
the sweep writes as the task's part. `assemble` turns the finished parts into results.json's
per-part entries.
"""

from ._conservation import conservation_summary, conservation_task, conservation_tasks
from ._gd import gd_summary, gd_task, gd_tasks
from ._homogeneous import homogeneous_summary, homogeneous_task, homogeneous_tasks
from ._logistic import logistic_summary, logistic_task, logistic_tasks
from ._problem import problem_for
from ._squared import squared_summary, squared_task, squared_tasks

# part: (its tasks, one task, the part's entry of results.json from its records)
PARTS = {
    "logistic": (logistic_tasks, logistic_task, logistic_summary),
    "conservation": (conservation_tasks, conservation_task, conservation_summary),
    "gd": (gd_tasks, gd_task, gd_summary),
    "squared": (squared_tasks, squared_task, squared_summary),
    "homogeneous": (homogeneous_tasks, homogeneous_task, homogeneous_summary),
}
# Start order on a cluster: the longest tasks first (measured on the defaults), so that the
# critical path is not one slow task started last.
_START = ("conservation", "homogeneous", "squared", "logistic", "gd")


def balance_tasks(s) -> tuple[list[dict], list[int]]:
    """The tasks of settings `s`, in part order, and the order to start them in."""
    tasks = [t for part in s["parts"] for t in PARTS[part][0](s)]
    rank = {part: i for i, part in enumerate(_START)}
    order = sorted(range(len(tasks)), key=lambda i: (rank[tasks[i]["part"]], i))
    return tasks, order


def balance_task(task: dict, shared: dict, ctx) -> tuple[dict, dict | None]:
    """Run one task of the balance sweep (`experiments._sweep` task function)."""
    s = shared["settings"]
    return PARTS[task["part"]][1](problem_for(s), s, task, ctx)


def assemble(s, results) -> dict:
    """results.json's part entries from the sweep's finished `TaskResult`s (any subset);
    each record gets `file` (its part's arrays) and `task` (key, wall and CPU time, peak
    memory, worker). Parts with every task finished are listed in `finished_parts`."""
    records, expected = {}, {}
    for part in s["parts"]:
        expected[part] = len(PARTS[part][0](s))
    for r in results:
        if r is None or r.failed:
            continue
        record = dict(r.record)
        if r.arrays:
            record["file"] = f"part-{r.key}.npz"
        record["task"] = {
            "key": r.key,
            "resumed": r.resumed,
            **{k: r.stats.get(k) for k in ("wall_s", "cpu_s", "peak_rss_bytes", "worker")},
        }
        records.setdefault(r.task["part"], []).append(record)
    out = {part: PARTS[part][2](s, recs) for part, recs in records.items()}
    out["finished_parts"] = [p for p in s["parts"] if len(records.get(p, [])) == expected[p]]
    return out
