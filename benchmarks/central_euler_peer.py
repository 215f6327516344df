"""Our central flow against an Euler baseline on the same products, on the example of
alex-damian/central_flows_jax rebuilt with gradflows' MLP (`benchmarks/_peer_mlp.py`, GD at
η = 0.1): `python benchmarks/central_euler_peer.py [--steps 1000]`; writes
`benchmarks/central_euler_peer.json`. The authors' code is not run here (it needs flax,
cvxpy and cvxopt, which the project does not install): the baseline is our reimplementation
of their scheme's step, not their code.

The baseline steps the central flow by explicit Euler, 4 substeps per GD step (dt = η/4), one
`lax.scan` program; each substep computes what an evaluation of our field on the edge computes:
the top eigenpair by the same band Lanczos warm-started from the last substep's top 2 vectors
(`edge_eigenpairs`, the same tolerance on the top pair, cap and scale 2/η), ∇S = ∇³L[u, u] (one
third-derivative product) and σ² = max(0, −2⟨∇S, ∇L⟩/‖∇S‖²) (the k = 1 closed form, as ours),
switched on at the first substep with S ≥ 2/η (no look-ahead). It does not watch the second
eigenvalue (ours does, once per step, in its event: top 2 pairs, to stop where a second one
reaches 2/η), and it computes the eigenpair before the edge too (ours does not: its field is
−∇L there, and its event watches S). Both run in one process: first each cold (its compilation
included), then each again (warm: the solve alone). Ours runs Tsit5 at rtol 1e-8, atol 1e-10
(`RTOL`, `ATOL`), and warm also at 1e-6/1e-8 and at the library's defaults 1e-10/1e-12
(`TOLERANCES`), each against the same Euler run. Reported: CPU seconds (`time.process_time`)
and wall seconds of each, the ratios ours ÷ Euler (goal ≤ 1/3), |S·η/2 − 1| after the edge for
each, ours' steps and products, and the largest ‖w(t) − w_ref(t)‖/‖w_ref(t) − w0‖ over the
saves against ours at the tightest tolerance.

Then the same with the solver RKC (`flows._solver._rkc`, Runge–Kutta–Chebyshev, order 2, its
stages chosen from the spectral radius by power iteration) at `RKC_TOLERANCES`: warm in this
process against the same Euler run, and cold in a fresh process (`--cold rkc`: RKC's first
call, then Euler's, each compiling its own programs) with its own Euler cold run (`rkc_*`)."""

import argparse
import json
import os
import subprocess
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

RTOL, ATOL = 1e-8, 1e-10
TOLERANCES = ((1e-10, 1e-12), (1e-6, 1e-8))
RKC_TOLERANCES = ((1e-4, 1e-6), (1e-5, 1e-7), (1e-6, 1e-8))


