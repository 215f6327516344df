"""The authors' JAX code (alex-damian/central_flows_jax) and gradflows on its own example, in
one process: `python benchmarks/peer_central.py [--steps 1000]`; writes
`benchmarks/peer_central.json` (and the per-step series in `benchmarks/peer_central.npz`).

The peer's code is not a dependency of gradflows: without `central_flows_jax` (and flax, which
its example uses) importable, the script says so and exits without writing anything. It was
run in a separate virtual environment holding both: gradflows' dependencies, flax, cvxpy,
cvxopt and the peer's snapshot (`pip install -e .` there, or `pip install
git+https://github.com/alex-damian/central_flows_jax@071585b`).

The problem is the notebook's (`examples/mlp.ipynb`): flax `nnx.Rngs(0)`, 128 standard-normal
inputs in 8 dimensions and targets, a swish MLP 8 → 16 → 16 → 1 (`nnx.Linear`), the mean
squared error of the flattened weights' network, gradient descent at lr 0.1, 5 eigenvectors
tracked from `rngs.normal((p, 5))`. In float64 (`jax_enable_x64`): flax draws its weights in
float32 whatever that mode says (`param_dtype`), and the notebook as written then stops in
LOBPCG (a float32 point with float64 directions in `jax.jvp`), so its float32 weights are cast
to float64. Both codes get the same loss function of the same flat vector. With
`--notebook-float32` only the peer's code runs, as the notebook runs by default (float64 mode
off: everything float32, the data drawn in float32, hence another problem), and writes
`benchmarks/peer_central_float32.json`.

Run, in this order, each timed by wall and CPU clocks (`time.process_time`, all threads):
the peer's central flow (`Flow.central`, 4 Euler substeps per step, `--steps` steps; its first
call is its cold start: tracing and compiling), ours (`flows.central_flow`, k = `--k`, its
defaults, saves every `--every` steps, the compilation cache off: cold), the peer's again and
ours again (warm), the peer's gradient descent (`Flow.discrete(midpoint=True)`, as the
notebook: its eigenvalues at the midpoint of each step), ours (`flows.gradient_descent`), and
with `--euler-check` the peer's central flow at 8 substeps (its Euler error: at first order
the 4-substep run is twice as far from the flow as from the 8-substep run); last, ours to one
GD step in a fresh process (our cold start, as the peer's first call).

Measured: the ratios ours ÷ peer (cold, warm; CPU, wall); how closely each holds the top
(effective) eigenvalue at 2/η past its edge; the predicted loss of each (the peer's L + tr X,
ours L + tr Σ/η) against GD's loss smoothed by a Gaussian filter of σ = 50 steps, by the
measure of `benchmarks/central_predicted_peer.py` (past our edge, and centred: from 2σ past
it to 2σ before the end) and by the notebook's plot (every step from 2σ on); the two flows'
loss and predicted loss against each other at the saves.
"""

import argparse
import json
import os
import pickle
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SIGMA = 50.0


def peer_available() -> str | None:
    """None when the peer's code and flax import, otherwise the reason they do not."""
    try:
        import central_flows_jax  # noqa: F401
        from flax import nnx  # noqa: F401
    except ImportError as e:
        return str(e)
    return None


def notebook_problem():
    """`(loss_fn, p0, U0)`: the notebook's loss of the flat weights, its start, and its 5
    starting vectors for LOBPCG, all from `nnx.Rngs(0)` in the notebook's order; with JAX's
    float64 mode on, flax's float32 weights are cast to float64."""
    import jax
    import jax.numpy as jnp
    from flax import nnx
    from jax.flatten_util import ravel_pytree

    rngs = nnx.Rngs(0)
    n, d, m = 128, 8, 16
    x = rngs.normal((n, d))
    y = rngs.normal((n,))
    model = nnx.Sequential(
        nnx.Linear(d, m, rngs=rngs),
        nnx.swish,
        nnx.Linear(m, m, rngs=rngs),
        nnx.swish,
        nnx.Linear(m, 1, rngs=rngs),
        lambda x: x[..., 0],
    )
    if jax.config.jax_enable_x64:
        graph, state = nnx.split(model)
        model = nnx.merge(graph, jax.tree.map(lambda a: a.astype(jnp.float64), state))
    p0, unravel = ravel_pytree(model)

    def loss_fn(p):
        return jnp.mean((unravel(p)(x) - y) ** 2)

    U0 = rngs.normal((len(p0), 5))
    return loss_fn, p0, U0


