"""The central flow's predicted time averages against gradient descent's, on the example of
alex-damian/central_flows_jax rebuilt with gradflows' MLP (`benchmarks/_peer_mlp.py`: a swish
MLP on 128 random points, GD at η = 0.1 for 1,000 steps): `python
benchmarks/central_predicted_peer.py [--steps 1000]`; writes
`benchmarks/central_predicted_peer.json`.

GD's loss and its outputs on 16 held-out points are smoothed by a Gaussian filter of σ = 50
steps (the notebook's `gaussian_filter1d(..., sigma=50, mode="nearest")`); the central flow
(k = 1, its defaults) is saved every 10 steps with `predicted={"out": outputs}`. Reported
after the edge (and from 2σ past it to 2σ before the end, where the filter is centred): the
relative error of the predicted loss L + tr Σ/η and of the plain loss, and of the predicted
outputs g + ½⟨∇²g, Σ⟩ and of the plain outputs (relative in the Euclidean norm), mean and max.
"""

import argparse
import os
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def windows(ks, k_edge: int, steps: int, sigma: float) -> dict:
    """The saves `ks` measured: "after_edge" (from step `k_edge` on) and "centred" (from 2σ
    past it to 2σ before the end, where the filter is centred), as masks."""
    return {
        "after_edge": ks >= k_edge,
        "centred": (ks >= k_edge + 2 * sigma) & (ks <= steps - 2 * sigma),
    }


def smoothed_errors(series, gd_loss, ks, k_edge: int, sigma: float) -> dict:
    """|series / GD's smoothed loss − 1| at the saves `ks` in each of `windows`: `{window:
    {"mean", "max"}}`; `gd_loss` has one entry per step 0..K, smoothed by a Gaussian filter of
    σ = `sigma` steps (mode "nearest", as the peer's notebook)."""
    from scipy.ndimage import gaussian_filter1d

    L = gaussian_filter1d(np.asarray(gd_loss), sigma, mode="nearest")[ks]
    out = {}
    for name, sel in windows(ks, k_edge, len(gd_loss) - 1, sigma).items():
        e = np.abs(np.asarray(series)[sel] / L[sel] - 1)
        out[name] = {"mean": float(e.mean()), "max": float(e.max())}
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--sigma", type=float, default=50.0)
    p.add_argument("--every", type=int, default=10)
    args = p.parse_args(argv)
    import jax
    import jax.numpy as jnp
    from scipy.ndimage import gaussian_filter1d

    import flows
    from benchmarks._peer_mlp import D, peer_mlp, write_result

    loss, net, eta = peer_mlp()
    X_out = jnp.asarray(np.random.default_rng(7).standard_normal((16, D)))

    def outputs(m):
        return jax.vmap(m)(X_out)

    K, sig = args.steps, args.sigma
    started = time.perf_counter()
    gd = flows.gradient_descent(loss, net, K * eta, eta=eta, ts=eta * np.arange(K + 1.0),
                                observables={"out": outputs})  # fmt: skip
    gd_s = time.perf_counter() - started
    ks = np.arange(0, K + 1, args.every)
    started = time.perf_counter()
    cf = flows.central_flow(loss, net, K * eta, eta=eta, ts=ks * eta, save_params=False,
                            observables={"out": outputs}, predicted={"out": outputs})  # fmt: skip
    cf_s = time.perf_counter() - started
    L = gaussian_filter1d(np.asarray(gd.loss), sig, mode="nearest")[ks]
    out = gaussian_filter1d(np.asarray(gd.observables["out"]), sig, axis=0, mode="nearest")[ks]
    t_edge = cf.stats["events"][0][0]
    k_edge = int(np.ceil(t_edge / eta))
    counted = ("num_steps", "hvps", "third_products", "complementarity_solves", "num_events")
    res = {"eta": eta, "steps": K, "sigma_steps": sig, "t_edge": t_edge,
           "gd_wall_s": gd_s, "central_wall_s": cf_s, "load": os.getloadavg(),
           "stats": {key: cf.stats[key] for key in counted}}  # fmt: skip
    for name, sel in windows(ks, k_edge, K, sig).items():

        def rel_out(a, sel=sel):
            return np.linalg.norm(a[sel] - out[sel], axis=1) / np.linalg.norm(out[sel], axis=1)

        errors = {
            "loss_predicted": np.abs(cf.observables["predicted_loss"][sel] / L[sel] - 1),
            "loss_plain": np.abs(cf.loss[sel] / L[sel] - 1),
            "outputs_predicted": rel_out(cf.observables["predicted_out"]),
            "outputs_plain": rel_out(cf.observables["out"]),
        }
        res[name] = {"saves": int(sel.sum())}
        for key, e in errors.items():
            res[name][key] = {"mean": float(e.mean()), "max": float(e.max())}
    S = np.asarray(flows.large_steps.sharpness_along(loss, gd, k=1, max_iters=40).values)[:, 0]
    after = S[k_edge:] * eta / 2
    res["gd_sharpness_over_2_eta_after_edge"] = {
        "median": float(np.median(after)), "min": float(after.min()), "max": float(after.max())
    }  # fmt: skip
    write_result(res, "central_predicted_peer")


if __name__ == "__main__":
    main()
