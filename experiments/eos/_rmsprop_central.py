"""`gradflows run eos --optimizer rmsprop`: the central flow of RMSProp (Cohen, Damian,
Talwalkar, Kolter & Lee 2025, §5) beside RMSProp, from the same start.

RMSProp starts from ν_0 = ν̄, the mean of ∇L(w0)⊙², in every coordinate: its first steps are
then gradient descent at the step η/√ν̄, and its preconditioned sharpness rises towards 2/η as
ν adapts to each coordinate (from ν_0 = 0, or ∇L(w0)⊙², λ_max(P⁻¹H) starts 10²–10⁴ times
above 2/η at the steps that train the eos MLP: a catapult the central flow does not
describe). The flow's ν(0) is ν_1 = β2ν̄ + (1 − β2)∇L(w0)⊙², RMSProp's first preconditioner.
"""


def rmsprop_start(loss, params0, beta2: float):
    """`(nu_0, nu_1)`: RMSProp's ν_0 = mean(∇L(w0)⊙²) in every coordinate and its ν_1 =
    β2ν_0 + (1 − β2)∇L(w0)⊙², the central flow's ν(0); pytrees of the trainable
    parameters."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    from models import partition

    trainable, static = partition(params0)
    g = jax.grad(lambda d: loss(eqx.combine(d, static)))(trainable)
    leaves = jax.tree.leaves(g)
    mean = sum(jnp.sum(a * a) for a in leaves) / sum(a.size for a in leaves)
    nu_0 = jax.tree.map(lambda a: jnp.full_like(a, mean), g)
    return nu_0, jax.tree.map(lambda v, a: beta2 * v + (1 - beta2) * a * a, nu_0, g)


def rmsprop_central(loss, params0, *, s: dict, eta: float, beta2: float, nu0, ts, report=None):
    """The central flow of RMSProp at η from ν(0) = `nu0` to `s["t1"]` with `s["k"]` tracked
    eigenvalues, saved at `ts`; drawn to where it stops (`EdgeLimitReached`, a step budget).

    **Returns:** `(record, arrays)`: arrays `t_cf_opt`, `loss_cf_opt`, `predicted_loss_cf_opt`
    (L + tr X/η, its prediction of RMSProp's time-averaged loss), `sharpness_cf_opt` (the
    effective sharpness λ_max(P⁻¹H), held at 2/η on the edge), `tracked_cf_opt`; the record
    has `events` (the number of joins and leaves), `t_edge` (the first join, or None),
    `held` (max |ηλ_max(P⁻¹H)/2 − 1| where tracked, or None) and `stopped` (None, or the
    time and the reason; t = 0 where λ_max(P0⁻¹H0) > 2/η: RMSProp then starts unstable, a
    catapult the central flow does not describe, and there is no flow to draw)."""
    import numpy as np

    from flows import MaxStepsReached
    from flows.large_steps import EdgeLimitReached, central_flow
    from flows.large_steps._central import StartAboveEdge

    from ._cli import solve_settings_of

    stopped = None
    try:
        traj = central_flow(
            loss, params0, s["t1"], eta=eta, k=s["k"], optimizer="rmsprop", beta2=beta2,
            eps=s["eps"], nu0=nu0, ts=ts,
            settings=solve_settings_of(s), save_params=False,
            report=None if report is None else lambda t, t1: report(t, t1, "rmsprop central flow"),
        )  # fmt: skip
    except (EdgeLimitReached, MaxStepsReached) as e:
        stopped = {"t": float(e.t), "reason": " ".join(str(e).split())}
        traj = e.partial
    except StartAboveEdge as e:  # RMSProp starts with a catapult
        stopped, traj = {"t": 0.0, "reason": " ".join(str(e).split())}, None
    record = {"events": 0, "t_edge": None, "held": None, "stopped": stopped}
    empty = np.zeros(0)
    names = ("t_cf_opt", "loss_cf_opt", "predicted_loss_cf_opt", "sharpness_cf_opt",
             "tracked_cf_opt")  # fmt: skip
    if traj is None:
        return record, dict.fromkeys(names, empty)
    o = traj.observables
    tracked = o["tracked"] > 0
    events = traj.stats["events"]
    record["events"] = len(events)
    record["t_edge"] = next((float(t) for t, m in events if m > 0), None)
    if tracked.any():
        record["held"] = float(np.max(np.abs(eta * o["sharpness"][tracked] / 2 - 1)))
    values = (traj.ts, traj.loss, o["predicted_loss"], o["sharpness"], o["tracked"])
    return record, dict(zip(names, (np.asarray(v) for v in values)))