def euler(loss, net, eta, steps, substeps=4):
    """`(S (steps,), L (steps,), w_end, hvps, W (steps, p))`: S, L and w at the start of each
    GD step and the Hessian-vector products of all substeps; one program."""
    import jax
    import jax.numpy as jnp

    from flows.large_steps._central import _CHECK, _ITERS, _TOL
    from flows.large_steps._hessian import flat_loss, third
    from flows.large_steps._sharpness import edge_eigenpairs

    f, w0, _, _ = flat_loss(loss, net)
    dt = eta / substeps

    def substep(carry, _):
        w, U, active, hvps = carry
        lam, U, n = edge_eigenpairs(f, w, 1, U, 2 / eta, tol=_TOL, max_iters=_ITERS,
                                    check_every=_CHECK)  # fmt: skip
        g = jax.grad(f)(w)
        gS = third(f, w, U[0], U[0])
        sigma2 = jnp.maximum(0.0, -2 * (gS @ g) / (gS @ gS))
        active = active | (lam[0] >= 2 / eta)
        v = -(g + 0.5 * jnp.where(active, sigma2, 0.0) * gS)
        return (w + dt * v, U, active, hvps + n), (lam[0], f(w))

    def step(carry, _):
        w = carry[0]
        carry, (S, L) = jax.lax.scan(substep, carry, None, length=substeps)
        return carry, (S[0], L[0], w)

    @jax.jit
    def run(w0):
        U0 = jnp.zeros((2, w0.shape[0]), w0.dtype)
        init = (w0, U0, jnp.asarray(False), jnp.asarray(0))
        carry, (S, L, W) = jax.lax.scan(step, init, None, length=steps)
        return S, L, carry[0], carry[3], W

    S, L, w, hvps, W = run(w0)
    return np.asarray(S), np.asarray(L), np.asarray(w), int(hvps), np.asarray(W)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--cold", choices=("rkc",), help="time RKC's and Euler's first calls only")
    args = p.parse_args(argv)

    import flows
    from benchmarks._peer_mlp import peer_mlp, write_result

    loss, net, eta = peer_mlp()
    K = args.steps
    ts = eta * np.arange(0, K + 1, 10.0)

    def ours(rtol=RTOL, atol=ATOL, solver="tsit5", count=True):
        return flows.central_flow(
            loss, net, K * eta, eta=eta, ts=ts, rtol=rtol, atol=atol, solver=solver, count=count
        )

    def timed(fn):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        return out, time.process_time() - c0, time.perf_counter() - w0

    if args.cold:  # a fresh process: RKC's first call, then Euler's
        cold = {"load_start": os.getloadavg()}
        _, cold["rkc_cold_cpu_s"], cold["rkc_cold_wall_s"] = timed(
            lambda: ours(*RKC_TOLERANCES[0], solver="rkc")
        )
        _, cold["euler_cold_cpu_s"], cold["euler_cold_wall_s"] = timed(
            lambda: euler(loss, net, eta, K)
        )
        print(json.dumps(cold))
        return

    res = {"eta": eta, "steps": K, "rtol": RTOL, "atol": ATOL, "load_start": os.getloadavg()}
    cf, res["ours_cold_cpu_s"], res["ours_cold_wall_s"] = timed(ours)
    eu, res["euler_cold_cpu_s"], res["euler_cold_wall_s"] = timed(lambda: euler(loss, net, eta, K))
    cf, res["ours_warm_cpu_s"], res["ours_warm_wall_s"] = timed(ours)
    eu, res["euler_warm_cpu_s"], res["euler_warm_wall_s"] = timed(lambda: euler(loss, net, eta, K))
    others = {tol: timed(lambda tol=tol: ours(*tol)) for tol in TOLERANCES}
    res["load_end"] = os.getloadavg()
    for kind in ("cold", "warm"):
        for clock in ("cpu", "wall"):
            res[f"ratio_{kind}_{clock}"] = (
                res[f"ours_{kind}_{clock}_s"] / res[f"euler_{kind}_{clock}_s"]
            )
    ref = others[TOLERANCES[0]][0]
    t_edge = cf.stats["events"][0][0] if cf.stats["events"] else np.inf
    res["ours_t_edge"] = t_edge
    res["ours_max_edge_error"] = _edge_error(cf, eta)
    S = eu[0]
    k_edge = int(np.argmax(S >= 2 / eta))
    res["euler_step_edge"] = k_edge
    res["euler_max_edge_error"] = float(np.max(np.abs(S[k_edge + 1 :] * eta / 2 - 1)))
    res["euler_hvps"] = eu[3]
    res["euler_path_error"] = _path_error(np.concatenate([eu[4], eu[2][None]])[::10], ref)
    res["ours_stats"] = _stats(cf, ref)
    res["ours_at"] = []
    for (rtol, atol), (out, cpu, wall) in others.items():
        row = {"rtol": rtol, "atol": atol, "warm_cpu_s": cpu, "warm_wall_s": wall}
        row["ratio_warm_cpu"] = cpu / res["euler_warm_cpu_s"]
        row["max_edge_error"] = _edge_error(out, eta)
        res["ours_at"].append({**row, **_stats(out, ref)})
    _rkc_rows(res, ours, timed, ref, eta, K)
    write_result(res, "central_euler_peer")


