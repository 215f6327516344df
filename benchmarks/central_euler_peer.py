"""Our central flow against an Euler baseline on the same products, on the example of
alex-damian/central_flows_jax rebuilt with gradflows' MLP (`benchmarks/_peer_mlp.py`, GD at
η = 0.1): `python benchmarks/central_euler_peer.py [--steps 1000]`; writes
`benchmarks/central_euler_peer.json`. The authors' code is not run here (it needs flax,
cvxpy and cvxopt, which the project does not install): the baseline is our reimplementation
of their scheme's step, not their code.

The baseline steps the central flow by explicit Euler, 4 substeps per GD step (dt = η/4), one
`lax.scan` program; each substep computes what an evaluation of our field computes: the top 2
eigenpairs by the same warm-started band Lanczos (`top_eigenpairs`, the same tolerance and
cap), ∇S = ∇³L[u, u] (one third-derivative product) and σ² = max(0, −2⟨∇S, ∇L⟩/‖∇S‖²) (the
k = 1 closed form, as ours), switched on at the first substep with S ≥ 2/η (no look-ahead).
Both run in one process: first each cold (its compilation included), then each again
(warm: the solve alone). Reported: CPU seconds (`time.process_time`) and wall seconds of
each, the ratios ours ÷ Euler (goal ≤ 1/3), and |S·η/2 − 1| after the edge for each.
"""

import argparse
import os
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def euler(loss, net, eta, steps, substeps=4):
    """`(S (steps,), L (steps,), w_end)`: S and L at the start of each GD step; one program."""
    import jax
    import jax.numpy as jnp

    from flows.large_steps._central import _ITERS, _TOL
    from flows.large_steps._hessian import flat_loss, third
    from flows.large_steps._sharpness import top_eigenpairs

    f, w0, _, _ = flat_loss(loss, net)
    dt = eta / substeps

    def substep(carry, _):
        w, U, active = carry
        top = top_eigenpairs(f, w, 2, U, tol=_TOL, max_iters=_ITERS)
        g = jax.grad(f)(w)
        gS = third(f, w, top.vectors[0], top.vectors[0])
        sigma2 = jnp.maximum(0.0, -2 * (gS @ g) / (gS @ gS))
        active = active | (top.values[0] >= 2 / eta)
        v = -(g + 0.5 * jnp.where(active, sigma2, 0.0) * gS)
        return (w + dt * v, top.vectors, active), (top.values[0], f(w))

    def step(carry, _):
        carry, (S, L) = jax.lax.scan(substep, carry, None, length=substeps)
        return carry, (S[0], L[0])

    @jax.jit
    def run(w0):
        U0 = jnp.zeros((2, w0.shape[0]), w0.dtype)
        carry, (S, L) = jax.lax.scan(step, (w0, U0, jnp.asarray(False)), None, length=steps)
        return S, L, carry[0]

    S, L, w = run(w0)
    return np.asarray(S), np.asarray(L), np.asarray(w)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000)
    args = p.parse_args(argv)

    import flows
    from benchmarks._peer_mlp import peer_mlp, write_result

    loss, net, eta = peer_mlp()
    K = args.steps
    ts = eta * np.arange(0, K + 1, 10.0)

    def ours():
        return flows.central_flow(loss, net, K * eta, eta=eta, ts=ts, save_params=False)

    def timed(fn):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        return out, time.process_time() - c0, time.perf_counter() - w0

    res = {"eta": eta, "steps": K, "load_start": os.getloadavg()}
    cf, res["ours_cold_cpu_s"], res["ours_cold_wall_s"] = timed(ours)
    eu, res["euler_cold_cpu_s"], res["euler_cold_wall_s"] = timed(lambda: euler(loss, net, eta, K))
    cf, res["ours_warm_cpu_s"], res["ours_warm_wall_s"] = timed(ours)
    eu, res["euler_warm_cpu_s"], res["euler_warm_wall_s"] = timed(lambda: euler(loss, net, eta, K))
    res["load_end"] = os.getloadavg()
    for kind in ("cold", "warm"):
        for clock in ("cpu", "wall"):
            res[f"ratio_{kind}_{clock}"] = (
                res[f"ours_{kind}_{clock}_s"] / res[f"euler_{kind}_{clock}_s"]
            )
    t_edge = cf.stats["events"][0][0] if cf.stats["events"] else np.inf
    after = cf.ts > t_edge
    res["ours_t_edge"] = t_edge
    res["ours_max_edge_error"] = float(
        np.max(np.abs(cf.observables["sharpness"][after] * eta / 2 - 1))
    )
    S = eu[0]
    k_edge = int(np.argmax(S >= 2 / eta))
    res["euler_step_edge"] = k_edge
    res["euler_max_edge_error"] = float(np.max(np.abs(S[k_edge + 1 :] * eta / 2 - 1)))
    res["ours_stats"] = {key: cf.stats[key] for key in ("num_steps", "hvps", "third_products",
                                                        "complementarity_solves")}  # fmt: skip
    write_result(res, "central_euler_peer")


if __name__ == "__main__":
    main()
