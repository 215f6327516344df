"""What a cold first call compiles (issue 21): a default, non-stiff `gradient_flow` compiles its
solve (which makes its initial state too) and the Hessian-vector product of the stiffness tests
(whose Lanczos recurrence runs on the host; compiled on a second thread even where no test is
needed, ready for one), each once, no program to take the end state out of the solve's output,
and nothing of the stiff solver
(exprb32's trial step waits until a switch is considered); the checks and the flattening of
the parameters run on the host, not as eager jax programs. Counted by name from JAX's compile
events, not timed."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import monitoring

import flows

# Shapes no other test uses, so that every program of this problem is new to the process.
X = jax.random.normal(jax.random.PRNGKey(3), (23, 7))
Y = jnp.tanh(X @ jnp.linspace(-1.0, 1.0, 7))
MODEL = eqx.nn.MLP(7, "scalar", 11, 2, activation=jnp.tanh, key=jax.random.PRNGKey(4))


def _loss(model):
    return 0.5 * jnp.mean((jax.vmap(model)(X) - Y) ** 2)


def _lowered(event, duration, **kwargs):
    # every new program is lowered once, before any persistent-cache lookup, on whichever
    # thread compiles it (the stiffness tests' program is compiled on a second thread)
    if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
        _NAMES.append(kwargs.get("fun_name"))


_NAMES = []
monitoring.register_event_duration_secs_listener(_lowered)


def _compiled(call) -> tuple:
    """(call(), the names of the programs it made, from JAX's compile events)."""
    before = len(_NAMES)
    out = call()
    return out, _NAMES[before:]


def test_a_default_nonstiff_first_call_compiles_no_stiff_solver_and_no_eager_checks():
    traj, names = _compiled(lambda: flows.gradient_flow(_loss, MODEL, 10.0))
    assert traj.stats["solvers"] == ["tsit5"] and traj.stats["probes"] == []
    # the tests' program is compiled once, alongside the solve, whether or not a test runs
    # (one Lanczos test ran here)
    for program in ("jit(_solve_span)", "jit(_hvp)"):
        assert names.count(program) == 1, names
    assert "jit(_initial_state)" not in names, names  # made inside the solve program
    assert "jit(squeeze)" not in names, names  # the end state is indexed on the host
    # exprb32's trial step and the φ-function error estimate are not compiled
    assert not [n for n in names if "probe_error" in n or "exprb" in n.lower()], names
    # measured before: 5 × isfinite and _reduce_all (check_finite), 5 × ravel and one
    # concatenate (FlatSpec.ravel), one copy (jnp.asarray); now none
    eager = ("isfinite", "_reduce_all", "ravel", "concatenate")
    assert not [n for n in names if any(f"jit({e})" == n for e in eager)], names
    # the second call compiles nothing
    _, again = _compiled(lambda: flows.gradient_flow(_loss, MODEL, 10.0))
    assert again == []
