"""results.json's entries from the finished parts, and the printed summary."""


def results(done) -> dict:
    """`{"runs": [per-η records, largest η first], "catapult": record}`; each record gets
    `file` (its part's arrays) and `task` (key, wall and CPU time, peak memory, worker)."""
    runs, catapult = [], None
    for r in done:
        record = {
            **r.record,
            "file": f"part-{r.key}.npz",
            "task": {
                "key": r.key,
                "resumed": r.resumed,
                **{k: r.stats.get(k) for k in ("wall_s", "cpu_s", "peak_rss_bytes", "worker")},
            },
        }
        if r.task["part"] == "catapult":
            catapult = record
        else:
            runs.append(record)
    runs.sort(key=lambda rec: -rec["eta"])
    return {
        "runs": runs,
        "catapult": catapult,
        "notes": {
            "hover": "S/(2/η) of GD from its first save at or above 2/η (Cohen et al. 2021: "
            "S rises, then hovers at or just above 2/η)",
            "distance": "‖w_GD(t) − w_flow(t)‖ (Euclidean, all trainable parameters)",
            "update_cosine": "cos(Δw_t, w_t − w_0), Δw_t = w_t − w_(t−η): the plain quantity, "
            "not the νP of Terjék 2025 (not public)",
            "predicted_loss": "central flow: L + σ²/η, its prediction of GD's time-averaged loss",
            "predicted_loss_error": "central flow: |predicted − GD's loss under a Gaussian "
            "filter of σ = 50 steps| / the latter, from GD's first save at 2/η on (settled: "
            "from 3σ after it on), 3σ from either end of GD's run",
        },
    }


def edge_phrase(r) -> str:
    """Where GD's S first reached 2/η: "S reached 2/η at t=…", or where S(0) is above it
    already "S above 2/η from the start (S0/(2/η) …)" (η = 3 on the defaults read "S
    reached 2/η at t=0", of a run unstable from its first step)."""
    if r["sharpness_initial"] > r["edge"]:
        return f"S above 2/η from the start (S0/(2/η) {r['sharpness_initial'] / r['edge']:.3g})"
    return f"S reached 2/η at t={r['t_edge']:.4g}"


def _run_line(r) -> str:
    head = f"η={r['eta']:g} (2/η={r['edge']:.4g}): S0={r['sharpness_initial']:.4g}"
    if r["diverged"]:
        d = r["diverged"]
        loss = "?" if d["loss"] is None else f"{d['loss']:.3g}"
        head += f", GD diverged at step {d['step']} (t={d['t']:.4g}, loss {loss})"
    if r["hover"]:
        h = r["hover"]
        head += (
            f", {edge_phrase(r)}, then S/(2/η) median {h['median']:.4f} "
            f"[{h['min']:.3f}, {h['max']:.3f}]"
        )
    else:
        head += f", S stayed below 2/η (max S/(2/η) {r['ratio_max']:.3f})"
    gaps = [
        f"{name.split('_')[0]} {r[name]['distance_final']:.3g}"
        for name in ("gradient_flow", "modified_flow", "central_flow")
        if name in r
    ]
    if gaps:
        head += "; ‖GD − flow‖ at the end: " + ", ".join(gaps)
    c = r.get("central_flow", {})
    stopped = c.get("stopped")
    if c and not stopped:
        head += f"; central flow to t={c['t_final']:.4g} tracking up to {c.get('tracked_max')}"
        if c.get("next_eigenvalue_over_edge_max") is not None:
            head += (f" (k = {c['k']}; λ{c['k'] + 1} at most "
                     f"{c['next_eigenvalue_over_edge_max']:.3f} × 2/η)")  # fmt: skip
    if stopped:
        k = c.get("k", 1)
        why = "step budget"
        if "eigenvalue" in stopped["reason"]:
            why = f"eigenvalue {k + 1} reached 2/η"
        head += f"; central flow (k = {k}) stopped at t={stopped['t']:.4g} ({why}), shown to there"
    error = c.get("predicted_loss_error")
    if error:
        head += (
            f"; its predicted loss against GD's averaged (σ = {error['sigma_steps']} steps) "
            f"after the edge: mean {error['mean']:.2%}, max {error['max']:.2%}"
        )
        if error.get("settled"):
            settled = error["settled"]
            head += (f"; from 3σ after the edge: mean {settled['mean']:.2%}, max "
                     f"{settled['max']:.2%}")  # fmt: skip
    for name, why in r["failed"].items():
        head += f"; {name} failed: {why}"
    o = r.get("optimizer")
    if o:
        head += f"; {o['optimizer']}: " + (
            f"diverged ({o['diverged']})" if o["diverged"] else
            f"reached its limit {o['limit']:.4g} at step {o['edge_step']}, then median ratio "
            f"{o['median_ratio']:.4f}" if o["edge_step"] is not None else
            f"stayed below its limit {o['limit']:.4g}"
        )  # fmt: skip
        if o.get("central_flow"):
            head += "; its central flow " + _central_line(o["central_flow"])
    return head


def _central_line(c: dict) -> str:
    """RMSProp's central flow in the summary: where it reached 2/η, how well it held, where
    it stopped."""
    stop = c["stopped"]
    if stop and stop["t"] == 0:
        return f"did not start ({stop['reason']})"
    line = "stayed below 2/η" if c["t_edge"] is None else f"reached 2/η at t={c['t_edge']:.4g}"
    if c["held"] is not None:
        line += f", held to {c['held']:.1e}"
    return line + (f", stopped at t={stop['t']:.4g}" if stop else "")


def summary_line(res: dict, folder: str) -> str:
    """The lines printed at the end of a run."""
    lines = [_run_line(r) for r in res["runs"]]
    c = res["catapult"]
    if c is not None:
        lines.append(
            f"catapult (uv, m={c['m']}): converged up to ηλ0={c['x_max_converged']:.3g}, "
            f"max ηλ_final in the catapult phase {c['catapult_eta_lam_final_max']:.3f} (< 2), "
            f"largest spike ×{c['spike_max']:.3g}; GF invariant λ² − 4f²/m drift "
            f"{c['invariant']['gradient_flow_relative_drift_max']:.2g}"
        )
    lines.append(f"{folder}: results.json, figures; {res['wall_time_s']:.1f} s")
    return "\n".join(lines)
