"""Case 6: the linear branch, closed form against the flow."""

import jax
import numpy as np

import flows
import models

from ._case_common import _row, problem
from ._timing import best_of, timed


def case_linear(cfg, params):
    """The linearised two-layer net: `flows.lazy.linear_closed_form` (α = 1) against the ODE of
    the same linearised model, time and agreement at 101 save times."""
    prob = problem("linearized", params, cfg)
    base = problem("two_layer", params, cfg)
    ts = flows.log_times(prob.t1, 100)

    def closed_form():
        return flows.lazy.linear_closed_form(base.net, (base.X, base.Y), 1.0, ts)

    fns = {"closed_form": closed_form, "ode": lambda: prob.flow(solver="tsit5", ts=ts)}
    cold = {k: timed(f)[0] for k, f in fns.items()}
    secs, out = best_of(fns, cfg.repeats)
    branch, traj = out["closed_form"], out["ode"]
    thetas_cf = np.asarray(base.theta0) + branch.ubar
    trainable, _ = models.partition(traj.params)
    leaves = [np.asarray(x).reshape(len(ts), -1) for x in jax.tree.leaves(trainable)]
    thetas_ode = np.concatenate(leaves, axis=1)
    moved = np.max(np.linalg.norm(branch.ubar, axis=1))
    weight_agreement = float(np.max(np.linalg.norm(thetas_ode - thetas_cf, axis=1)) / moved)
    loss_agreement = float(np.max(np.abs(traj.loss - branch.loss)) / branch.loss[0])
    speed = secs["ode"] / secs["closed_form"]
    return [
        _row(
            cfg,
            "linear",
            params,
            "ODE time ÷ closed-form time (101 save times)",
            speed,
            "×",
            ours=f"flows.lazy.linear_closed_form {secs['closed_form']:.3f} s",
            theirs=f"ODE (Tsit5) {secs['ode']:.2f} s, {traj.stats['num_steps']} steps",
            details={
                "seconds": secs,
                "cold_seconds": cold,
                "max_weight_difference_relative_to_distance_moved": weight_agreement,
                "max_loss_difference_relative_to_initial_loss": loss_agreement,
                "ode_stats": traj.stats,
                "closed_form": "flows.lazy.linear_closed_form(net, (X, Y), alpha=1, ts)",
            },
            note=f"agree to {weight_agreement:.1e} (weights), {loss_agreement:.1e} (loss)",
        )
    ]


# -- 7. the whole default `gradflows run lazy` ----------------------------------------------------
