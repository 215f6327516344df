"""Case 8: the α sweep of `lazy_comparison`: one compilation for every α."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import flows
import models

from . import _problem
from ._case_common import _row, problem
from ._timing import best_of, timed


@dataclasses.dataclass(frozen=True, eq=False)
class _AlphaLoss:
    """F_α(w) = R(α(f_w(X) − f_{w0}(X)))/α², with (α, w0) read from a `Frozen` leaf so that
    every α shares one compilation. With `batched`, w and α carry a leading axis and the
    losses are summed: the gradient of the sum is every member's own gradient."""

    X: jax.Array
    Y: jax.Array
    batched: bool

    def single(self, net, alpha, net0):
        h = jax.vmap(net)(self.X) - jax.vmap(net0)(self.X)
        return 0.5 * jnp.sum((alpha * h - self.Y) ** 2) / alpha**2

    def __call__(self, params):
        net, frozen = params
        alpha, net0 = models.read_frozen(frozen)
        if not self.batched:
            return self.single(net, alpha, net0)
        per = eqx.filter_vmap(lambda n, a: self.single(n, a, net0))(net, alpha)
        return jnp.sum(per)


def case_alpha(cfg, params):
    """An α sweep of F_α flows, sequential (one compilation, α traced) against batched: all
    α in one `gradient_flow` (stacked parameters, shared steps), and `jax.vmap` of a raw
    diffrax solve (own steps per member, runs until the slowest finishes)."""
    base = problem("two_layer", params, cfg)
    net, X, Y, t1 = base.net, base.X, base.Y, base.t1
    alphas = jnp.asarray(cfg.alphas)
    A = len(cfg.alphas)
    kw = dict(solver="tsit5", ts=np.array([0.0, t1]), rtol=base.rtol, atol=base.atol)
    loss_seq = _AlphaLoss(X, Y, batched=False)
    loss_bat = _AlphaLoss(X, Y, batched=True)
    trainable, static = models.partition(net)
    stacked = eqx.combine(jax.tree.map(lambda x: jnp.stack([x] * A), trainable), static)

    def flat_final(traj, i=None):
        tr, _ = models.partition(traj.at(-1)[0])
        leaves = jax.tree.leaves(tr)
        if i is not None:
            leaves = [x[i] for x in leaves]
        return jnp.concatenate([jnp.ravel(x) for x in leaves])

    def sequential():
        return [
            flows.gradient_flow(loss_seq, (net, models.Frozen((a, net))), t1, **kw) for a in alphas
        ]

    def stacked_flow():
        return flows.gradient_flow(loss_bat, (stacked, models.Frozen((alphas, net))), t1, **kw)

    def raw_one(alpha):
        tr, st = models.partition((net, models.Frozen((alpha, net))))
        field = _problem._NegGrad(loss_seq, st)
        y1, steps = _problem._raw_solve(
            field,
            _problem.RAW_SOLVERS["tsit5"],
            tr,
            jnp.asarray(t1),
            base.rtol,
            base.atol,
            1_000_000,
        )
        return y1, steps

    raw_vmap = eqx.filter_jit(jax.vmap(raw_one))

    def raw_sequential():
        return [jax.block_until_ready(raw_one(a)) for a in alphas]

    fns = {
        "sequential": sequential,
        "stacked": stacked_flow,
        "raw_sequential": raw_sequential,
        "raw_vmap": lambda: jax.block_until_ready(raw_vmap(alphas)),
    }
    cold = {k: timed(f)[0] for k, f in fns.items()}
    secs, out = best_of(fns, cfg.repeats)
    seq, bat = out["sequential"], out["stacked"]
    moved = [float(jnp.linalg.norm(flat_final(t) - base.theta0)) for t in seq]
    agree = [
        float(jnp.linalg.norm(flat_final(bat, i) - flat_final(s))) / m
        for i, (s, m) in enumerate(zip(seq, moved))
    ]
    ratio = secs["stacked"] / secs["sequential"]
    raw_ratio = secs["raw_vmap"] / secs["raw_sequential"]
    faster = "batched (stacked)" if ratio < 1 else "sequential"
    details = {
        "alphas": list(cfg.alphas),
        "seconds": secs,
        "cold_seconds": cold,
        "compile_seconds_of_a_new_loss_closure": cold["sequential"] - secs["sequential"],
        "steps_sequential": [t.stats["num_steps"] for t in seq],
        "steps_stacked": bat.stats["num_steps"],
        "steps_raw_sequential": [int(s) for _, s in out["raw_sequential"]],
        "steps_raw_vmap": [int(s) for s in out["raw_vmap"][1]],
        "stacked_vs_sequential_difference_relative_to_distance_moved": agree,
        "raw_vmap_over_raw_sequential": raw_ratio,
    }
    if cfg.profile:
        details["lazy_comparison_compile_reuse"] = _lazy_compile_reuse(base, cfg)
    return [
        _row(
            cfg,
            "alpha",
            params,
            f"{A} alphas: batched (stacked) time ÷ sequential time",
            ratio,
            "×",
            ours=f"sequential {secs['sequential']:.2f} s, stacked {secs['stacked']:.2f} s",
            theirs=f"raw vmap {secs['raw_vmap']:.2f} s vs raw loop {secs['raw_sequential']:.2f} s",
            details=details,
            note=f"faster: {faster}; raw vmap/loop {raw_ratio:.2f}×",
        )
    ]


def _lazy_compile_reuse(base, cfg):
    """Time two `lazy_comparison` calls with different α on the same side of
    `remainder_alpha` (30; the remainder form is a static switch): the second should not
    compile."""
    width = 20
    net = models.symmetrize(
        models.TwoLayerNet(_problem.IN_SIZE, width, activation="tanh", key=jax.random.PRNGKey(3)),
        "doubled",
    )
    times = []
    for alpha in (100.0, 1000.0):
        seconds, _ = timed(
            lambda alpha=alpha: flows.lazy.lazy_comparison(
                net, (base.X, base.Y), alpha, 1.0, solver="tsit5", rtol=1e-6, atol=1e-9
            )
        )
        times.append(seconds)
    return {
        "width": width,
        "t1": 1.0,
        "alphas": [100.0, 1000.0],
        "first_alpha_s": times[0],
        "second_alpha_s": times[1],
    }
