"""One cold measurement in a fresh process, for case 12 (`_case_latency.py`):
`python -m benchmarks._latency_probe diffrax|gradflows` prints one JSON line with the first
call's wall and CPU time (compilation included) and the second's.

The problem is issue 21's: a user's own `eqx.nn.MLP` 8 → 54 → 54 → 1 (tanh, p = 3,511) on
50 Gaussian points, squared loss, to t = 100 with every default of `flows.gradient_flow`;
"diffrax" is one jitted `diffrax.diffeqsolve` (Tsit5, PID controller at the same
tolerances, the same 101 save times) of the same gradient field.
"""

import json
import sys
import time

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp

import flows
from flows._flat import FlatSpec
from models import partition

T1 = 100.0
X = jax.random.normal(jax.random.PRNGKey(0), (50, 8))
Y = jnp.sin(X @ jnp.linspace(-1.0, 1.0, 8))
MODEL = eqx.nn.MLP(8, "scalar", 54, 2, activation=jnp.tanh, key=jax.random.PRNGKey(1))
TRAINABLE, STATIC = partition(MODEL)
SPEC = FlatSpec.of(TRAINABLE)


def loss(model):
    return 0.5 * jnp.mean((jax.vmap(model)(X) - Y) ** 2)


@jax.jit
def _diffrax_solve(y0):
    def field(t, y, args):
        return -jax.grad(lambda w: loss(eqx.combine(SPEC.unravel(w), STATIC)))(y)

    settings = flows.SolveSettings()
    sol = dfx.diffeqsolve(
        dfx.ODETerm(field),
        dfx.Tsit5(),
        0.0,
        T1,
        None,
        y0,
        saveat=dfx.SaveAt(ts=jnp.asarray(flows.log_times(T1, 100, t_min=1e-3))),
        stepsize_controller=dfx.PIDController(rtol=settings.rtol, atol=settings.atol),
        max_steps=settings.max_steps,
    )
    return sol.ys, sol.stats["num_steps"]


def run(what: str) -> int:
    if what == "diffrax":
        ys, steps = _diffrax_solve(SPEC.ravel(TRAINABLE))
        ys.block_until_ready()
        return int(steps)
    return flows.gradient_flow(loss, MODEL, T1).stats["num_steps"]


if __name__ == "__main__":
    what = sys.argv[1]
    # CPU time (all threads, XLA's compiler threads included) beside the wall time: on a
    # loaded machine the wall time measures the load as much as the call
    start, cpu = time.perf_counter(), time.process_time()
    steps = run(what)
    cold, cold_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    run(what)
    warm, warm_cpu = time.perf_counter() - start, time.process_time() - cpu
    out = {"what": what, "cold": cold, "warm": warm, "steps": steps, "p": SPEC.size}
    print(json.dumps({**out, "cold_cpu": cold_cpu, "warm_cpu": warm_cpu}))
