"""The central flow's counts in `stats`: Hessian-vector products, third-derivative products,
complementarity solves and events, against the products actually made (each one ticked by a
host callback of this test) and against the count of one Lanczos call on a 3-parameter
problem, fixed by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import monitoring

from flows.large_steps import _central, _central_rmsprop, _sharpness, central_flow
from flows.large_steps._hessian import hvp

ETA = 0.2  # 2/η = 10
W0 = jnp.asarray([0.3, 0.05, 0.2])  # (x, z, y)


def edge_toy(w):
    """H ≈ diag(9 + z, 1, ½) near x = 0: z is pulled to 2, so the sharpness 9 + z reaches
    2/η = 10 at z = 1 (an event) and the central flow holds it there."""
    x, z, y = w
    return 0.5 * (9.0 + z) * x**2 + 0.5 * (z - 2.0) ** 2 + 0.25 * y**2


MADE = {"hvp": 0, "third": 0}


def _tick(name):
    def add(_):
        MADE[name] += 1

    return add


def counting_hvp(f, w, v):
    # given an entry of v, so that under vmap (the Rayleigh quotients) it runs per vector
    jax.debug.callback(_tick("hvp"), v[0])
    return hvp(f, w, v)


def counting_third(f, w, u, v):
    jax.debug.callback(_tick("third"), v[0])
    return jax.jvp(lambda x: hvp(f, x, u), (w,), (v,))[1]


_NAMES = []


def _lowered(event, duration, **kwargs):
    # every new program is lowered once, before any persistent-cache lookup
    if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
        _NAMES.append(kwargs.get("fun_name"))


monitoring.register_event_duration_secs_listener(_lowered)


@pytest.fixture(scope="module")
def flow():
    # the products are ticked where they are made (this test's own loss: a fresh trace)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sharpness, "hvp", counting_hvp)
        patch.setattr(_central, "third", counting_third)
        before = len(_NAMES)
        traj = central_flow(edge_toy, W0, 1.5, eta=ETA, ts=np.linspace(0, 1.5, 4),
                            save_params=False, rtol=1e-8, atol=1e-10)  # fmt: skip
        jax.effects_barrier()
    return traj, _NAMES[before:]


def test_a_k1_first_call_compiles_the_solve_and_one_probe_program_once(flow):
    # the start, the saves and the event share one program (`_at`); nothing else of the
    # flow's own is compiled, however many saves, events or values of t and m it meets
    names = flow[1]
    assert names.count("jit(_solve_span)") == 1, names
    assert names.count("jit(_at_program)") == 1, names
    assert not [n for n in names if n in ("jit(_eig)", "jit(_phase)", "jit(_record)")], names


def test_counts_are_the_products_made_and_the_events(flow):
    flow = flow[0]
    stats = flow.stats
    print({key: stats[key] for key in ("hvps", "third_products", "complementarity_solves",
                                       "num_events", "grad_evals", "num_steps")})  # fmt: skip
    assert stats["num_events"] == len(stats["events"]) == 1  # the edge, joined
    assert stats["events"][0][1] == 1
    assert stats["hvps"] == MADE["hvp"] > 0
    assert stats["third_products"] == MADE["third"] > 0
    assert stats["jvp_evals"] == stats["hvps"]
    # (p = 3, k = 1: the event's and the saves' Lanczos for the top 2 eigenpairs takes 6
    # each, p = 3 products, one for its scale and 2 Rayleigh quotients; the field's on the
    # edge, the top 1 from the warm start scaled by 2/η with Ritz values, 1 to 3)
    # every solve on the edge (k = 1: σ² in closed form) takes 1 third-derivative product;
    # a record below the edge computes the block too, without a solve: the 2 saves before
    # the edge, the start's probe and the event's
    below = int(np.sum(flow.observables["tracked"] == 0))
    assert below == 2
    assert stats["third_products"] == stats["complementarity_solves"] + below + 2
    assert stats["complementarity_solves"] > 0


def rmsprop_toy(w):
    """L = ½(w1² + 0.3w2²): scalar RMSProp (η = 0.5, β2 = 0.9, ε = 1e-3) from (1, 1) and its
    default ν0 reaches the edge λ1/(√ν + ε) = 2/η at t ≈ 13.56 (scipy's stable flow, as in
    test_central_rmsprop.py) and is held there."""
    return 0.5 * (w[0] ** 2 + 0.3 * w[1] ** 2)


def test_rmsprop_counts_are_the_products_made_and_the_events():
    # the RMSProp field (its own Lanczos on P^{-1/2}HP^{-1/2} and its own third products)
    # reports through the same counts as gradient descent's
    made = dict(MADE)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sharpness, "hvp", counting_hvp)
        patch.setattr(_central_rmsprop, "third", counting_third)
        traj = central_flow(rmsprop_toy, jnp.asarray([1.0, 1.0]), 14.5, eta=0.5,
                            optimizer="scalar_rmsprop", beta2=0.9, eps=1e-3,
                            ts=np.array([0.0, 7.0, 14.5]), save_params=False, rtol=1e-6,
                            atol=1e-9)  # fmt: skip
        jax.effects_barrier()
    stats = traj.stats
    print({key: stats[key] for key in ("hvps", "third_products", "complementarity_solves",
                                       "num_events", "grad_evals", "num_steps")})  # fmt: skip
    assert stats["num_events"] == len(stats["events"]) == 1
    assert stats["events"][0][1] == 1 and stats["events"][0][0] == pytest.approx(13.557, abs=1e-3)
    assert stats["hvps"] == MADE["hvp"] - made["hvp"] > 0
    assert stats["third_products"] == MADE["third"] - made["third"] > 0
    assert stats["jvp_evals"] == stats["hvps"] and stats["grad_evals"] > 0
    # as gradient descent's: one third product per solve on the edge, per save below it
    # (the saves at t = 0 and 7), the start's probe and the event's
    below = int(np.sum(traj.observables["tracked"] == 0))
    assert below == 2
    assert stats["third_products"] == stats["complementarity_solves"] + below + 2
    assert stats["complementarity_solves"] > 0


def test_rmsprop_central_flow_says_its_step_size_collapsed(monkeypatch):
    # RMSProp's central flow runs the loop of gradient descent's, so a failed solve says
    # which failure and where as that one does (not a bare "solver failed"): here forced by
    # a floor on the step of 5 % of t1 (the first step is η/4 = 0.125 < 0.725); the same
    # problem and shapes as the test above, whose programs it reuses
    monkeypatch.setattr(_central, "DTMIN_RELATIVE", 0.05)
    says = r"failed at t=0\.125: its step size collapsed below 0\.05·max\(1, t1\) with 0 of k = 1"
    with pytest.raises(FloatingPointError, match=says):
        central_flow(rmsprop_toy, jnp.asarray([1.0, 1.0]), 14.5, eta=0.5,
                     optimizer="scalar_rmsprop", beta2=0.9, eps=1e-3,
                     ts=np.array([0.0, 7.0, 14.5]), save_params=False, rtol=1e-6,
                     atol=1e-9)  # fmt: skip
