"""`filippov_flow`: the exact (Filippov) gradient flow of a two-layer net with kinked activation.

The flow is a loop of diffrax solves, one per piece (a fixed side or sliding state for every
pre-activation); each solve ends at the first event (a crossing of a kink surface, or a
sliding slope reaching an end of its interval), located on the solver's dense output by
secant steps from beyond the root (`_event_root.BeyondSecant`). Between events the field is
smooth (polynomial in the weights, rational where sliding), so the adaptive solver takes the
steps the smooth flow needs. Runs of pieces that end in plain crossings are solved in one
compiled `lax.while_loop` (`_loop.crossing_run`); the host takes the other decisions
(`_pieces.Pieces.settle`) and keeps the saves.
"""

import dataclasses
import os
import time

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checkpoint import (
    Fingerprint,
    atomic_savez,
    check_path,
    digest,
    leaf_paths,
    load,
    settings_text,
    summary,
)
from .._checks import (
    check_finite,
    check_flag,
    check_float64,
    check_observables,
    check_positive,
)
from .._failures import MaxStepsReached
from .._flow import Trajectory
from .._losses import SquaredLoss, get_loss
from .._progress import progress_bar
from .._settings import SolveSettings, resolve_flow_inputs
from .._solver._cacheable import errors_as_nan
from .._solver._clip_floor import one_step_clip_floor
from .._solver._solve import save_state, solve_span
from .._solver._solvers import EVALS_PER_STEP, EXPLICIT, make_solver
from ._event_root import BeyondSecant
from ._kinks import two_layer_form
from ._loop import _WINDOW as _LOOP_WINDOW
from ._loop import ABORTED, SETTLE, crossing_run, take
from ._pieces import Counts, Pieces, check_chatter, rhs
from ._sliding import PieceField

_SQUARED = SquaredLoss()  # the default loss, R = ½‖f − Y‖²
_CHECKPOINT_EVERY_S = 10.0  # wall time between checkpoint writes


_ROOT = BeyondSecant(rtol=1e-15, atol=1e-15)
# A piece saves at the next _SAVE_WINDOW pending save times (None: at all of them), and is
# solved again with all of them when it reaches past the window: the save buffer of all the
# save times of a lazy run costs more than a step of the default net (docs/performance.md).
_SAVE_WINDOW = 8
_WINDOW_STEPS = 64  # a piece in window mode stops after this many steps and is solved again
# Runs of pieces that end in plain crossings are solved in one compiled call (`_loop`), at
# most this many events a call (a few tenths of a second: progress and checkpoints go on);
# False: every piece returns to the host (the former loop, kept as the reference of the tests).
_COMPILED_LOOP = True
_LOOP_EVENTS = 64
# The host decides the first events of a solve: a problem with fewer never traces the compiled
# loop (seconds of tracing per process, which the persistent compilation cache does not save,
# more than a few events of a small problem cost on the host).
_LOOP_AFTER = 64


def _loop_now(pieces) -> bool:
    """Whether the next pieces go to the compiled loop (`_COMPILED_LOOP`, `_LOOP_AFTER`)."""
    return _COMPILED_LOOP and pieces.counts.events >= _LOOP_AFTER


def _initial_step(field, y, mode, t1):
    f = np.asarray(rhs(field, y, mode))
    scale = max(float(np.sqrt(np.mean(np.asarray(y) ** 2))), 1e-5)
    return min(t1, 0.01 * scale / max(float(np.sqrt(np.mean(f**2))), 1e-12))


