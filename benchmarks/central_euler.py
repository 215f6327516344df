"""Ours against a simplified reimplementation of the authors' Euler scheme for the central
flow, on one problem: `python benchmarks/central_euler.py [--t1 40]`. The authors' own code is
not run here; the numbers describe the reimplementation.

Cohen, Damian, Talwalkar, Kolter & Lee (2025) step the central flow by explicit Euler, 4
substeps per GD step (dt = η/4), and solve the complementarity problem for the block
predicted one substep ahead. The reimplementation here keeps the Euler substeps but uses the
current point (no look-ahead), the edge switched on at the first substep where S ≥ 2/η.
`flows.central_flow` is adaptive (Tsit5, rtol 1e-8, atol 1e-10) in float64, with the edge
located as an event. Both here track one eigenvalue (k = 1, σ² = max(0, −2⟨∇S, ∇L⟩/‖∇S‖²),
the same closed form); the reimplementation's top eigenpair is from a dense `eigh` of the
Hessian (the authors use warm-started LOBPCG; p = 229 here).

The Euler scheme is also run in float64, to separate the step from the precision.

Problem: the tanh MLP 4 → 12 → 12 → 1 on 40 Gaussian points of the tests
(`tests/flows/large_steps/nets.py`), η = 2/(1.6·S(0)). Reported: the edge time of each,
max |S/(2/η) − 1| after it, ‖w_Euler(t) − w_ours(t)‖ relative to ‖w_ours(t) − w0‖, and the
losses, at the save times. Writes `benchmarks/central_euler.json`.
"""

import argparse
import json
import os
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import flows  # noqa: E402
from flows.large_steps._hessian import flat_loss, third  # noqa: E402
from tests.flows.large_steps.nets import tanh_regression  # noqa: E402


def euler(loss, net, eta, t1, substeps=4, dtype=jnp.float32):
    """(ts, W (T, p), S (T,), L (T,), t_edge): the simplified Euler scheme (in `dtype`), one save
    per GD step."""
    f64, w64, spec, static = flat_loss(loss, net)
    w = w64.astype(dtype)

    def f(v):  # the loss in `dtype`: parameters and computation
        params = eqx.combine(spec.unravel(v), static)
        params = jax.tree.map(lambda a: a.astype(dtype) if eqx.is_array(a) else a, params)
        return loss(params).astype(dtype)

    @jax.jit
    def step(w, active):
        g = jax.grad(f)(w)
        lam, vec = jnp.linalg.eigh(jax.hessian(f)(w))
        u, S = vec[:, -1], lam[-1]
        gS = third(f, w, u, u)
        sigma2 = jnp.maximum(0.0, -2 * (gS @ g) / (gS @ gS))
        active = active | (S >= 2 / eta)
        v = -(g + 0.5 * jnp.where(active, sigma2, 0.0) * gS)
        return w + (eta / substeps) * v, active, S, f(w)

    steps = int(round(t1 / eta))
    W, S, L, active, t_edge = [], [], [], jnp.asarray(False), None
    for i in range(steps * substeps + 1):
        w_next, active_next, s, loss_value = step(w, active)
        if i % substeps == 0:
            W.append(np.asarray(w, np.float64))
            S.append(float(s))
            L.append(float(loss_value))
        if t_edge is None and bool(active_next):
            t_edge = i * eta / substeps
        w, active = w_next, active_next
    return eta * np.arange(steps + 1), np.stack(W), np.array(S), np.array(L), t_edge


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--t1", type=float, default=40.0)
    args = p.parse_args(argv)
    loss, net = tanh_regression(4, 12, 2, 40)
    S0 = float(flows.sharpness(loss, net)[0])
    eta = 2 / (1.6 * S0)
    runs = {}
    for name, dtype in (("euler_float32", jnp.float32), ("euler_float64", jnp.float64)):
        start = time.perf_counter()
        runs[name] = (*euler(loss, net, eta, args.t1, dtype=dtype), time.perf_counter() - start)
    ts = runs["euler_float32"][0]
    start = time.perf_counter()
    ours = flows.central_flow(loss, net, float(ts[-1]), eta=eta, ts=ts, rtol=1e-8, atol=1e-10)
    wall_ours = time.perf_counter() - start
    _, w0, _, _ = flat_loss(loss, net)
    W_o = np.stack([np.asarray(flat_loss(loss, ours.at(i))[1]) for i in range(len(ts))])
    moved = np.linalg.norm(W_o - np.asarray(w0), axis=1)
    t_edge_o = ours.stats["events"][0][0] if ours.stats["events"] else None
    S_o = ours.observables["sharpness"]
    after_o = ts > t_edge_o if t_edge_o is not None else np.zeros(len(ts), bool)
    res = {
        "problem": "tanh MLP 4-12-12-1, 40 Gaussian points (tests/flows/large_steps/nets.py)",
        "eta": eta,
        "edge": 2 / eta,
        "t1": float(ts[-1]),
        "ours": {
            "t_edge": t_edge_o,
            "S_over_edge_max_dev_after": float(np.max(np.abs(S_o[after_o] * eta / 2 - 1))),
            "loss_final": float(ours.loss[-1]),
            "steps": int(ours.stats["num_steps"]),
            "wall_s_with_compile": wall_ours,
        },
    }
    for name, (_, W_e, S_e, L_e, t_edge_e, wall) in runs.items():
        after_e = ts > t_edge_e if t_edge_e is not None else np.zeros(len(ts), bool)
        gap = np.linalg.norm(W_e - W_o, axis=1)
        res[name] = {
            "t_edge": t_edge_e,
            "S_over_edge_max_dev_after": float(np.max(np.abs(S_e[after_e] * eta / 2 - 1))),
            "loss_final": float(L_e[-1]),
            "wall_s": wall,
            "distance_to_ours_final": float(gap[-1]),
            "distance_to_ours_relative_final": float(gap[-1] / moved[-1]),
            "distance_to_ours_relative_max": float(np.max(gap[1:] / moved[1:])),
            "loss_relative_difference_final": float(abs(L_e[-1] - ours.loss[-1]) / ours.loss[-1]),
        }
    print(json.dumps(res, indent=1))
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "central_euler.json")
    with open(out, "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
