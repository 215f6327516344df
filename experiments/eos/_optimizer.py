"""`gradflows run eos --optimizer momentum|rmsprop|adam`: the optimizer at each η beside
gradient descent, its (preconditioned) sharpness against its stability limit (Cohen et al.
2022, "Adaptive gradient methods at the edge of stability").

The CLI imports this module for OPTIMIZERS: numpy, flows and matplotlib are imported inside
the functions, so `gradflows list` and `--help` stay light (tests/experiments/test_cli.py)."""

OPTIMIZERS = ("gd", "momentum", "rmsprop", "adam")
LANCZOS = {"max_iters": 60, "tol": 1e-9}


def build(s: dict, eta: float, nu0=None):
    """`(optimizer, limit, preconditioner)` of settings `s` at step η: the optax
    transformation, the stability limit of the quantity recorded, and None (the plain
    sharpness) or `fn(state) -> P`. RMSProp has no bias correction and starts from ν_0 =
    `nu0` (`_rmsprop_central.rmsprop_start`); Adam is bias-corrected. Raises `ValueError` naming
    beta, beta1, beta2 or eps."""
    from flows.large_steps import adam, adaptive_preconditioner, heavy_ball, rmsprop

    name, eps = s["optimizer"], s["eps"]
    if name == "momentum":
        return heavy_ball(eta, s["beta"]), (2 + 2 * s["beta"]) / eta, None
    beta2 = s["beta2"] if s["beta2"] is not None else (0.99 if name == "rmsprop" else 0.999)
    if name == "rmsprop":
        return (
            rmsprop(eta, beta2, eps, nu0=nu0),
            2 / eta,
            lambda state: adaptive_preconditioner(state, eps=eps),
        )
    else:
        opt, limit = (
            adam(eta, s["beta1"], beta2, eps),
            (2 + 2 * s["beta1"]) / (1 - s["beta1"]) / eta,
        )
    return opt, limit, lambda state: adaptive_preconditioner(state, eps=eps, beta2=beta2)


