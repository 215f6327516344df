"""One task of the ntk sweep (`experiments._sweep`), as a worker runs it."""

import jax

from . import _compute as compute
from ._design import DATASETS, SCHEMES


def measure(task: dict, shared: dict, ctx) -> tuple[dict, dict]:
    """The errors of every seed at one base width, or cond(K∞) over the depth grid.

    `task` is one of `_design.tasks`; `shared` holds the run's `settings`, the inputs `X`
    (data set name -> (n, 64) array), the `activations` (name -> (a, b), in run order) and the
    `depths`. The keys of the networks depend only on the run's seed and the task's place in
    the grid, so any worker, in any order, builds the same networks.

    **Returns:** (record, arrays): for errors, the seed-mean error and `errors` (S,); for
    cond(K∞), `lambda` (2, D): λ_min and λ_max of K∞ at each depth.
    """
    s, X = shared["settings"], shared["X"][task["data"]]
    activations = shared["activations"]
    a, b = activations[task["activation"]]
    if task["measure"] == "lambda":
        lam = compute.condition_numbers(X, a, b, shared["depths"])
        return {"lambda_min_at_largest_depth": lam[0, -1]}, {"lambda": lam}
    unit = (
        100 * DATASETS.index(task["data"])
        + 10 * list(activations).index(task["activation"])
        + SCHEMES.index(task["scheme"])
    )
    errors = compute.relative_errors(
        X,
        a,
        b,
        s["depth"],
        task["scheme"],
        task["width"],
        s["widths"].index(task["width"]),
        s["seeds"],
        jax.random.fold_in(jax.random.PRNGKey(s["seed"]), unit),
        progress=ctx.progress,
    )
    return {"mean_error": errors.mean()}, {"errors": errors}
