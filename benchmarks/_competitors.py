"""What users would otherwise write: scipy's `solve_ivp` around a jitted gradient,
torchdiffeq on the same network in PyTorch, and fixed-step gradient descent."""

import math
import time

import jax
import numpy as np


# -- scipy -------------------------------------------------------------------------------------
def scipy_solve(problem, method: str, rtol: float, atol: float):
    """`scipy.integrate.solve_ivp(method)` on θ' = −∇F(θ), the gradient a jitted JAX function
    of the flat parameters. Returns `(seconds, theta1 (p,), nfev)`."""
    from scipy.integrate import solve_ivp

    grad = problem.grad_flat

    def fun(t, y):
        return -np.asarray(grad(y))

    y0 = np.asarray(problem.theta0)
    fun(0.0, y0)  # compiled before the clock starts
    start = time.perf_counter()
    sol = solve_ivp(fun, (0.0, problem.t1), y0, method=method, rtol=rtol, atol=atol)
    seconds = time.perf_counter() - start
    if sol.status != 0:
        raise RuntimeError(f"solve_ivp({method}) failed: {sol.message}")
    return seconds, sol.y[:, -1], int(sol.nfev)


# -- torchdiffeq -------------------------------------------------------------------------------
def torch_available() -> str | None:
    """None if torch and torchdiffeq import, else the reason they do not."""
    try:
        import torch  # noqa: F401
        import torchdiffeq  # noqa: F401
    except ImportError as e:
        return f"{e.name} is not installed (pip install -e '.[bench]')"
    return None


def _torch_twin(problem, device="cpu"):
    """The two-layer tanh network of `problem` in PyTorch (float64, same weights and data):
    returns `(state0, field, nfev)`, field(t, (a, b)) = −∇F, nfev a one-element counter."""
    import torch

    net = problem.net

    def tensor(x):
        return torch.tensor(np.asarray(x), dtype=torch.float64, device=device)

    a0, b0, X, Y = tensor(net.a), tensor(net.b), tensor(problem.X), tensor(problem.Y)
    scale = float(net.scale)
    nfev = [0]

    def field(t, state):
        nfev[0] += 1
        a, b = (s.detach().requires_grad_(True) for s in state)
        with torch.enable_grad():
            pred = scale * (torch.tanh(X @ b.T) @ a)
            loss = 0.5 * ((pred - Y) ** 2).sum()
            ga, gb = torch.autograd.grad(loss, (a, b))
        return (-ga, -gb)

    return (a0, b0), field, nfev


def torch_fastest_threads(problem, device="cpu", evals: int = 30) -> dict:
    """Time the PyTorch gradient with torch's default intra-op thread count and with one
    thread, and keep the faster setting (on a loaded machine, several threads can be many
    times slower). Returns the per-evaluation times and the choice."""
    import torch

    state, field, _ = _torch_twin(problem, device)
    default = torch.get_num_threads()
    per_eval = {}
    for threads in sorted({default, 1}, reverse=True):
        torch.set_num_threads(threads)
        field(0.0, state)
        start = time.perf_counter()
        for _ in range(evals):
            field(0.0, state)
        per_eval[threads] = (time.perf_counter() - start) / evals
    best = min(per_eval, key=per_eval.get)
    torch.set_num_threads(best)
    return {
        "default_threads": default,
        "threads": best,
        "us_per_eval": {str(k): v * 1e6 for k, v in per_eval.items()},
    }


def torchdiffeq_solve(problem, rtol: float, atol: float, method: str = "dopri5", device="cpu"):
    """torchdiffeq `odeint(method)` on the same two-layer tanh network written in PyTorch
    (float64, same initial weights and data). Returns `(seconds, theta1 (p,), nfev)`, θ
    flattened in the JAX order (a, then b row-major)."""
    import torch
    import torchdiffeq

    state0, field, nfev = _torch_twin(problem, device)
    times = torch.tensor([0.0, problem.t1], dtype=torch.float64, device=device)
    start = time.perf_counter()
    with torch.no_grad():
        a_t, b_t = torchdiffeq.odeint(field, state0, times, rtol=rtol, atol=atol, method=method)
    if device != "cpu":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    theta1 = np.concatenate([a_t[-1].cpu().numpy().ravel(), b_t[-1].cpu().numpy().ravel()])
    return seconds, theta1, nfev[0]


