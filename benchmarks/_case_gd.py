"""Case 4: fixed-step gradient descent to the same accuracy."""

from . import _competitors as comp
from ._case_common import _fmt_err, _row, problem
from ._case_overhead import _ours


def case_gd(cfg, params):
    """Gradient evaluations fixed-step GD needs for the error the flow reaches at t1."""
    prob = problem("two_layer", params, cfg)
    ours = _ours(prob, cfg)
    lam = prob.lambda_max()
    etas = [1.0 / lam / 2**k for k in range(cfg.gd_halvings)]
    fit = comp.gd_error_fit(prob, etas, ours["error"])
    ratio = fit["grad_evals_needed"] / ours["grad_evals"]
    fit["lambda_max_hessian_at_init"] = lam
    fit["estimated_seconds"] = fit["grad_evals_needed"] * fit["seconds_per_step"]
    return [
        _row(
            cfg,
            "gd",
            params,
            "GD grad evals ÷ flow grad evals, same error at t1",
            ratio,
            "×",
            goal=(">=", 1000.0),
            anchor="2.7e3× (2,500 vs 6.8e6)",
            ours=f"{ours['grad_evals']} evals, {_fmt_err(ours['error'])}",
            theirs=f"{fit['grad_evals_needed']:.2g} evals (extrapolated, slope {fit['slope']:.2f})",
            details={"gradflows": ours, "gd": fit},
            note=f"GD would take ~{fit['estimated_seconds']:.3g} s",
        )
    ]


# -- 5. long horizon ---------------------------------------------------------------------------