def filippov_flow(
    model,
    data,
    t1: float,
    *,
    loss=_SQUARED,
    alpha: float = 1.0,
    settings: SolveSettings | None = None,
    ts=None,
    observables: dict | None = None,
    save_params: bool = True,
    progress: bool = False,
    checkpoint: str | None = None,
    **overrides,
) -> Trajectory:
    """The Filippov solution of the gradient flow of R(α·f(w))/α² for a two-layer network
    with a piecewise-linear activation φ(s) = a·s + b·|s| (ReLU, leaky ReLU, abs).

    Off the kink surfaces z_ij = b_j·x̃_i = 0 (x̃_i = (x_i, 1) with hidden biases) the flow is
    smooth and is integrated by an explicit Runge–Kutta method (Tsit5 by default) with
    diffrax's PID controller. Each solve ends at the first **event**, located on the
    solver's dense output by secant steps from beyond the root (bracket < 1e-15·(1 + t)):
    - **crossing**: a pre-activation reaches its kink. If both one-sided fields push into the
      surface (ż_ij < 0 with slope σ'₊, ż_ij > 0 with σ'₋) it starts **sliding**; otherwise it
      crosses to the side its field points to.
    - **exit**: a sliding slope reaches an end of [σ'₋, σ'₊]; the entry leaves to that side.
    The next solve starts on the new piece with the step size the controller last proposed.

    **Sliding** (Filippov 1988): on the surfaces, σ'(z_ij) = θ_ij ∈ [σ'₋, σ'₊] is chosen so that
    ż_ij = 0. Given the residual r, neurons decouple, and for neuron j the θ's solve one linear
    system on the Gram matrix of its sliding inputs (unique when they are linearly independent).
    Where they are dependent, the slopes are not unique but the field is: it is the unique, so
    minimum-norm, element of the Filippov set tangent to all the surfaces (Dieci & Lopez 2009);
    the minimum-norm slopes are taken. Where adding a surface pushes another slope of the same
    neuron past its interval, that one exits (an active-set rule, not a proof of uniqueness).
    Each piece's field conserves ‖b_j‖² − a_j² (+ bias², with hidden biases) exactly
    (a_j ȧ_j = b_j·ḃ_j with the same slopes), so the invariants drift only by the solver error.

    **Arguments:**
    - `model`: a `models.TwoLayerNet`, a `models.MLP` with `depth=1` (with or without biases),
      or `models.symmetrize(...)` ("doubled" or "centred") of one of them, with activation
      `models.abs_family(a, b)` ("relu", "abs", "leaky_relu" by name).
    - `data`: `(X, Y)` with X of shape (n, d) and Y of shape (n,), float64.
    - `t1`: final flow time, > 0.
    - `loss`: R(predictions (n,), targets (n,)) → scalar, differentiable (default
      `SquaredLoss()`, R = ½‖f − Y‖²).
    - `alpha`: output scale α > 0 of the lazy-training objective R(α f)/α² (1: plain loss).
    - `ts`: save times, shape (T,), increasing in [0, t1]. Default `log_times(t1, 100)`.
    - `settings`: a `SolveSettings`, default `SolveSettings()`; keyword overrides such as
      `rtol=1e-8` apply to it, as in `gradient_flow`. Used: `solver` ("auto" means "tsit5";
      "tsit5", "dopri5" or "dopri8": each piece is solved by that explicit Runge–Kutta
      method), `rtol`, `atol` (of the PID step-size controller) and `max_steps`, here the
      budget of solver steps *plus events* for the whole solve (checked after each piece, so
      one piece may overshoot it). `chunks` and the stiffness settings do not apply.
    - `observables`: `{name: fn(model) -> array}` evaluated at the save times.
    - `save_params`: keep the parameters at every save time.
    - `progress`: a tqdm bar over flow time.
    - `checkpoint`: path of an `.npz` written atomically at most every 10 s of wall time; if it
      exists when the call starts, the solve resumes from it, but only if it was written for
      this problem (the start state, every setting but `max_steps`, the save times, the
      model's structure, the data and the loss at the start), else `ValueError` naming the
      file and what differs. A str or `os.PathLike`; a missing folder is created (with its
      parents); `TypeError` naming `checkpoint` for a value that is not a path.

    **Returns:** a `Trajectory` (as `gradient_flow`). `stats` has `num_steps`,
    `num_accepted_steps`, `num_rejected_steps`, `events`, `crossings`, `sliding_entries`,
    `sliding_exits`, `pieces` (diffrax solves), `pieces_solved_again` (solves repeated to
    save at more times than the next 8, or past 64 steps, not counted in the steps), `grad_evals`
    (vector-field evaluations of the steps, 6 per Tsit5 step + 1 per piece; event location
    and decisions not counted),
    `sliding_at_ts` (list, number of sliding pre-activations at each save time), `wall_s`.

    **Raises:**
    - `ValueError` naming the argument: bad `t1`, `ts`, `alpha`, tolerances, data shapes,
      non-finite parameters, parameters that are not float64 (float32 is refused, not cast,
      as by `gradient_flow`); an unsupported architecture or a smooth activation (pointing
      to `flows.gradient_flow`); `model` when a pre-activation starts on its kink (within
      1e-10) with both one-sided fields pushing away from it, where the flow is not unique.
      A start on a kink is otherwise settled at t = 0 as an event is: it crosses to the side
      both fields point to, or slides (snapped onto the surface) where both push into it.
    - `MaxStepsReached` with the time reached (also as `.t`) and the surfaces z_ij = 0 of the
      latest events, when the budget is exhausted or when events accumulate in time (chatter
      that the sliding rule cannot resolve).

    **Reference:** Filippov 1988, "Differential Equations with Discontinuous Righthand Sides",
    §2.4 (sliding, the convex set); Dieci & Lopez 2009 (codimension 2, minimum-norm choice);
    Du, Hu & Lee 2018, Thm 2.1 (the invariants).
    """
    t1, ts, settings = resolve_flow_inputs(t1, ts, settings, overrides)
    alpha = check_positive("alpha", alpha)
    progress = check_flag("progress", progress)
    save_params = check_flag("save_params", save_params)
    name = "tsit5" if settings.name == "auto" else settings.name
    if name not in EXPLICIT:
        raise ValueError(
            f"solver: filippov_flow solves each piece with an explicit Runge–Kutta method "
            f"{EXPLICIT} (the pieces are smooth and not stiff at kinks), got {settings.name!r}"
        )
    rtol, atol, max_steps = settings.rtol, settings.atol, settings.max_steps
    solver = make_solver(name, rtol, atol)
    loss = get_loss(loss)
    form = two_layer_form(model)
    check_float64("model", eqx.filter(model, eqx.is_inexact_array))  # refused, as gradient_flow
    X, Y = _check_data(data, form.in_size)
    a0, B0, c0 = form.pack(model)
    check_finite("model", (a0, B0, c0))
    check_observables(observables, model)  # now, not after the solve
    Xt = form.inputs(X)
    with np.errstate(over="ignore", invalid="ignore"):  # the overflow is reported below
        gram = Xt @ Xt.T
    if not np.all(np.isfinite(gram)):  # X·1e200: "the solver failed at t=0"
        raise ValueError(
            "data: X is too large for float64: its inner products x̃_i·x̃_j overflow (rescale X)"
        )
    n, m = Xt.shape[0], a0.shape[0]
    field = PieceField(
        jnp.asarray(Xt),
        jnp.asarray(gram),
        jnp.asarray(np.linalg.norm(Xt, axis=1)),
        jnp.asarray(form.coef),
        jnp.asarray(form.bias_coef),
        jnp.asarray(form.offset(model, X)),
        jnp.asarray(Y),
        jnp.asarray(alpha),
        jnp.asarray(form.slopes[0]),
        jnp.asarray(form.slopes[1]),
        loss,
        m,
    )
    if np.any(np.linalg.norm(Xt, axis=1) == 0):
        raise ValueError("data: an input x̃_i is zero; its pre-activations never leave the kink")
    y = jnp.asarray(np.concatenate([a0, B0.ravel(), c0]))
    pieces = Pieces(field, n, m, form.slopes)
    pieces.sign = np.where(np.asarray(Xt @ B0.T) > 0, 1.0, -1.0)
    saved, saved_ts, sliding_at, t, done = [], [], [], 0.0, 0
    dt0 = None
    if checkpoint is not None:
        checkpoint = check_path(checkpoint)
    stamp = None if checkpoint is None else _fingerprint(model, field, y, ts, settings)
    if checkpoint is not None and os.path.exists(checkpoint):
        t, y, dt0, done = _resume(checkpoint, stamp, pieces, saved, saved_ts, sliding_at)
    else:
        y = pieces.settle(y, start=True)
    if dt0 is None:
        dt0 = _initial_step(field, y, pieces.mode(), t1)
    start, last_write = time.perf_counter(), time.perf_counter()
    dtmin = jnp.asarray(1e-14 * max(1.0, t1))
    short, again = False, 0  # the last piece took few steps; pieces solved again
    bar = progress_bar(total=t1, initial=t, desc="filippov flow", disable=not progress, leave=False)
    ts_pad = jnp.asarray(np.concatenate([ts, np.full(_LOOP_WINDOW, t1)]))
    solve_here = not _loop_now(pieces)  # the next piece is solved by the host loop

    def after_piece(at_event, t, y, dt0, done, last_write):
        """After a piece (either loop's) ending at t: an event counted and settled, the
        budget checked, a checkpoint written if the last is 10 s old. (y, last_write)."""
        if at_event:
            pieces.counts.events += 1
            pieces.event_times.append(t)
            y = pieces.settle(y)
            check_chatter(pieces, t, max_steps)
        _check_budget(pieces.counts, max_steps, t, t1, pieces)
        if checkpoint is not None and time.perf_counter() - last_write >= _CHECKPOINT_EVERY_S:
            _write(checkpoint, stamp, ts, t, y, dt0, done, pieces, saved, saved_ts, sliding_at)
            last_write = time.perf_counter()
        return y, last_write

    try:
        while done < len(ts):
            if not solve_here:  # a run of pieces ending in crossings, in one compiled call
                c = pieces.counts
                with errors_as_nan(), one_step_clip_floor():
                    run = crossing_run(
                        field, solver, dfx.Event(field.event, root_finder=_ROOT, direction=False),
                        y, jnp.asarray(t), jnp.asarray(t1), jnp.asarray(dt0),
                        pieces.mode(slack=pieces.slack), ts_pad, jnp.asarray(done, jnp.int32),
                        jnp.asarray(rtol), jnp.asarray(atol), dtmin,
                        jnp.asarray(min(_WINDOW_STEPS, int(max_steps)), jnp.int32),
                        jnp.asarray(min(int(max_steps) - c.num_steps - c.events, 2**31 - 1),
                                    jnp.int32),
                        _LOOP_EVENTS,
                    )  # fmt: skip
                take(run, pieces, max_steps)
                n_new = int(run.n_saved)
                if n_new:
                    done = _keep(np.asarray(run.saved)[:n_new], ts, done, saved, saved_ts,
                                 sliding_at, pieces, t1)  # fmt: skip
                t_end = float(run.t)
                bar.update(max(0.0, t_end - t))
                t, y, dt0, why = t_end, run.y, float(run.dt0), int(run.why)
                if why == ABORTED:  # the host solves the next piece, saving at all ts
                    solve_here, short, again = True, False, again + 1
                y, last_write = after_piece(why == SETTLE, t, y, dt0, done, last_write)
                continue
            solve_here = not _loop_now(pieces)
            pending = ts[done:]
            mode = pieces.mode(slack=pieces.slack)
            common = (field, save_state, y, jnp.asarray(t), jnp.asarray(t1))
            event = dfx.Event(field.event, root_finder=_ROOT, direction=False)

            def piece(chunk, steps, common=common, dt0=dt0, mode=mode, event=event):
                return solve_span(
                    *common, jnp.asarray(chunk), None, solver, jnp.asarray(rtol),
                    jnp.asarray(atol), dtmin, steps, dt0=jnp.asarray(dt0), args=mode, event=event,
                )  # fmt: skip

            span = None
            if _SAVE_WINDOW is not None and short:
                w = _SAVE_WINDOW
                span = piece(_padded(pending[:w], w, t1), min(_WINDOW_STEPS, int(max_steps)))
                beyond = len(pending) > w and (
                    not bool(span.event) or float(span.t_end[0]) >= pending[w]
                )
                if bool(span.max_steps_hit) or beyond:  # the same solve, saving at all ts
                    span, again = None, again + 1
            if span is None:
                span = piece(_padded(pending, len(ts), t1), int(max_steps))
            t_end, y_end, st = span.t_end[0], span.y_end[0], span.stats
            c = pieces.counts
            c.pieces += 1
            c.num_steps += int(st["num_steps"])
            short = int(st["num_steps"]) <= _WINDOW_STEPS
            c.num_accepted_steps += int(st["num_accepted_steps"])
            c.num_rejected_steps += int(st["num_rejected_steps"])
            n_new = min(int(np.sum(np.isfinite(np.asarray(span.save_ts)))), len(pending))
            if n_new:
                block = np.asarray(span.saved)[:n_new]
                done = _keep(block, ts, done, saved, saved_ts, sliding_at, pieces, t1)
            t_end = float(t_end)
            bar.update(max(0.0, t_end - t))
            t, y = t_end, y_end
            # The next piece starts with the step the controller last proposed.
            dt0 = max(float(span.state[1][1]), 1e-14 * max(1.0, t))
            if not bool(span.ok):
                if bool(span.max_steps_hit):
                    raise MaxStepsReached(
                        f"max_steps={max_steps} reached at t={t:.6g} within one piece "
                        f"(no event); {pieces.surfaces()}",
                        t,
                    )
                raise RuntimeError(
                    f"the solver failed at t={t:.6g} (step size collapsed or non-finite "
                    f"state); {pieces.surfaces()}"
                )
            y, last_write = after_piece(bool(span.event), t, y, dt0, done, last_write)
    finally:
        bar.close()
    wall = time.perf_counter() - start
    traj = _trajectory(
        model, form, field, ts, saved, sliding_at, pieces, observables, save_params, wall,
        {**settings.to_dict(), "solver": name, "t1": t1, "alpha": alpha, "method": "Filippov",
         "event_location": "secant steps from beyond the root on the dense output, bracket < "
         "1e-15·(1 + t)"},
    )  # fmt: skip
    traj.stats["pieces_solved_again"] = again
    return traj


