"""Adaptive and momentum optimizers at the edge of stability on the eos MLP: the
preconditioned sharpness λ_max(P⁻¹H), P = diag(√ν̂ + ε), against its stability limit
(Cohen et al. 2022, "Adaptive gradient methods at the edge of stability").

`python benchmarks/adaptive_eos.py [--steps 3000] [--every 20]` writes
`benchmarks/adaptive_eos.json` and `.npz` and draws `docs/adaptive_eos.png` from the npz
(`--plot-only` redraws it).

Problem: the digits problem of `gradflows run eos --data digits`
(`experiments.eos._cli.DIGITS`: a tanh MLP 64-32-32-10 on 100 digits of the ten classes, MSE,
3,466 parameters; the eos defaults before they became the authors' swish MLP).
Optimizers (`flows.large_steps`):
- RMSProp, η = 1e-3, β2 = 0.99, ε = 1e-8, bias-corrected: limit 2/η on λ_max(P⁻¹H);
- Adam, η = 4e-3, β1 = 0.9, β2 = 0.999, ε = 1e-8: limit 38/η = (2 + 2β1)/((1 − β1)η);
- heavy ball, η = 0.9, β = 0.5: limit (2 + 2β)/η = 3/η on the plain sharpness (P = 1);
and gradient descent at η = 0.9 (limit 2/η) beside them, these two for 200 steps.
Reported: the step where the measured quantity first reaches its limit ("the edge"), and
the median, 10 % and 90 % quantiles of quantity/limit over the saves after it.
Lanczos: 60 products, tol 1e-9.
"""

import argparse
import json
import os
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NPZ = os.path.join(HERE, "adaptive_eos.npz")
JSON = os.path.join(HERE, "adaptive_eos.json")
PNG = os.path.join(os.path.dirname(HERE), "docs", "adaptive_eos.png")
LANCZOS = {"max_iters": 60, "tol": 1e-9}
PROBLEM = (
    "the digits problem of gradflows run eos --data digits (experiments.eos._cli.DIGITS): "
    "tanh MLP 64-32-32-10 on 100 digits of the ten classes, MSE, 3,466 parameters"
)


def runs():
    """`(name, optimizer, eta, limit, bias-corrected β2 or None, ε or None)` per run."""
    from flows.large_steps import adam, heavy_ball, rmsprop

    return [
        ("rmsprop", rmsprop(1e-3, 0.99, 1e-8, bias_correction=True), 1e-3, 2 / 1e-3, 0.99, 1e-8),
        ("adam", adam(4e-3, 0.9, 0.999, 1e-8), 4e-3, 38 / 4e-3, 0.999, 1e-8),
        ("heavy_ball", heavy_ball(0.9, 0.5), 0.9, 3.0 / 0.9, None, None),
        ("gd", None, 0.9, 2 / 0.9, None, None),
    ]


def compute(steps: int, every: int) -> tuple[dict, dict]:
    import flows
    from experiments.eos._cli import DEFAULTS, DIGITS
    from experiments.eos._problem import problem_for
    from flows.large_steps import adaptive_preconditioner, optimize, preconditioned_sharpness

    problem = problem_for(dict(DEFAULTS, **DIGITS))
    loss = problem.loss
    arrays, summary = {}, {}
    for name, opt, eta, limit, beta2, eps in runs():
        plain = name in ("gd", "heavy_ball")  # 200 steps, every second one saved
        t1 = (200 if plain else steps) * eta
        gap = 2 if plain else every
        ts = eta * np.arange(gap, round(t1 / eta) + 1, gap)
        if eps is None:
            state_obs = {"s": lambda p, s: flows.sharpness(loss, p, **LANCZOS)[0]}
        else:

            def psharp(p, s, beta2=beta2, eps=eps):
                P = adaptive_preconditioner(s, eps=eps, beta2=beta2)
                return preconditioned_sharpness(loss, p, P, **LANCZOS)[0]

            state_obs = {"s": psharp}
        start = time.time()
        if opt is None:
            traj = flows.gradient_descent(
                loss, problem.net0, t1, eta=eta, ts=ts, save_params=False,
                observables={"s": lambda p: flows.sharpness(loss, p, **LANCZOS)[0]},
            )  # fmt: skip
        else:
            traj = optimize(loss, problem.net0, t1, optimizer=opt, eta=eta, ts=ts,
                            state_observables=state_obs, save_params=False)  # fmt: skip
        ratio = np.asarray(traj.observables["s"]) / limit
        steps_at = np.rint(traj.ts / eta).astype(int)
        edge = int(np.argmax(ratio >= 1.0)) if np.any(ratio >= 1.0) else None
        after = ratio[edge:] if edge is not None else np.array([])
        arrays[f"{name}_step"], arrays[f"{name}_ratio"] = steps_at, ratio
        arrays[f"{name}_loss"] = traj.loss
        summary[name] = {
            "eta": eta,
            "limit": limit,
            "steps": int(steps_at[-1]),
            "edge_step": int(steps_at[edge]) if edge is not None else None,
            "median_ratio_after_edge": float(np.median(after)) if after.size else None,
            "q10_q90_after_edge": [float(q) for q in np.quantile(after, [0.1, 0.9])]
            if after.size
            else None,
            "loss_end": float(traj.loss[-1]),
            "seconds": time.time() - start,
        }
        print(name, json.dumps(summary[name]))
    return arrays, summary


def plot(npz: str = NPZ, png: str = PNG) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a = np.load(npz)
    names = [("rmsprop", "RMSProp η=1e-3: η·λ_max(P⁻¹H)/2"),
             ("adam", "Adam η=4e-3, β1=0.9: η·λ_max(P⁻¹H)/38"),
             ("heavy_ball", "heavy ball η=0.9, β=0.5: η·S/3"),
             ("gd", "GD η=0.9: η·S/2")]  # fmt: skip
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 4.8), constrained_layout=True)
    for i, (name, label) in enumerate(names):
        ax.plot(a[f"{name}_step"], a[f"{name}_ratio"], lw=0.8, color=f"C{i}", label=label)
        bx.semilogy(a[f"{name}_step"], a[f"{name}_loss"], lw=0.8, color=f"C{i}", label=name)
    ax.axhline(1.0, color="k", ls="--", lw=0.8, label="stability limit")
    ax.set(xlabel="step k", ylabel="(preconditioned) sharpness / its limit", ylim=(0, 1.6),
           title="each (preconditioned) sharpness rises to its limit and hovers there")  # fmt: skip
    bx.set(
        xlabel="step k",
        ylabel="training loss (MSE)",
        title="training loss, non-monotone at the edge",
    )
    ax.legend(fontsize=8)
    bx.legend(fontsize=8)
    fig.suptitle("Optimizers at the edge of stability on the eos MLP (3,466 parameters, float64)")
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--every", type=int, default=20)
    p.add_argument("--plot-only", action="store_true")
    args = p.parse_args(argv)
    if not args.plot_only:
        import jax
        import optax

        arrays, summary = compute(args.steps, args.every)
        summary["settings"] = {"steps": args.steps, "every": args.every, "lanczos": LANCZOS,
                               "problem": PROBLEM}  # fmt: skip
        summary["versions"] = {"jax": jax.__version__, "optax": optax.__version__}
        np.savez(NPZ, **arrays)
        with open(JSON, "w") as f:
            json.dump(summary, f, indent=1)
    print(plot())


if __name__ == "__main__":
    main()
