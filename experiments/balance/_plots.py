"""Figures of `gradflows run balance`, drawn from what the run saved (results.json + .npz)."""

import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _load(folder, name):
    with np.load(os.path.join(folder, name)) as f:
        return {k: f[k] for k in f.files}


def _save(fig, folder, name, figures):
    fig.tight_layout()
    path = os.path.join(folder, name)
    tmp = os.path.join(folder, f".tmp-{name}")
    fig.savefig(tmp, dpi=120, format="png")
    os.replace(tmp, path)  # atomic, like every other file of the run
    plt.close(fig)
    figures.append(name)


def _finish(ax, title, ylabel, *, legend=True):
    ax.set_title(title)
    ax.set_xlabel("flow time t")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    if legend:
        ax.legend(fontsize=8)


def _positive(ts, values):
    keep = (ts > 0) & (values > 0)
    return ts[keep], values[keep]


def plot(folder: str) -> list[str]:
    """Draw every figure the saved parts allow; returns the file names written."""
    with open(os.path.join(folder, "results.json")) as f:
        results = json.load(f)
    figures = []
    logistic = results.get("logistic", {}).get("runs", [])
    gd = results.get("gd", {}).get("runs", [])
    if logistic or gd:
        _drift_figure(folder, results, logistic, gd, figures)
    if logistic:
        main = _load(folder, logistic[0]["file"])
        _singular_value_figure(folder, main, figures)
        _alignment_figure(folder, main, figures)
        _margin_figure(folder, results, main, figures)
        _loss_figure(folder, main, figures)
    if "squared" in results:
        _squared_figure(folder, results["squared"], figures)
    return figures


def _drift_figure(folder, results, logistic, gd, figures):
    fig, ax = plt.subplots(figsize=(7, 4.8))
    for run in logistic:
        data = _load(folder, run["file"])
        ax.loglog(
            *_positive(data["ts"], data["drift"].sum(axis=1)),
            lw=2,
            label=f"flow, {run['solver']} rtol={run['rtol']:g}",
        )
        ax.axhline(run["rtol"], ls=":", lw=0.8, color=ax.lines[-1].get_color())
    for run in gd:
        data = _load(folder, run["file"])
        ax.loglog(
            *_positive(data["ts"], data["drift"].sum(axis=1)),
            ls="--",
            label=f"gradient descent, η={run['eta']:g}",
        )
    title = "Balancedness drift of the logistic flow"
    if "gd" in results:
        title = (
            f"Balancedness drift (GD exponent in η at t={results['gd']['t1']:g}: "
            f"{results['gd']['drift_exponent_in_eta']:.3f})"
        )
    _finish(ax, title, "Σ_k ‖C_k(t) − C_k(0)‖_F")
    _save(fig, folder, "drift.png", figures)


def _singular_value_figure(folder, main, figures):
    layers = sorted(k for k in main if k.startswith("singular_values_"))
    fig, axes = plt.subplots(1, len(layers), figsize=(4 * len(layers), 3.8), squeeze=False)
    ts = main["ts"]
    for ax, key in zip(axes[0], layers):
        sv = main[key]
        for i in range(sv.shape[1]):
            ax.semilogx(ts[1:], sv[1:, i], lw=1.5 if i == 0 else 0.8)
        n = sv.shape[1]
        title = f"W_{int(key.rsplit('_', 1)[1]) + 1}: {n} singular value{'s' * (n > 1)}"
        _finish(ax, title, "σ_i(W_k)", legend=False)
    fig.suptitle("Singular values per layer (logistic flow)")
    _save(fig, folder, "singular_values.png", figures)


def _alignment_figure(folder, main, figures):
    ts, align, ratio = main["ts"][1:], main["alignment"][1:], main["sigma_ratio"][1:]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for k in range(align.shape[1]):
        ax1.semilogx(ts, align[:, k], label=f"|⟨u₁(W_{k + 1}), v₁(W_{k + 2})⟩|")
    ax1.set_ylim(0, 1.02)
    _finish(ax1, "Adjacent-layer alignment", "alignment")
    for k in range(ratio.shape[1] - 1):  # the last layer has a single singular value
        ax2.semilogx(ts, ratio[:, k], label=f"σ₂/σ₁ of W_{k + 1}")
    _finish(ax2, "Approach to rank one", "σ₂/σ₁")
    _save(fig, folder, "alignment.png", figures)


def _margin_figure(folder, results, main, figures):
    ts = main["ts"]
    gamma = results["data"]["max_margin"]["margin"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.loglog(*_positive(ts, main["angle"]))
    _finish(
        ax1, "Angle between W_L⋯W_1 and the max-margin direction", "angle (radians)", legend=False
    )
    ax2.semilogx(ts[1:], main["margin"][1:], label="normalised margin of W_L⋯W_1")
    ax2.axhline(gamma, color="k", ls="--", label=f"hard-margin SVM γ = {gamma:.4g}")
    _finish(ax2, "Normalised margin min_i y_i⟨β, x_i⟩/‖β‖", "margin (input units)")
    _save(fig, folder, "max_margin.png", figures)


def _loss_figure(folder, main, figures):
    fig, ax = plt.subplots(figsize=(6, 4))
    ts, loss = main["ts"][1:], main["loss"][1:]
    ax.loglog(ts, loss * ts)
    _finish(ax, "Logistic loss × t (loss ~ 1/t up to logarithms)", "loss(t) · t", legend=False)
    _save(fig, folder, "loss_times_t.png", figures)


def _squared_figure(folder, squared, figures):
    data = _load(folder, squared["file"])
    fig, ax = plt.subplots(figsize=(6, 4))
    gap = data["loss"] - squared["loss_least_squares"]
    ax.loglog(*_positive(data["ts"], gap), label="loss − least-squares minimum")
    ax.loglog(*_positive(data["ts"], data["drift"].sum(axis=1)), label="Σ_k ‖C_k(t) − C_k(0)‖_F")
    if squared.get("switched_to_implicit_at"):
        ax.axvline(
            squared["switched_to_implicit_at"],
            color="k",
            ls=":",
            label=f"switch to Kvaerno5 (t = {squared['switched_to_implicit_at']:.3g})",
        )
    title = f"Squared-loss flow: {squared['num_steps']} steps, {squared['solvers']}"
    _finish(ax, title, "loss gap / drift (loss units, weight² units)")
    _save(fig, folder, "squared.png", figures)