def optimizer_run(loss, params0, *, s: dict, eta: float, report=None) -> tuple[dict, dict]:
    """Run `s["optimizer"]` at η to `s["t1"]`, its (preconditioned) sharpness every
    `s["sharpness_every"]` steps. **Returns:** `(record, arrays)`: arrays `t_opt`, `loss_opt`,
    `sharpness_opt` (the quantity compared with `limit`); the record has the optimizer, the
    limit, the first save at or above it and the median ratio after it, and `diverged`
    (None, or the message; the finite saves before are kept); for RMSProp, its central flow
    (`_rmsprop_central`), whose progress goes to `report(t, t1, what)`."""
    import warnings

    import numpy as np

    import flows
    from flows.large_steps import optimize, preconditioned_sharpness

    from ._rmsprop_central import rmsprop_central, rmsprop_start

    beta2 = s["beta2"] if s["beta2"] is not None else 0.99
    nu_0, nu_1 = rmsprop_start(loss, params0, beta2) if s["optimizer"] == "rmsprop" else (None,) * 2
    optimizer, limit, preconditioner = build(s, eta, nu_0)
    if preconditioner is None:

        def quantity(p, state):
            return flows.sharpness(loss, p, **LANCZOS)[0]
    else:

        def quantity(p, state):
            return preconditioned_sharpness(loss, p, preconditioner(state), **LANCZOS)[0]

    steps = int(round(s["t1"] / eta))
    every = s["sharpness_every"]
    ts = eta * np.arange(every, steps + 1, every)
    diverged = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", flows.DivergenceWarning)
        try:
            traj = optimize(loss, params0, s["t1"], optimizer=optimizer, eta=eta, ts=ts,
                            state_observables={"sharpness": quantity},
                            save_params=False)  # fmt: skip
        except FloatingPointError as e:
            diverged = " ".join(str(e).split())
            traj = e.partial
    for w in caught:
        if not issubclass(w.category, flows.DivergenceWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        elif diverged is None:
            # momentum at η = 3 ended at a loss of 7.8e38 (from 0.39) recorded as diverged:
            # null, "at its limit from step 2 (median ×0.789)"; as GD, it stops where its
            # excursion began
            diverged = " ".join(str(w.message).split())
            traj = _before_excursion(traj, float(loss(params0)))
    record = {"optimizer": s["optimizer"], "limit": limit, "diverged": diverged}
    arrays = {"t_opt": np.zeros(0), "loss_opt": np.zeros(0), "sharpness_opt": np.zeros(0)}
    if traj is None:
        return {**record, "edge_step": None, "median_ratio": None}, arrays
    ratio = np.asarray(traj.observables["sharpness"]) / limit
    edge = int(np.argmax(ratio >= 1)) if np.any(ratio >= 1) else None
    record["edge_step"] = None if edge is None else int(round(traj.ts[edge] / eta))
    record["median_ratio"] = None if edge is None else float(np.median(ratio[edge:]))
    record["loss_final"] = float(traj.loss[-1])
    arrays = {
        "t_opt": traj.ts,
        "loss_opt": traj.loss,
        "sharpness_opt": np.asarray(traj.observables["sharpness"]),
    }
    if s["optimizer"] == "rmsprop":
        record["central_flow"], more = rmsprop_central(
            loss, params0, s=s, eta=eta, beta2=beta2, nu0=nu_1,
            ts=eta * np.arange(0, steps + 1, every), report=report,
        )  # fmt: skip
        arrays.update(more)
    return record, arrays


def _before_excursion(traj, loss0: float):
    """`traj` up to (not including) its first save whose loss is above the divergence rule's
    threshold (`flows._divergence`: `GROWTH` × max(|L(0)|, tiny) above L(0)); None if none
    is left."""
    import dataclasses

    import numpy as np

    from flows._divergence import DivergenceRule

    rule = DivergenceRule(loss0)
    losses = np.asarray(traj.loss)
    above = ~(np.array([rule.ratio(x) for x in losses]) <= rule.growth)
    keep = int(np.argmax(above)) if above.any() else len(losses)
    if keep == 0:
        return None
    observables = {k: np.asarray(v)[:keep] for k, v in traj.observables.items()}
    return dataclasses.replace(traj, ts=traj.ts[:keep], loss=losses[:keep], observables=observables)


def optimizer_figure(run: dict, a: dict, config: dict | None = None):
    """Two panels for one η: the optimizer's (preconditioned) sharpness against its limit,
    and its loss beside GD's (and the central flow's prediction of GD's averaged loss), from
    t = 0 (the optimizer starts where GD does). `config`: the run's config.json, whose model,
    data and loss the title names, as on `eta-<η>.png`."""
    import numpy as np

    from .._plotting import new_figure
    from ._plots import problem_line

    o, eta = run["optimizer"], run["eta"]
    what = "S = λ_max(H)" if o["optimizer"] == "momentum" else "λ_max(P⁻¹H), P = √ν̂ + ε"
    fig = new_figure(11.0, 4.2)
    ax_s, ax_l = fig.subplots(1, 2)
    ax_s.plot(a["t_opt"], a["sharpness_opt"], color="k", lw=1.0, label=f"{o['optimizer']}: {what}")
    central = len(a.get("t_cf_opt", ())) > 0  # RMSProp's central flow
    if central:
        ax_s.plot(a["t_cf_opt"], a["sharpness_cf_opt"], color="tab:orange", lw=1.4,
                  label="its central flow: λ_max(P⁻¹H), P = √ν + ε")  # fmt: skip
    ax_s.axhline(o["limit"], color="tab:red", ls="--", lw=1.0, label=f"limit {o['limit']:.4g}")
    claim = (
        # "at its limit from step 2 (median ×0.064)" where it fell 16× below it after step 2
        f"reached its limit at step {o['edge_step']}, then median ×{o['median_ratio']:.3f} of it"
        if o["edge_step"] is not None
        else "below its stability limit"
    ) + (", then diverged (drawn to there)" if o.get("diverged") else "")
    ax_s.set(xlabel="flow time t = kη", ylabel="(preconditioned) sharpness",
             title=f"{o['optimizer']}'s {what} against its limit")  # fmt: skip
    fig.suptitle(f"{o['optimizer']} at η = {eta:g}: {claim}"
                 + ("\n" + problem_line(config) if config else ""), fontsize=9)  # fmt: skip
    ax_s.legend(fontsize=8)
    ax_l.semilogy(a["t_gd"], a["loss_gd"], color="0.5", lw=0.8, label=f"GD, η = {eta:g}")
    if "predicted_loss" in a:
        p = a["predicted_loss"]
        ax_l.semilogy(a["t"][: len(p)], p, color="tab:red", ls="--", lw=1.0,
                      label="central flow: predicted GD loss")  # fmt: skip
    t_opt, loss_opt = a["t_opt"], a["loss_opt"]
    if len(t_opt) and t_opt[0] > 0 and len(a["t_gd"]) and a["t_gd"][0] == 0:
        # saved from the first sharpness step on; at t = 0 its loss is GD's (same params0)
        t_opt, loss_opt = np.r_[0.0, t_opt], np.r_[a["loss_gd"][0], loss_opt]
    ax_l.semilogy(t_opt, loss_opt, color="k", lw=1.0, label=o["optimizer"])
    if central:
        ax_l.semilogy(
            a["t_cf_opt"],
            a["predicted_loss_cf_opt"],
            color="tab:orange",
            lw=1.4,
            label=f"{o['optimizer']}'s central flow: predicted loss L + tr X/η",
        )
        ax_l.semilogy(a["t_cf_opt"], a["loss_cf_opt"], color="tab:orange", ls=":", lw=1.0,
                      label=f"{o['optimizer']}'s central flow: L(w(t))")  # fmt: skip
    stop = (o.get("central_flow") or {}).get("stopped")
    if stop and central:
        why = "eigenvalue k+1 at 2/η" if "eigenvalue" in stop["reason"] else "step budget"
        ax_s.axvline(stop["t"], color="tab:orange", ls=":", lw=0.8)
        ax_s.annotate(f"central flow stops: {why}", (stop["t"], o["limit"]), fontsize=7,
                      rotation=90, va="top")  # fmt: skip
    elif stop:
        ax_s.annotate("no central flow: λ_max(P⁻¹H) > 2/η at t = 0 (RMSProp starts unstable)",
                      (0.02, 0.02), xycoords="axes fraction", fontsize=7)  # fmt: skip
    ax_l.set(xlabel="flow time t = kη", ylabel="training loss",
             title="training loss: the optimizer beside GD at the same η")  # fmt: skip
    ax_l.legend(fontsize=8)
    return fig
