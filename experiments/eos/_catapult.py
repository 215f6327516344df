"""The catapult panel: gradient descent on the uv model over ηλ0 in (0, 4.5] (Lewkowycz,
Bahri, Dyer, Sohl-Dickstein & Gur-Ari 2020), by its exact map of (f, λ)."""

import warnings

import numpy as np

import flows
from flows.large_steps import (
    EdgeOfStabilityWarning,
    catapult_map,
    uv_init,
    uv_invariant,
    uv_loss,
    uv_ntk,
    uv_output,
)

TARGET = 0.0  # the paper's single example (x = 1, y = 0)
ESCAPE = 1e8  # |f| or λ beyond this: diverged (GD on the uv model has no way back)
X_MAX = 4.5


def catapult(m: int, points: int, steps: int, seed: int) -> tuple[dict, dict]:
    """For `points` values x = ηλ0 evenly spaced in (0, 4.5]: `steps` steps of the exact map
    (`flows.large_steps.catapult_map`) from the uv model at `uv_init(m, seed)`.

    **Returns:** `(record, arrays)`: arrays `x` (ηλ0), `lam_final` (λ after the steps, 0
    where diverged), `eta_lam_final` (ηλ_final), `spike` (max_k L_k / L_0, the loss spike's
    height, up to the last finite step), `diverged` (bool) and `diverged_step` (−1 where it
    did not). `record`: λ0, f0, the phases found, and the gradient flow's invariant
    λ² − 4f²/m (its largest relative drift along `flows.gradient_flow` to t = 20/λ0, which
    conserves it) against its change under GD at ηλ0 = 3."""
    params = uv_init(m, seed)
    f0, lam0 = float(uv_output(params)), float(uv_ntk(params))
    x = np.linspace(X_MAX / points, X_MAX, points)
    lam_final, spike = np.zeros(points), np.ones(points)
    diverged, diverged_step = np.zeros(points, bool), np.full(points, -1)
    loss0 = 0.5 * (f0 - TARGET) ** 2
    for i, xi in enumerate(x):
        eta, f, lam = xi / lam0, f0, lam0
        with np.errstate(over="ignore", invalid="ignore"):
            for step in range(steps):
                f, lam = catapult_map(f, lam, eta=eta, y=TARGET, m=m)
                if not (abs(f) < ESCAPE and abs(lam) < ESCAPE):
                    diverged[i], diverged_step[i] = True, step + 1
                    break
                spike[i] = max(spike[i], 0.5 * (f - TARGET) ** 2 / loss0)
        lam_final[i] = 0.0 if diverged[i] else lam
    eta_lam = np.where(diverged, 0.0, x / lam0 * lam_final)
    catapulted = (~diverged) & (x > 2)
    record = {
        "model": "f = vᵀu·x/√m, x = 1, y = 0, u, v ~ N(0, I_m); L = ½(f − y)²; λ = (‖u‖² + ‖v‖²)/m",
        "m": m,
        "steps": steps,
        "f0": f0,
        "lam0": lam0,
        "x_max_converged": float(x[~diverged].max()) if (~diverged).any() else None,
        "x_min_diverged": float(x[diverged].min()) if diverged.any() else None,
        "catapult_eta_lam_final_max": float(eta_lam[catapulted].max())
        if catapulted.any()
        else None,
        "lazy_lam_change_max": float(np.max(np.abs(lam_final[x < 2] / lam0 - 1)))
        if (x < 2).any()
        else None,
        "spike_max": float(spike[~diverged].max()) if (~diverged).any() else None,
        "invariant": _invariant(params, lam0, m),
    }
    arrays = {
        "x": x,
        "lam_final": lam_final,
        "eta_lam_final": eta_lam,
        "spike": spike,
        "diverged": diverged,
        "diverged_step": diverged_step,
    }
    return record, arrays


def _invariant(params, lam0: float, m: int) -> dict:
    """λ² − 4f²/m along the gradient flow (conserved) and after GD at ηλ0 = 3 (not)."""
    loss = uv_loss(TARGET)
    t1 = 20.0 / lam0
    gf = flows.gradient_flow(
        loss, params, t1, ts=np.linspace(0, t1, 41), observables={"invariant": uv_invariant}
    )
    inv = np.asarray(gf.observables["invariant"])
    eta = 3.0 / lam0
    with warnings.catch_warnings():  # ηλ0 = 3 > 2 on purpose: the catapult
        warnings.simplefilter("ignore", EdgeOfStabilityWarning)
        gd = flows.gradient_descent(loss, params, 200 * eta, eta=eta, ts=np.array([0, 200 * eta]))
    after = float(uv_invariant(gd.at(-1)))
    return {
        "what": "λ² − 4f²/m",
        "initial": float(inv[0]),
        "gradient_flow_relative_drift_max": float(np.max(np.abs(inv / inv[0] - 1))),
        "gradient_flow_t1": t1,
        "gradient_descent_eta_lam0_3_after_200_steps": after,
        "gradient_descent_relative_change": after / float(inv[0]) - 1,
    }
