"""Case 2: scipy `solve_ivp` at equal accuracy."""

from . import _competitors as comp
from ._case_common import _fmt_err, _row, problem
from ._case_overhead import _ours


def case_scipy(cfg, params):
    """`solve_ivp` (RK45, DOP853) calling a jitted gradient, at the error gradflows reaches."""
    prob = problem("two_layer", params, cfg)
    ours = _ours(prob, cfg)
    rows = []
    for method in ("RK45", "DOP853"):

        def run(rtol, atol, method=method):
            best = None
            for _ in range(1 if cfg.quick else 2):
                seconds, theta, nfev = comp.scipy_solve(prob, method, rtol, atol)
                best = seconds if best is None else min(best, seconds)
            return best, prob.error(theta), nfev

        match = comp.at_equal_accuracy(run, ours["error"], prob.rtol, prob.atol / prob.rtol)
        same_tol = match["runs"][0]
        value = None if match["seconds"] is None else match["seconds"] / ours["seconds"]
        rows.append(
            _row(
                cfg,
                "scipy",
                params,
                f"{method} time ÷ gradflows time, equal error",
                value,
                "×",
                goal=(">=", 5.0),
                goal_params=100_000,
                anchor="1.8× (0.69 s / 0.38 s at p=1e4)",
                ours=f"{ours['seconds']:.2f} s, {_fmt_err(ours['error'])}",
                theirs=(
                    f"{match['seconds']:.2f} s at equal error"
                    if match["seconds"] is not None
                    else "never reached the error"
                ),
                details={
                    "gradflows": ours,
                    "scipy": match,
                    "same_tolerance_ratio": same_tol["seconds"] / ours["seconds"],
                    "same_tolerance_error": same_tol["error"],
                },
                note=f"same rtol: {same_tol['seconds'] / ours['seconds']:.2f}×, "
                f"{_fmt_err(same_tol['error'])}",
            )
        )
    return rows


# -- 3. torchdiffeq ----------------------------------------------------------------------------