def _keep(block, ts, done, saved, saved_ts, sliding_at, pieces, t1):
    """Keep the saves `block` at the next save times; returns the save times done."""
    if not np.all(np.isfinite(block)):
        raise FloatingPointError(f"the trajectory became non-finite before t={t1}")
    n_new = len(block)
    saved.append(block)
    saved_ts.append(ts[done : done + n_new])
    sliding_at += [len(pieces.slots)] * n_new
    return done + n_new


def _check_budget(c, max_steps, t, t1, pieces):
    if c.num_steps + c.events > max_steps:
        raise MaxStepsReached(
            f"max_steps={max_steps} (solver steps + events) used up at t={t:.6g} before "
            f"t1={t1:.6g} ({c.num_steps} steps, {c.events} events); "
            f"{pieces.surfaces()}; increase `max_steps` or loosen `rtol`/`atol`",
            t,
        )


def _padded(times, length, t1):
    """`times` padded with `t1` to `length`: one compilation per length."""
    return np.concatenate([times, np.full(length - len(times), t1)])


def _check_data(data, d):
    try:
        X, Y = data
    except (TypeError, ValueError):
        raise ValueError("data must be a pair (X, Y)") from None
    X, Y = np.asarray(X, np.float64), np.asarray(Y, np.float64)
    if X.ndim != 2 or X.shape[1] != d or X.shape[0] < 1:
        raise ValueError(f"data: X must have shape (n, {d}) with n >= 1, got {X.shape}")
    if Y.shape != (X.shape[0],):
        raise ValueError(f"data: Y must have shape ({X.shape[0]},), got {Y.shape}")
    check_finite("data X", X)
    check_finite("data Y", Y)
    return X, Y