# -- gradient descent --------------------------------------------------------------------------
def gd_solver(problem):
    """Jitted fixed-step gradient descent θ ← θ − η∇F(θ), n steps (one compilation for all
    η and n): a step η covers flow time η."""
    grad = problem.grad_flat

    @jax.jit
    def run(theta, eta, n):
        return jax.lax.fori_loop(0, n, lambda i, th: th - eta * grad(th), theta)

    return run


def gd_error_fit(problem, etas, target: float):
    """Gradient descent to t1 with each step η (rounded so that n·η = t1), its error against
    the reference, and the step and number of gradient evaluations that a first-order fit
    err = C·η predicts for error `target`.

    C comes from the smallest η (the most asymptotic); the least-squares slope of log err
    against log η is reported so that the first-order assumption can be checked.
    """
    run = gd_solver(problem)
    points = []
    for eta in etas:
        n = math.ceil(problem.t1 / eta)
        eta = problem.t1 / n
        start = time.perf_counter()
        theta = jax.block_until_ready(run(problem.theta0, eta, n))
        seconds = time.perf_counter() - start
        points.append({"eta": eta, "steps": n, "error": problem.error(theta), "seconds": seconds})
    log_eta = np.log([p["eta"] for p in points])
    log_err = np.log([p["error"] for p in points])
    slope = float(np.polyfit(log_eta, log_err, 1)[0]) if len(points) > 1 else float("nan")
    smallest = min(points, key=lambda p: p["eta"])
    c = smallest["error"] / smallest["eta"]
    eta_needed = target / c
    return {
        "points": points,
        "slope": slope if math.isfinite(slope) else None,
        "C": c,
        "eta_needed": eta_needed,
        "grad_evals_needed": problem.t1 / eta_needed,
        "seconds_per_step": smallest["seconds"] / smallest["steps"],
    }


# -- equal accuracy ----------------------------------------------------------------------------
def at_equal_accuracy(run, target: float, rtol0: float, atol_ratio: float, max_tries: int = 4):
    """The time a tolerance-driven solver needs to reach error `target`.

    `run(rtol, atol) -> (seconds, error, nfev)`. Starting at `rtol0` (atol = rtol·atol_ratio),
    tolerances move by factors of 10 until two runs bracket the target error; the time is
    then interpolated linearly in log(time) against log(error). Returns a dict with every run
    and `seconds` (None if the target was never bracketed; then `nearest` is the closest run).
    """
    runs = []

    def go(rtol):
        seconds, err, nfev = run(rtol, rtol * atol_ratio)
        runs.append({"rtol": rtol, "seconds": seconds, "error": err, "nfev": nfev})
        return err

    rtol = rtol0
    err = go(rtol)
    step = 0.1 if err > target else 10.0
    for _ in range(max_tries):
        rtol *= step
        if rtol >= 1e-2 or rtol < 1e-13:
            break
        new = go(rtol)
        if (new > target) != (err > target):
            break
        err = new
    below = [r for r in runs if r["error"] <= target]
    above = [r for r in runs if r["error"] > target]
    out = {"runs": runs, "target_error": target}
    if below and above:
        lo = max(below, key=lambda r: r["error"])
        hi = min(above, key=lambda r: r["error"])
        span = math.log(lo["error"]) - math.log(hi["error"])
        w = 1.0 if span == 0 else (math.log(target) - math.log(hi["error"])) / span

        def interpolate(key):
            return math.exp((1 - w) * math.log(hi[key]) + w * math.log(lo[key]))

        out["seconds"] = interpolate("seconds")
        out["nfev"] = round(interpolate("nfev"))
    else:
        out["seconds"] = None
        out["nearest"] = min(runs, key=lambda r: abs(math.log(r["error"] / target)))
    return out
