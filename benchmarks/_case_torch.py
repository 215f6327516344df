"""Case 3: torchdiffeq at equal accuracy."""

from . import _competitors as comp
from ._case_common import _fmt_err, _row, _skip, problem
from ._case_overhead import _ours
from ._timing import best_of


def case_torch(cfg, params):
    """torchdiffeq dopri5, same network in PyTorch (CPU, float64), same tolerances."""
    why = comp.torch_available()
    if why:
        return [_skip(cfg, "torch", params, why)]
    prob = problem("two_layer", params, cfg)
    ours = _ours(prob, cfg)
    device = cfg.torch_device
    threads = comp.torch_fastest_threads(prob) if device == "cpu" else None
    prob.raw("tsit5")
    secs, out = best_of(
        {
            "raw": lambda: prob.raw("tsit5"),
            "torch": lambda: comp.torchdiffeq_solve(prob, prob.rtol, prob.atol, device=device),
        },
        1 if cfg.quick else 2,
    )
    t_torch, theta_torch, nfev = out["torch"]
    t_torch = min(t_torch, secs["torch"])
    err_torch = prob.error(theta_torch)
    err_raw = prob.error(out["raw"][0])
    details = {
        "gradflows": ours,
        "raw_diffrax_tsit5": {
            "seconds": secs["raw"],
            "error": err_raw,
            "grad_evals": out["raw"][1],
        },
        "torchdiffeq_dopri5": {"seconds": t_torch, "error": err_torch, "nfev": nfev},
        "torch_threads": threads,
        "torch_device": device,
        "torchdiffeq_over_raw_diffrax": t_torch / secs["raw"],
    }
    return [
        _row(
            cfg,
            "torch",
            params,
            "torchdiffeq dopri5 time ÷ gradflows time, same tol",
            t_torch / ours["seconds"],
            "×",
            goal=(">=", 7.0),
            anchor="7.4× (raw diffrax 0.42 s vs 3.1 s at p=1e4)",
            ours=f"{ours['seconds']:.2f} s, {_fmt_err(ours['error'])}",
            theirs=f"{t_torch:.2f} s, {_fmt_err(err_torch)}",
            details=details,
            note=f"vs raw diffrax Tsit5: {t_torch / secs['raw']:.2f}× ({_fmt_err(err_raw)})",
        )
    ]


# -- 4. gradient descent -----------------------------------------------------------------------
