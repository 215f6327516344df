"""What every benchmark case shares: the run configuration, result rows, the problems."""

import dataclasses

import equinox as eqx
import jax
import numpy as np

import flows
import models

from . import _problem

CASES = (
    "overhead",
    "scipy",
    "torch",
    "gd",
    "horizon",
    "linear",
    "lazy",
    "alpha",
    "stiff",
    "engine",
    "exprb",
    "latency",
    "kvaerno",
    "relu",
    "exprb_linear",
    "auto_family",
    "transport",
)
TITLES = {
    "overhead": "1. solver overhead",
    "scipy": "2. scipy solve_ivp",
    "torch": "3. torchdiffeq",
    "gd": "4. fixed-step GD",
    "horizon": "5. long horizon",
    "linear": "6. linear branch",
    "lazy": "7. gradflows run lazy",
    "alpha": "8. alpha sweep",
    "stiff": "9. stiff: scipy BDF/LSODA, RK45",
    "engine": '10. solver="auto" ÷ best fixed solver',
    "exprb": "11. exprb32 ÷ Tsit5 at t = 100",
    "latency": "12. first call, compilation reuse",
    "kvaerno": "13. Kvaerno5 steps on a small net",
    "relu": "14. gradflows run lazy --activation relu",
    "exprb_linear": "15. exprb32 steps on a stiff linear field",
    "auto_family": '16. solver="auto" ÷ best fixed on a generated family',
    "transport": "17. f-regularised OT: KL vs POT/OTT, each f vs KL",
}


@dataclasses.dataclass
class Config:
    """What a run measures: sizes, horizon, repeats. `quick` shrinks everything."""

    params: tuple = (10_000, 100_000)
    t1: float = 100.0
    horizon_t1: float = 1e6
    repeats: int = 3
    gd_halvings: int = 4
    alphas: tuple = (1.0, 10.0, 100.0, 1000.0)
    quick: bool = False
    profile: bool = True
    torch_device: str = "cpu"
    scipy_cap_s: float = 1200.0  # case 9: wall-clock cap of each scipy BDF/LSODA run
    rk45_cap_s: float = 60.0  # case 9: RK45 runs this long, then is extrapolated
    script: str = "python benchmarks/run.py --cases {case}{size}"

    def command(self, case, params=None):
        """The command line that reproduces one case at one size."""
        return self.script.format(case=case, size=f" --params {size(params)}" if params else "")


def size(params) -> str:
    """A parameter count as 1e4, 1.1e4, …"""
    return f"{params:.2g}".replace("e+0", "e").replace("e+", "e")


def _row(cfg, case, params, label, value, unit, *, goal=None, goal_params=None, **fields):
    """`goal` is (op, threshold), op "<=" or ">="; it is judged only at `goal_params`
    (all sizes when None)."""
    applies = goal is not None and (goal_params is None or params == goal_params)
    met = None
    if applies and value is not None:
        met = bool(value <= goal[1]) if goal[0] == "<=" else bool(value >= goal[1])
    goal_text = None
    if goal is not None:
        goal_text = f"{goal[0]} {goal[1]:g}" + (f" at p={size(goal_params)}" if goal_params else "")
    row = {
        "case": case,
        "title": TITLES[case],
        "params": params,
        "label": label,
        "value": value,
        "unit": unit,
        "goal": goal_text,
        "goal_met": met,
        "anchor": None,
        "ours": None,
        "theirs": None,
        "details": {},
        "command": cfg.command(case, params),
    }
    row.update(fields)
    return row


def _skip(cfg, case, params, why):
    return _row(cfg, case, params, "skipped", None, "", note=why)


def _fmt_err(e):
    return f"err {e:.1e}"


# -- shared problem instances (one compilation each per process) ----------------------------------
_PROBLEMS: dict = {}


def problem(kind, params, cfg):
    key = (kind, params)
    if key not in _PROBLEMS:
        if kind == "two_layer":
            _PROBLEMS[key] = _problem.two_layer(params, t1=cfg.t1)
        elif kind == "linearized":
            base = problem("two_layer", params, cfg)
            _PROBLEMS[key] = _problem.Problem(
                models.linearize(base.net),
                base.X,
                base.Y,
                flows.SquaredLoss("sum"),
                t1=cfg.t1,
                name="linearised two-layer tanh, squared",
            )
        elif kind == "deep_linear":
            _PROBLEMS[key] = _problem.deep_linear_logistic(params, t1=cfg.horizon_t1)
        else:
            raise ValueError(kind)
    return _PROBLEMS[key]


def _final_only(prob):
    """The user-level call of cases 1–4: save θ at t = 0 and t1 only, Tsit5."""
    return dict(solver="tsit5", ts=np.array([0.0, prob.t1]))


# -- 1. overhead -------------------------------------------------------------------------------


def _bare_loop(prob, steps):
    grad = jax.grad(lambda p: prob.loss(eqx.combine(p, prob.static)))

    @jax.jit
    def run(trainable):
        def body(theta, _):
            g = grad(theta)
            return jax.tree.map(lambda w, gw: w - 1e-3 * gw, theta, g), None

        return jax.lax.scan(body, trainable, None, length=steps)[0]

    return run