def _fingerprint(model, field, y0, ts, settings) -> Fingerprint:
    """What a checkpoint is written for: the start state, the settings (but the budget
    `max_steps`), the save times, the model's structure and the data (inputs, targets, α,
    slopes) exactly; the loss at the start to 1e-9 (`flows._checkpoint.Fingerprint`)."""
    return Fingerprint(
        digests={
            "the start state": digest(np.asarray(y0)),
            "the settings": digest(settings_text(settings)),
            "the save times": digest(np.asarray(ts, np.float64)),
            "the structure": digest(repr(leaf_paths(model))),
            "the data": digest(jax.tree.leaves(eqx.filter(field, eqx.is_array))),
        },
        values={"the loss at the start": summary(field.loss_value(jnp.asarray(y0)))},
    )


def _write(path, stamp, ts, t, y, dt0, done, pieces, saved, saved_ts, sliding_at):
    c = pieces.counts
    atomic_savez(
        path,
        **stamp.arrays(),
        ts=ts,
        t=t,
        y=np.asarray(y),
        dt0=dt0,
        done=done,
        sign=pieces.sign,
        sliding=pieces.sliding,
        slack=pieces.slack,
        slots=np.asarray(pieces.slots, np.int64).reshape(-1, 2),
        saved=np.concatenate(saved) if saved else np.zeros((0, np.asarray(y).size)),
        sliding_at=np.asarray(sliding_at, np.int64),
        counts=np.asarray(dataclasses.astuple(c), np.int64),
    )