def _rkc_rows(res, ours, timed, ref, eta, steps) -> None:
    """RKC warm at `RKC_TOLERANCES` against this process's Euler warm run (after one
    untimed call that compiles its program), and cold in a fresh process."""
    cmd = [sys.executable, os.path.abspath(__file__), "--cold", "rkc", "--steps", str(steps)]
    child = subprocess.run(cmd, capture_output=True, text=True, check=True)
    cold = json.loads(child.stdout.strip().splitlines()[-1])
    res["rkc_cold"] = {**cold, "rtol": RKC_TOLERANCES[0][0], "atol": RKC_TOLERANCES[0][1]}
    res["rkc_cold"]["ratio_cold_cpu"] = cold["rkc_cold_cpu_s"] / cold["euler_cold_cpu_s"]
    ours(*RKC_TOLERANCES[0], solver="rkc")  # compiles
    res["rkc_at"] = []
    for rtol, atol in RKC_TOLERANCES:
        out, cpu, wall = timed(lambda rtol=rtol, atol=atol: ours(rtol, atol, solver="rkc"))
        row = {"rtol": rtol, "atol": atol, "warm_cpu_s": cpu, "warm_wall_s": wall}
        row["ratio_warm_cpu"] = cpu / res["euler_warm_cpu_s"]
        row["max_edge_error"] = _edge_error(out, eta)
        row["t_edge"] = out.stats["events"][0][0] if out.stats["events"] else None
        res["rkc_at"].append({**row, **_stats(out, ref)})
    # The first tolerance again without the count callbacks (`count=False`: one host
    # callback per evaluation, which the Euler baseline does not pay: it counts in its
    # scan's carry); the same steps and losses, the products then unknown.
    rtol, atol = RKC_TOLERANCES[0]
    ours(rtol, atol, solver="rkc", count=False)  # compiles
    out, cpu, wall = timed(lambda: ours(rtol, atol, solver="rkc", count=False))
    counted = res["rkc_at"][0]
    res["rkc_uncounted"] = {
        "rtol": rtol, "atol": atol, "warm_cpu_s": cpu, "warm_wall_s": wall,
        "ratio_warm_cpu": cpu / res["euler_warm_cpu_s"],
        "num_steps": out.stats["num_steps"],
        "same_final_loss": float(out.loss[-1]) == counted["final_loss"],
        "same_steps": out.stats["num_steps"] == counted["num_steps"],
    }  # fmt: skip
    res["load_end_rkc"] = os.getloadavg()


def _edge_error(cf, eta) -> float:
    """max |S·η/2 − 1| at the saves past the first event (None before it)."""
    t_edge = cf.stats["events"][0][0] if cf.stats["events"] else np.inf
    after = cf.observables["sharpness"][cf.ts > t_edge]
    return float(np.max(np.abs(after * eta / 2 - 1))) if after.size else None


def _flat(traj):
    """The flat parameters at the saves of a trajectory, (saves, p)."""
    import jax

    from models import partition

    rows = jax.vmap(lambda p: jax.flatten_util.ravel_pytree(p)[0])(partition(traj.params)[0])
    return np.asarray(rows)


def _path_error(W, ref) -> float:
    """max over the saves after t = 0 of ‖w − w_ref‖/‖w_ref − w_ref(0)‖, W (saves, p) the flat
    parameters at `ref`'s save times."""
    R = _flat(ref)
    moved = np.linalg.norm(R[1:] - R[0], axis=1)
    return float(np.max(np.linalg.norm(W[1:] - R[1:], axis=1) / moved))


def _stats(cf, ref) -> dict:
    """Steps, evaluations and products, and the path's largest distance from `ref` relative
    to how far `ref` moved (over the saves after t = 0)."""
    out = {key: cf.stats[key] for key in ("num_steps", "num_rejected_steps", "hvps", "grad_evals",
                                          "third_products", "complementarity_solves")}  # fmt: skip
    out["path_error"] = _path_error(_flat(cf), ref)
    out["final_loss"] = float(cf.loss[-1])
    return out


if __name__ == "__main__":
    main()
