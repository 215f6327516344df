"""The central flow's predicted time average of a function g of the weights, g(w) + ½⟨∇²g, Σ⟩,
against gradient descent's time-averaged g, on the one-eigenvalue problem of the tests:
`python benchmarks/central_predicted.py [--t1 50]`; writes `benchmarks/central_predicted.json`.

Problem: the tanh MLP 4 → 12 → 12 → 1 on 40 Gaussian points (`tests/flows/large_steps/nets.py`),
η = 2/(1.6·S(0)); g = the network's outputs on 5 held-out points, and the loss. GD's g is
averaged over a centred window of `--window` steps (a moving mean). Reported after the edge:
the mean over saves of ‖avg_GD g − predicted g‖ / ‖avg_GD g‖, and the same with the central
flow's plain g(w) in place of the prediction (what the Σ term adds).
"""

import argparse
import json
import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--t1", type=float, default=50.0)
    p.add_argument("--window", type=int, default=10)
    args = p.parse_args(argv)
    import jax
    import jax.numpy as jnp

    import flows
    from tests.flows.large_steps.nets import tanh_regression

    loss, net = tanh_regression(4, 12, 2, 40)
    X_out = jnp.asarray(np.random.default_rng(3).standard_normal((5, 4)))

    def outputs(m):
        return jax.vmap(m)(X_out)

    eta = 2 / (1.6 * float(flows.sharpness(loss, net)[0]))
    K = int(round(args.t1 / eta))
    gd = flows.gradient_descent(loss, net, K * eta, eta=eta, ts=eta * np.arange(K + 1.0),
                                observables={"out": outputs})  # fmt: skip
    h = args.window // 2
    ks = np.arange(h, K + 1 - h, max(1, K // 40))
    cf = flows.central_flow(loss, net, float(ks[-1] * eta), eta=eta, ts=ks * eta, rtol=1e-8,
                            atol=1e-10, observables={"out": outputs},
                            predicted={"out": outputs})  # fmt: skip
    t_edge = cf.stats["events"][0][0] if cf.stats["events"] else np.inf
    after = cf.ts > t_edge + 5 * eta
    out = np.asarray(gd.observables["out"])
    avg = np.stack([out[k - h : k + h + 1].mean(0) for k in ks])
    avg_loss = np.array([gd.loss[k - h : k + h + 1].mean() for k in ks])

    def rel(a, b):
        return float(
            np.mean(np.linalg.norm(a - b, axis=1)[after] / np.linalg.norm(b, axis=1)[after])
        )

    res = {
        "eta": eta,
        "t_edge": float(t_edge),
        "steps": K,
        "window": args.window,
        "saves_after_edge": int(after.sum()),
        "outputs_predicted_vs_gd_average": rel(cf.observables["predicted_out"], avg),
        "outputs_plain_vs_gd_average": rel(cf.observables["out"], avg),
        "loss_predicted_vs_gd_average": float(np.mean(np.abs(
            cf.observables["predicted_loss"][after] / avg_loss[after] - 1))),
        "loss_plain_vs_gd_average": float(np.mean(np.abs(cf.loss[after] / avg_loss[after] - 1))),
        "versions": {"jax": jax.__version__},
    }  # fmt: skip
    print(json.dumps(res, indent=1))
    with open(os.path.join(HERE, "central_predicted.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
