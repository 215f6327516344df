"""scipy's stiff solvers with the exact Hessian as Jacobian, stepped by hand so that one run
can be read at several horizons, stopped at a wall-clock cap, and watched for memory.

Stiff methods: BDF (Shampine & Reichelt 1997, `scipy.integrate.BDF`) and LSODA (Petzold
1983, `scipy.integrate.LSODA`). The explicit RK45 (Dormand & Prince 1980) runs the same way; a
capped run is extrapolated from its last quarter (`extrapolate`).
"""

import threading
import time

import jax
import jax.numpy as jnp
import numpy as np

_PAGE = 4096


def dense_neg_hessian(problem, batch: int = 256):
    """The Jacobian of θ' = −∇F(θ): `jac(θ) -> −∇²F(θ)`, a dense `(p, p)` float64 array,
    jitted; its columns are Hessian-vector products with unit vectors, `batch` at a time
    (`jax.lax.map`), so that the forward-over-reverse intermediates stay at `batch` tangents
    (a full `jax.hessian` would hold p of them: gigabytes at p = 1e4)."""
    grad = problem.grad_flat

    @jax.jit
    def neg_hessian(theta):
        def column(i):
            e = jax.nn.one_hot(i, theta.size, dtype=theta.dtype)
            return -jax.jvp(grad, (theta,), (e,))[1]

        # −H is symmetric, so its rows are its columns.
        return jax.lax.map(column, jnp.arange(theta.size), batch_size=batch)

    return neg_hessian


def fastest_blas_threads(p: int, reps: int = 2) -> dict:
    """Time scipy's LU (`scipy.linalg.lu_factor`) of an n×n matrix, n = min(p, 2000), with
    the BLAS's default thread count and with one thread, and return the faster limit (None:
    default) with the times. On a machine shared with other jobs, several BLAS threads can be
    several times slower (measured here: BDF at p = 1e3, 8.7 s against 2.1 s)."""
    from scipy.linalg import lu_factor
    from threadpoolctl import threadpool_limits

    n = min(int(p), 2000)
    a = np.random.default_rng(0).standard_normal((n, n)) + n * np.eye(n)
    best = {}
    for limit in (None, 1, None, 1)[: 2 * reps]:
        with threadpool_limits(limits=limit, user_api="blas"):
            start = time.perf_counter()
            lu_factor(a)
            secs = time.perf_counter() - start
        best[limit] = min(best.get(limit, secs), secs)
    choice = min(best, key=best.get)
    seconds = {str(k or "default"): v for k, v in best.items()}
    return {"limit": choice, "n": n, "lu_seconds": seconds}


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


class PeakRSS:
    """Peak resident set size of this process while the block runs, sampled every
    `interval` seconds by a thread reading /proc/self/statm; `peak_delta()` is the peak so far
    minus the RSS at entry (bytes). Allocations shorter than `interval` can be missed."""

    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.start = self.peak = 0
        self._stop = threading.Event()

    def __enter__(self):
        self.start = self.peak = _rss_bytes()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, _rss_bytes())

    def peak_delta(self) -> int:
        self.peak = max(self.peak, _rss_bytes())
        return self.peak - self.start

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak_delta()