def _resume(path, stamp, pieces, saved, saved_ts, sliding_at):
    with load(path) as ck:
        stamp.check(path, ck)
        ts = ck["ts"]
        done = int(ck["done"])
        pieces.sign, pieces.sliding = ck["sign"], ck["sliding"]
        pieces.slack = ck["slack"]
        pieces.slots = [tuple(int(v) for v in row) for row in ck["slots"]]
        pieces.counts = Counts(*(int(v) for v in ck["counts"]))
        if done:
            saved.append(ck["saved"])
            saved_ts.append(ts[:done])
        sliding_at += [int(v) for v in ck["sliding_at"]]
        return float(ck["t"]), jnp.asarray(ck["y"]), float(ck["dt0"]), done


def _trajectory(model, form, field, ts, saved, sliding_at, pieces, observables, save_params,
                wall, config):  # fmt: skip
    ys = jnp.asarray(np.concatenate(saved))
    m, dt = field.m, field.Xt.shape[1]
    A, B, C = ys[:, :m], ys[:, m : m + m * dt].reshape(-1, m, dt), ys[:, m + m * dt :]
    loss = np.asarray(jax.jit(jax.vmap(field.loss_value))(ys))
    obs = {}
    for name, fn in check_observables(observables):
        at = lambda a, b, c, fn=fn: fn(form.unpack(model, a, b, c))  # noqa: E731
        obs[name] = np.asarray(jax.vmap(at)(A, B, C))
    params = None
    if save_params:
        params = form.unpack(model, np.asarray(A), np.asarray(B), np.asarray(C))
    stats = {
        **dataclasses.asdict(pieces.counts),
        # New stages per step, plus the first stage of each piece (no FSAL carry).
        "grad_evals": EVALS_PER_STEP[config["solver"]] * pieces.counts.num_steps
        + pieces.counts.pieces,
        "sliding_at_ts": [int(v) for v in sliding_at],
        "solvers": [config["solver"]],
        "result": "successful",
        "wall_s": wall,
    }
    return Trajectory(ts, params, loss, obs, stats, config)
