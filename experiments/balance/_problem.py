"""The balance problem (digits, deep linear net, objectives, observables), built once per
process, and one flow of it."""

import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import flows
import models

from .._options import UsageError, solve_settings
from .._tables import digits_table


class _Problem:
    """Data, initialisation and objectives, built once (one compilation per objective)."""

    def __init__(self, s: dict):
        X, y = digits_table(s["classes"], s["n_train"], 0, s["seed"])[:2]
        if not flows.observables.is_linearly_separable(X, y):
            raise UsageError(
                f"--classes {s['classes']}: the {len(y)} training points are not "
                "linearly separable through the origin; choose other digits"
            )
        self.X_np, self.y_np = X, y
        self.X, self.y = jnp.asarray(X), jnp.asarray(y)
        self.dims = [X.shape[1], *s["hidden"], 1]
        self.net0 = models.DeepLinearNet.gaussian(
            self.dims, scale=s["scale"], key=jax.random.PRNGKey(s["seed"])
        )
        self.svm = flows.observables.max_margin(X, y)
        self._logistic = flows.LogisticLoss(s["losses"]["logistic"])
        self._squared = flows.SquaredLoss(s["losses"]["squared"])
        drift = flows.observables.balancedness_drift(self.net0)
        drift_relative = flows.observables.balancedness_drift(self.net0, relative=True)
        self.drift_observables = {"drift": drift, "drift_relative": drift_relative}
        self.observables = {
            **self.drift_observables,
            "singular_values": flows.observables.layer_singular_values,
            "alignment": flows.observables.adjacent_alignment,
            "sigma_ratio": flows.observables.singular_value_ratio,
            "stable_rank": flows.observables.stable_rank,
            "end_to_end": flows.observables.end_to_end,
            "margin": flows.observables.normalised_margin(X, y),
            "angle": flows.observables.max_margin_angle(self.svm.direction),
        }

    def logistic(self, net):
        return self._logistic(jax.vmap(net)(self.X)[:, 0], self.y)

    def squared(self, net):
        return self._squared(jax.vmap(net)(self.X)[:, 0], self.y)


def _flat(observables: dict) -> dict:
    """Observables as flat npz arrays: tuples (singular values per layer) become name_k."""
    out = {}
    for name, value in observables.items():
        if isinstance(value, (tuple, list)):
            out.update({f"{name}_{k}": np.asarray(v) for k, v in enumerate(value)})
        else:
            out[name] = np.asarray(value)
    return out


def problem_for(s: dict) -> _Problem:
    """The problem of settings `s`, built once per process (a sweep worker runs many tasks)."""
    key = json.dumps({k: s[k] for k in _PROBLEM_KEYS}, sort_keys=True)
    if key not in _PROBLEMS:
        _PROBLEMS.clear()
        _PROBLEMS[key] = _Problem(s)
    return _PROBLEMS[key]


_PROBLEM_KEYS = ("classes", "n_train", "hidden", "scale", "seed", "losses")
_PROBLEMS: dict = {}


def _stats(traj) -> dict:
    keep = (
        "num_steps",
        "num_rejected_steps",
        "grad_evals",
        "jvp_evals",
        "solvers",
        "switched_to_stiff_at",
        "newton_residual",
    )
    return {k: traj.stats[k] for k in keep if k in traj.stats}


def _flow(problem, loss, t1, s, ctx, tag, *, rtol, solver, observables):
    """One flow of the deep linear net to `t1` (checkpointed in the task's checkpoint);
    returns the trajectory, its arrays for the part, and the wall time of the solve (s,
    compilation included). An exhausted budget is a `UsageError` naming --max-steps."""
    ts = flows.log_times(t1, s["n_save"], t_min=1e-3 * min(1.0, t1))
    start = time.perf_counter()
    try:
        traj = flows.gradient_flow(
            loss,
            problem.net0,
            t1,
            ts=ts,
            settings=solve_settings(
                solver=solver, rtol=rtol, atol=s["atol_over_rtol"] * rtol, max_steps=s["max_steps"]
            ),
            observables=observables,
            save_params=False,
            progress=ctx.progress,
            checkpoint=ctx.checkpoint,
        )
    except flows.MaxStepsReached as e:
        raise UsageError(f"--max-steps: {tag}: {e}") from None
    wall = time.perf_counter() - start
    arrays = {"ts": traj.ts, "loss": traj.loss, **_flat(traj.observables)}
    return traj, arrays, wall