def stepped(problem, method: str, horizons, rtol, atol, cap_s: float, jac=None, blas_threads=None):
    """One `scipy.integrate.<method>` solve of θ' = −∇F(θ) from 0 to `max(horizons)`,
    stepped by hand (`OdeSolver.step`, as `solve_ivp` does), stopped after `cap_s` seconds.

    At the first step that reaches each horizon T it records the wall time, steps and
    counters (nfev, njev, nlu) so far, the peak RSS so far, and θ(T) from the step's dense
    output. The step sequence up to T is the one a solve to T alone takes, except that this
    solve does not shorten the step that crosses T. `blas_threads` limits the BLAS threads
    (threadpoolctl; None: the default). Returns `{"horizons": {T: record or
    None}, "reached_t", "seconds", "steps", "nfev", "njev", "nlu", "capped", "t_hist",
    "wall_hist", "nfev_hist"}` (the histories sampled at every step, for `extrapolate`).
    """
    import scipy.integrate
    from threadpoolctl import threadpool_limits

    grad = problem.grad_flat

    def fun(t, y):
        return -np.asarray(grad(y))

    y0 = np.asarray(problem.theta0, dtype=np.float64)
    fun(0.0, y0)  # compiled before the clock starts
    kw = {}
    if jac is not None:
        jac(y0).block_until_ready()
        kw["jac"] = lambda t, y: np.asarray(jac(y))
    horizons = sorted(float(h) for h in horizons)
    cls = getattr(scipy.integrate, method)
    out = {"horizons": {h: None for h in horizons}, "t_hist": [0.0], "wall_hist": [0.0]}
    out["nfev_hist"] = [0]
    todo = list(horizons)
    with PeakRSS() as mem, threadpool_limits(limits=blas_threads, user_api="blas"):
        start = time.perf_counter()
        solver = cls(fun, 0.0, y0, horizons[-1], rtol=rtol, atol=atol, **kw)
        while solver.status == "running" and time.perf_counter() - start < cap_s:
            message = solver.step()
            if solver.status == "failed":
                raise RuntimeError(f"scipy {method} failed at t={solver.t:.3g}: {message}")
            wall = time.perf_counter() - start
            out["t_hist"].append(float(solver.t))
            out["wall_hist"].append(wall)
            out["nfev_hist"].append(int(solver.nfev))
            while todo and solver.t >= todo[0]:
                h = todo.pop(0)
                theta = solver.y if solver.t == h else solver.dense_output()(h)
                out["horizons"][h] = {
                    "seconds": wall,
                    "steps": len(out["t_hist"]) - 1,
                    "nfev": int(solver.nfev),
                    "njev": int(solver.njev),
                    "nlu": int(solver.nlu),
                    "peak_rss_delta_mb": mem.peak_delta() / 2**20,
                    "_theta": np.array(theta),
                }
        seconds = time.perf_counter() - start
    out.update(
        reached_t=float(solver.t),
        seconds=seconds,
        steps=len(out["t_hist"]) - 1,
        nfev=int(solver.nfev),
        njev=int(solver.njev),
        nlu=int(solver.nlu),
        peak_rss_delta_mb=(mem.peak - mem.start) / 2**20,
        capped=solver.status == "running",
        cap_s=cap_s,
    )
    return out


def extrapolate(run, t1: float, tail: float = 0.25) -> dict:
    """Steps, gradient evaluations and wall time a capped `stepped` run would need to reach
    `t1`, continuing at the rates of its last `tail` fraction of steps: flow time per step and
    per evaluation (a stiff flow near its minimum keeps an explicit method's step at its
    stability limit ~c/λ_max), and steps per second."""
    t, wall, nfev = (np.asarray(run[k], dtype=float) for k in ("t_hist", "wall_hist", "nfev_hist"))
    n = len(t) - 1
    if n < 8:
        raise ValueError(f"run: {n} steps are too few to extrapolate")
    i = int(n * (1 - tail))
    dt_per_step = (t[-1] - t[i]) / (n - i)
    dt_per_eval = (t[-1] - t[i]) / (nfev[-1] - nfev[i])
    steps_per_s = (n - i) / (wall[-1] - wall[i])
    more_steps = (t1 - t[-1]) / dt_per_step
    return {
        "t1": t1,
        "from_t": float(t[i]),
        "to_t": float(t[-1]),
        "mean_step": dt_per_step,
        "steps_per_second": steps_per_s,
        "evals_per_step": (nfev[-1] - nfev[i]) / (n - i),
        "steps": n + more_steps,
        "nfev": nfev[-1] + (t1 - t[-1]) / dt_per_eval,
        "seconds": wall[-1] + more_steps / steps_per_s,
    }
