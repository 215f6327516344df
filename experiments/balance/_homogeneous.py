"""Part `homogeneous`: per-neuron conservation of two-layer ReLU-type nets, and chatter."""

import os

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

import flows
import models

from .._files import write_npz
from .._options import solve_settings
from ._problem import _stats

ACTIVATIONS = ("relu", "leaky_relu", "abs")


def _homogeneous_data(problem, n=10, d=3):
    """A tiny problem from the same digits: n points, their top-d principal components."""
    X = problem.X_np[:n] - problem.X_np[:n].mean(axis=0)
    _, _, vt = np.linalg.svd(X, full_matrices=False)
    Z = X @ vt[:d].T
    return jnp.asarray(Z / Z.std(axis=0)), jnp.asarray(problem.y_np[:n])


def _homogeneous_part(problem, s, out, record) -> None:
    X, y = _homogeneous_data(problem)
    squared = flows.SquaredLoss("mean")
    budget, rtol = s["homogeneous_max_steps"], s["rtols"][0]
    horizons = {"short": s["homogeneous_t_short"], "long": s["homogeneous_t1"]}
    runs = {}
    summary = {
        "horizons": horizons,
        "max_steps": budget,
        "rtol": rtol,
        "atol": s["atol_over_rtol"] * rtol,
        "solver": s["solver"]["homogeneous"],
        "data": "first 10 training digits, top 3 principal components, targets ±1",
        "width": 8,
        "runs": runs,
        "note": "an exhausted budget here is chatter, not stiffness: a neuron slides along a "
        "kink b_j·x_i = 0, where the vector field jumps, and the explicit step collapses",
    }
    for name in ACTIVATIONS:
        net0 = models.TwoLayerNet(X.shape[1], 8, activation=name, key=jax.random.PRNGKey(s["seed"]))
        scale = np.maximum(1.0, np.asarray(jnp.sum(net0.b**2, 1) + net0.a**2))

        def loss(net):
            return squared(jax.vmap(net)(X), y)

        runs[name] = {}
        for horizon, T in horizons.items():  # same grid length and budget: one compilation
            tqdm.write(f"two-layer {name} net (width 8) to t={T:g}, budget {budget} steps")
            try:
                traj = flows.gradient_flow(
                    loss,
                    net0,
                    T,
                    ts=np.linspace(0.0, T, 41),
                    settings=solve_settings(
                        solver=s["solver"]["homogeneous"],
                        rtol=rtol,
                        atol=s["atol_over_rtol"] * rtol,
                        max_steps=budget,
                    ),
                    observables={"neuron": flows.neuron_balancedness},
                    save_params=False,
                    progress=True,
                )
            except flows.MaxStepsReached as e:
                runs[name][horizon] = {"t1": T, "status": "max_steps reached", "message": str(e)}
                record(summary)
                continue
            inv = traj.observables["neuron"]
            tag = f"homogeneous_{name}_{horizon}"
            write_npz(os.path.join(out, f"{tag}.npz"), ts=traj.ts, loss=traj.loss, neuron=inv)
            drift = np.abs(inv - inv[0])
            runs[name][horizon] = {
                "t1": T,
                "status": "finished",
                "file": f"{tag}.npz",
                **_stats(traj),
                "neuron_drift_max": float(drift.max()),
                "neuron_drift_max_over_rtol_scale": float((drift / scale).max() / rtol),
                "loss_final": traj.loss[-1],
            }
            record(summary)