def ours_first_call() -> dict:
    """Our cold start: `central_flow` to one GD step in a fresh process, the compilation cache
    off, as the peer's first call (one step: 4 substeps)."""
    import subprocess

    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--first-call"], check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])


def _say(what, timings) -> None:
    print(f"{what}: {timings['cpu_s']:.1f} s CPU, {timings['wall_s']:.1f} s wall, load "
          f"{os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)  # fmt: skip


def _clock(fn):
    """`(fn(), cpu_s, wall_s)`."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def peer_central(flow, start, steps, substeps=4):
    """The notebook's loop over `flow.central`, plus one untimed step (so that the records
    reach step `steps`): `(records, timings)`, records stacked per step (L, eigs, X, L_pred)."""
    import jax
    import jax.numpy as jnp

    def one(state):
        state, aux = flow.central(*state, substeps=substeps)
        aux["L_pred"] = aux["L"] + jnp.trace(aux["X"])
        return state, jax.device_get(aux)

    (state, first), first_cpu, first_wall = _clock(lambda: one(start))
    out = [first]

    def rest():
        s = state
        for _ in range(steps - 1):
            s, aux = one(s)
            out.append(aux)
        return s

    state, rest_cpu, rest_wall = _clock(rest)
    out.append(one(state)[1])
    records = {key: np.stack([o[key] for o in out]) for key in ("L", "eigs", "X", "L_pred")}
    timings = {"first_call_cpu_s": first_cpu, "first_call_wall_s": first_wall,
               "cpu_s": first_cpu + rest_cpu, "wall_s": first_wall + rest_wall}  # fmt: skip
    return records, timings


def peer_gd(flow, start, steps):
    """The notebook's `flow.discrete(..., midpoint=True)` loop: `(L (steps,), eigs, timings)`."""
    import jax

    def run():
        s, out = start, []
        for _ in range(steps):
            s, aux = flow.discrete(*s, midpoint=True)
            out.append(jax.device_get(aux))
        return out

    out, cpu, wall = _clock(run)
    return np.array([o["L"] for o in out]), np.stack([o["eigs"] for o in out]), {
        "cpu_s": cpu, "wall_s": wall}  # fmt: skip


