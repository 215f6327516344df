"""Integrating a flow other than −∇L on the flat parameter vector with the engine of
`gradient_flow` (chunks, the solvers and "auto", checkpoints, failures), recording the loss
and the observables as `gradient_flow` does."""

import equinox as eqx
import jax
import numpy as np

from .._checks import check_finite, check_flag, check_loss, check_observables
from .._flat import FlatSpec, trainable_of
from .._flow import Trajectory, _Recorder, trajectory
from .._integrate import integrate
from .._settings import resolve_flow_inputs


def field_flow(make_field, loss, params0, t1, *, settings, ts, observables, save_params,
               progress, checkpoint, desc, config, overrides) -> Trajectory:  # fmt: skip
    """`make_field(loss, static, spec)` → an equinox Module (t, w, args) ↦ w' on the flat
    trainable vector; integrated from `params0` to `t1` as `gradient_flow` integrates −∇L.
    `config` is added to the trajectory's config."""
    t1, ts, settings = resolve_flow_inputs(t1, ts, settings, overrides)
    save_params = check_flag("save_params", save_params)
    trainable, static = trainable_of("params0", params0)
    check_finite("params0", trainable)
    check_loss(loss, params0)
    spec = FlatSpec.of(trainable)
    obs = check_observables(observables, params0)
    saved, _, stats = integrate(
        make_field(loss, static, spec),
        spec.ravel(trainable),
        ts,
        _Recorder(loss, obs, save_params, static, spec),
        settings,
        progress=progress,
        desc=desc,
        checkpoint=checkpoint,
    )
    params = None
    if save_params:
        params = eqx.combine(spec.unravel_rows(saved["params"]), static)
        params = jax.tree.map(lambda a: np.asarray(a) if eqx.is_array(a) else a, params)
    return trajectory(ts, params, saved, stats, {**settings.to_dict(), "t1": t1, **config})