def edge_hold(eigs_over_edge, after) -> float:
    """max |λ/edge − 1| over the records `after` (a mask), the top eigenvalue first."""
    return float(np.max(np.abs(np.asarray(eigs_over_edge)[after] - 1)))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--k", type=int, default=1)
    p.add_argument("--notebook-float32", action="store_true")
    p.add_argument("--euler-check", action="store_true")
    p.add_argument("--first-call", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    why = peer_available()
    if why is not None:
        print(f"skipped: alex-damian/central_flows_jax is not importable here ({why}); it is not "
              "a gradflows dependency: install it (and flax) in a separate environment to run "
              "this comparison")  # fmt: skip
        return
    if args.notebook_float32:
        notebook_float32(args.steps)
        return
    os.environ["GRADFLOWS_COMPILATION_CACHE"] = "0"  # cold means compiled in this process
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from central_flows_jax import Flow, GradientDescent

    import flows

    jnp.zeros(1).block_until_ready()  # the backend starts before either is timed
    K, eta = args.steps, 0.1
    loss_fn, p0, U0 = notebook_problem()
    opt = GradientDescent(lr=eta)
    flow = Flow(loss_fn, opt)
    start = (p0, opt.init(p0), U0)
    ks = np.arange(0, K + 1, args.every)
    res = {"steps": K, "eta": eta, "k_ours": args.k, "weights": str(p0.dtype),
           "load_start": os.getloadavg()}  # fmt: skip

    if args.first_call:  # a fresh process's first call, one GD step: printed for main()
        _, cpu, wall = _clock(lambda: flows.central_flow(loss_fn, p0, eta, eta=eta,
                                                         save_params=False))  # fmt: skip
        print(json.dumps({"cpu_s": cpu, "wall_s": wall}))
        return

    def ours():
        return flows.central_flow(loss_fn, p0, K * eta, eta=eta, k=args.k, ts=ks * eta,
                                  save_params=False)  # fmt: skip

    peer, res["peer_cold"] = peer_central(flow, start, K)
    _say("peer, cold", res["peer_cold"])
    cf, cpu, wall = _clock(ours)
    res["ours_cold"] = {"cpu_s": cpu, "wall_s": wall}
    _say("ours, cold", res["ours_cold"])
    _, res["peer_warm"] = peer_central(flow, start, K)
    _say("peer, warm", res["peer_warm"])
    cf, cpu, wall = _clock(ours)
    res["ours_warm"] = {"cpu_s": cpu, "wall_s": wall}
    _say("ours, warm", res["ours_warm"])
    gd_L, gd_eigs, res["peer_gd"] = peer_gd(flow, start, K)
    gd, cpu, wall = _clock(
        lambda: flows.gradient_descent(loss_fn, p0, K * eta, eta=eta, ts=eta * np.arange(K + 1.0))
    )
    res["ours_gd"] = {"cpu_s": cpu, "wall_s": wall}
    if args.euler_check:
        peer8, res["peer_8_substeps"] = peer_central(flow, start, K, substeps=8)
    res["ours_first_call"] = ours_first_call()
    _say("ours, first call in a fresh process", res["ours_first_call"])
    res["load_end"] = os.getloadavg()
    for kind in ("cold", "warm"):
        for clock in ("cpu", "wall"):
            res[f"ratio_{kind}_{clock}"] = (
                res[f"ours_{kind}"][f"{clock}_s"] / res[f"peer_{kind}"][f"{clock}_s"]
            )

    ours_rec = {"loss": np.asarray(cf.loss), "events": cf.stats["events"],
                "predicted_loss": np.asarray(cf.observables["predicted_loss"]),
                "sharpness": np.asarray(cf.observables["sharpness"]),
                "eigenvalues": np.asarray(cf.observables["eigenvalues"]),
                "stats": {key: cf.stats[key] for key in ("num_steps", "hvps", "third_products",
                                                         "complementarity_solves")}}  # fmt: skip
    raw = dict(
        res=res,
        peer=peer,
        peer8=peer8 if args.euler_check else None,
        ours=ours_rec,
        gd_loss=np.asarray(gd.loss),
        peer_gd_loss=gd_L,
        gd_eigs=gd_eigs,
        ks=ks,
    )
    with open(os.path.join(tempfile.gettempdir(), "peer_central.raw.pkl"), "wb") as f:
        pickle.dump(raw, f)
    measure(**raw)


def measure(res, peer, peer8, ours, gd_loss, peer_gd_loss, gd_eigs, ks) -> None:
    """Fill `res` from the runs (see the module docstring) and write the JSON and the npz."""
    from benchmarks.central_predicted_peer import smoothed_errors

    L_gd, K, eta = gd_loss, res["steps"], res["eta"]
    res["gd_same_bits"] = bool(np.array_equal(L_gd[:K], peer_gd_loss))
    res["gd_max_relative_difference"] = float(np.max(np.abs(L_gd[:K] / peer_gd_loss - 1)))
    t_edge = ours["events"][0][0]
    k_edge = int(np.ceil(t_edge / eta))
    peer_active = np.trace(peer["X"], axis1=1, axis2=2) > 0
    peer_k_edge = int(np.argmax(peer_active))
    res["ours_t_edge"], res["ours_step_edge"] = t_edge, k_edge
    res["peer_step_edge"] = peer_k_edge
    res["ours_events"] = ours["events"]
    res["ours_stats"] = ours["stats"]
    S_ours = np.asarray(ours["sharpness"]) * eta / 2
    res["ours_max_edge_error"] = edge_hold(S_ours, ks > k_edge)
    # the peer's eigenvalues are effective ones (η·λ), recorded at the first substep of a step
    res["peer_max_edge_error"] = edge_hold(peer["eigs"][:, 0] / 2, np.arange(K + 1) > peer_k_edge)
    res["peer_eigs_at_edge"] = int(np.sum(peer["eigs"][-1] > 2 - 1e-3))
    res["gd_sharpness_over_2_eta_after_edge"] = {
        "median": float(np.median(gd_eigs[k_edge:, 0] / 2)),
        "min": float(np.min(gd_eigs[k_edge:, 0] / 2)),
        "max": float(np.max(gd_eigs[k_edge:, 0] / 2)),
    }
    smooth = {"ours": ours["predicted_loss"], "peer": peer["L_pred"][ks]}
    plain = {"ours": ours["loss"], "peer": peer["L"][ks]}
    for who in ("ours", "peer"):
        res[f"{who}_predicted_loss"] = smoothed_errors(smooth[who], L_gd, ks, k_edge, SIGMA)
        res[f"{who}_plain_loss"] = smoothed_errors(plain[who], L_gd, ks, k_edge, SIGMA)
    res["peer_notebook_plot"] = notebook_measure(peer, peer_gd_loss, K)
    res["ours_vs_peer"] = {
        "loss": relative(ours["loss"], peer["L"][ks]),
        "predicted_loss": relative(ours["predicted_loss"], peer["L_pred"][ks]),
    }
    if peer8 is not None:
        res["peer_4_vs_8_substeps"] = {
            "loss": relative(peer["L"], peer8["L"]),
            "predicted_loss": relative(peer["L_pred"], peer8["L_pred"]),
        }
    np.savez_compressed(os.path.join(HERE, "peer_central.npz"), ks=ks, gd_loss=L_gd,
                        gd_eigs=gd_eigs, peer_loss=peer["L"], peer_predicted=peer["L_pred"],
                        peer_eigs=peer["eigs"], peer_trace_x=np.trace(peer["X"], axis1=1, axis2=2),
                        ours_loss=np.asarray(ours["loss"]),
                        ours_predicted=np.asarray(ours["predicted_loss"]),
                        ours_sharpness=np.asarray(ours["sharpness"]))  # fmt: skip
    import cvxpy
    import flax

    from benchmarks._peer_mlp import write_result

    res["peer_versions"] = {"flax": flax.__version__, "cvxpy": cvxpy.__version__,
                            "peer_commit": peer_commit()}  # fmt: skip
    write_result(res, "peer_central")


def notebook_float32(steps: int) -> None:
    """The notebook as it runs by default (JAX's float64 mode off: its data, weights and
    eigenvectors in float32, so its draws differ from the float64 run's): the peer's central
    flow and GD only (gradflows needs float64); writes `benchmarks/peer_central_float32.json`."""
    import jax

    jax.config.update("jax_enable_x64", False)  # gradflows' imports turn it on
    from central_flows_jax import Flow, GradientDescent

    loss_fn, p0, U0 = notebook_problem()
    opt = GradientDescent(lr=0.1)
    flow = Flow(loss_fn, opt)
    start = (p0, opt.init(p0), U0)
    res = {"steps": steps, "eta": 0.1, "dtype": str(p0.dtype), "load_start": os.getloadavg()}
    peer, res["peer"] = peer_central(flow, start, steps)
    gd_L, _, res["peer_gd"] = peer_gd(flow, start, steps)
    res["load_end"] = os.getloadavg()
    edge = int(np.argmax(np.trace(peer["X"], axis1=1, axis2=2) > 0))
    res["peer_step_edge"] = edge
    res["peer_max_edge_error"] = edge_hold(
        peer["eigs"][:, 0].astype(np.float64) / 2, np.arange(steps + 1) > edge
    )
    res["peer_notebook_plot"] = notebook_measure(
        jax.tree.map(lambda a: np.asarray(a, np.float64), peer), gd_L.astype(np.float64), steps
    )
    from benchmarks._peer_mlp import write_result  # imports gradflows' models: float64 on

    write_result(res, "peer_central_float32")


def relative(a, b) -> dict:
    """Mean and max of |a/b − 1|."""
    e = np.abs(np.asarray(a) / np.asarray(b) - 1)
    return {"mean": float(e.mean()), "max": float(e.max())}


def notebook_measure(peer, gd_L, K) -> dict:
    """The notebook's plot: GD's `steps` losses smoothed (σ = 50, mode "nearest") against the
    peer's predicted loss at every step from 2σ on, and at every step."""
    from scipy.ndimage import gaussian_filter1d

    L = gaussian_filter1d(gd_L, SIGMA, mode="nearest")
    pred = peer["L_pred"][:K]
    from_2sigma = slice(int(2 * SIGMA), K)
    return {"from_2sigma": relative(pred[from_2sigma], L[from_2sigma]),
            "all_steps": relative(pred, L)}  # fmt: skip


def peer_commit() -> str | None:
    """The commit of the peer's checkout, when it is a git checkout."""
    import subprocess

    import central_flows_jax

    where = os.path.dirname(central_flows_jax.__file__)
    try:
        return subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None


if __name__ == "__main__":
    main()
