"""Each bad input raises an error that names the argument or the time reached."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models


def loss(p):
    return 0.5 * jnp.sum(p**2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(t1=0.0), "t1"),
        (dict(t1=-1.0), "t1"),
        (dict(t1=float("nan")), "t1"),
        (dict(t1=1.0, ts=[0.0, 0.5, 0.2]), "ts"),
        (dict(t1=1.0, ts=[0.0, 2.0]), "ts"),
        (dict(t1=1.0, ts=[-1.0, 0.5]), "ts"),
        (dict(t1=1.0, ts=[0.0, float("nan")]), r"^ts: non-finite values \(NaN or inf\)$"),
        (dict(t1=1.0, solver="euler"), "solver"),
        (dict(t1=1.0, max_steps=0), "max_steps"),
        (dict(t1=1.0, rtol=float("nan")), "rtol"),
        (dict(t1=1.0, rtol=0.0), "rtol"),
        (dict(t1=1.0, rtol=1e-30), "rtol"),
        (dict(t1=1.0, atol=-1.0), "atol"),
        (dict(t1=1.0, chunks=0), "chunks"),
    ],
)
def test_gradient_flow_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        flows.gradient_flow(loss, jnp.ones(2), **kwargs)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        # each used to fail inside the solve, without the argument's name
        ({"observables": [jnp.sum]}, TypeError,
         "observables must be a dict {name: fn(params) -> array}, got list"),
        ({"observables": {"x": "norm"}}, TypeError,
         "observables['x'] must be a function of the parameters, got str"),
        ({"ts": ["a", "b"]}, ValueError, "ts must be an array of flow times, got ['a', 'b']"),
        # an observable of another model (3 weights, not 2): traced on params0 before the solve
        ({"observables": {"proj": lambda w: w @ jnp.ones(3)}}, ValueError,
         "observables['proj'] fails on the parameters of this flow (TypeError: dot_general "
         "requires contracting dimensions to have the same shape, got (2,) and (3,).); is it "
         "written for another model?"),
        ({"observables": {"s": lambda w: "norm"}}, TypeError,
         "observables['s'] must return numbers (an array or a pytree of arrays), got str 'norm'"),
        ({"observables": {"n": lambda w: None}}, TypeError,
         "observables['n'] must return numbers, got None"),
        # "no" was taken as True
        ({"progress": "no"}, TypeError, "progress must be True or False, got str 'no'"),
        ({"save_params": 1}, TypeError, "save_params must be True or False, got int 1"),
    ],
)  # fmt: skip
def test_gradient_flow_and_descent_name_bad_observables_and_ts(kwargs, error, message):
    with pytest.raises(error) as flow:
        flows.gradient_flow(loss, jnp.ones(2), 1.0, **kwargs)
    with pytest.raises(error) as descent:
        flows.gradient_descent(loss, jnp.ones(2), 1.0, eta=0.1, **kwargs)
    assert str(flow.value).startswith(message) and str(descent.value).startswith(message)


@pytest.mark.parametrize("content", [b"not an archive", b"PK\x03\x04 truncated"])
def test_a_damaged_checkpoint_is_named_not_advised_allow_pickle(content, tmp_path):
    path = tmp_path / "ck.npz"
    path.write_bytes(content)
    with pytest.raises(ValueError) as e:
        flows.gradient_flow(loss, jnp.ones(2), 1.0, checkpoint=str(path))
    assert str(e.value).startswith(f"checkpoint {str(path)!r} is not a readable checkpoint (")
    assert "allow_pickle" not in str(e.value) and "delete it to start afresh" in str(e.value)


def test_a_checkpoint_that_cannot_be_written_is_refused_before_the_solve(tmp_path):
    # was a FileNotFoundError from the first write, after the first chunk's work
    (tmp_path / "file").write_text("")
    path = str(tmp_path / "file" / "ck.npz")  # a folder inside a regular file
    with pytest.raises(ValueError, match=rf"^checkpoint {path!r}: cannot write in "):
        flows.gradient_flow(loss, jnp.ones(2), 1.0, checkpoint=path)


def test_gradient_descent_over_its_budget_by_301_digits_says_so_in_floats():
    # t1/eta = 5e300 steps: was "OverflowError: Python int too large to convert to C long"
    with pytest.raises(flows.MaxStepsReached) as e:
        flows.gradient_descent(loss, jnp.ones(2), 1e300, eta=0.2)
    assert str(e.value) == (
        "gradient descent to t=1e+300 with eta=0.2 takes 5e+300 steps, over "
        "max_steps=200000; raise max_steps"
    )


def test_gradient_flow_rejects_non_finite_params():
    with pytest.raises(ValueError, match="params0"):
        flows.gradient_flow(loss, jnp.array([1.0, jnp.nan]), 1.0)


def test_blow_up_reports_the_time_reached():
    # x' = exp(x) from x0 = 0 blows up at t = 1.
    with pytest.raises(FloatingPointError, match=r"blowing up|non-finite near t=(0\.9|1\b)"):
        flows.gradient_flow(lambda x: -jnp.sum(jnp.exp(x)), jnp.zeros(1), 2.0, solver="tsit5")


def test_max_steps_names_the_setting_and_time():
    with pytest.raises(flows.MaxStepsReached, match=r"max_steps=5 reached at t="):
        flows.gradient_flow(loss, jnp.ones(2), 100.0, solver="tsit5", max_steps=5, chunks=1)


def _lazy_setup():
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    net = models.TwoLayerNet(3, 4, activation="tanh", key=k[0])
    return net, jax.random.normal(k[1], (5, 3)), jax.random.normal(k[2], (5,))


@pytest.mark.parametrize("alpha", [0.0, -1.0, float("inf"), float("nan")])
def test_lazy_comparison_rejects_bad_alpha(alpha):
    net, X, Y = _lazy_setup()
    with pytest.raises(ValueError, match="alpha"):
        flows.lazy.lazy_comparison(net, (X, Y), alpha, 1.0)


def test_lazy_comparison_refuses_01_labels_for_a_margin_loss_and_a_bad_nodes():
    # The solve traces Y, where the losses cannot check it: 0/1 targets with loss="logistic"
    # ran to a wrong loss silently; nodes='4' and 2.5 were taken as 4 and 2.
    net, X, Y = _lazy_setup()
    labels = (Y > 0).astype(jnp.float64)
    for loss in ("logistic", "exponential", flows.LogisticLoss()):
        with pytest.raises(ValueError, match=r"^targets of the logistic and exponential losses"):
            flows.lazy.lazy_comparison(net, (X, labels), 1.0, 1.0, loss=loss)
    for nodes, message in (("4", "nodes must be a number"), (2.5, "nodes must be an integer")):
        with pytest.raises(ValueError, match=f"^{message}, got"):
            flows.lazy.lazy_comparison(net, (X, Y), 1.0, 1.0, nodes=nodes)


def test_lazy_comparison_rejects_bad_data():
    net, X, Y = _lazy_setup()
    with pytest.raises(ValueError, match="data inputs"):
        flows.lazy.lazy_comparison(net, (X.at[0, 0].set(jnp.nan), Y), 1.0, 1.0)
    with pytest.raises(ValueError, match="data targets"):
        flows.lazy.lazy_comparison(net, (X, Y[:3]), 1.0, 1.0)
    # each was "TypeError: _check_data() takes from 2 to 3 positional arguments but 6 were
    # given" (an array of 5 rows unpacked) or "... but 4 were given"
    pair = r"^data must be a pair \(X \(n, d\), Y \(n,\) or \(n, k\)\), got "
    with pytest.raises(ValueError, match=pair):
        flows.lazy.lazy_comparison(net, X, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"^data must be a pair .*, got a tuple of 3$"):
        flows.lazy.lazy_comparison(net, (X, Y, Y), 1.0, 1.0)
    with pytest.raises(ValueError, match="do not fit the model"):
        flows.lazy.lazy_comparison(net, (X[:, :2], Y), 1.0, 1.0)
    with pytest.raises(ValueError, match="heldout"):
        flows.lazy.lazy_comparison(net, (X, Y), 1.0, 1.0, heldout=np.ones((2, 4)))
    with pytest.raises(ValueError, match="model parameters"):
        bad = models.TwoLayerNet(3, 4, activation="tanh", key=jax.random.PRNGKey(1))
        bad = jax.tree.map(lambda a: a * jnp.nan if isinstance(a, jax.Array) else a, bad)
        flows.lazy.lazy_comparison(bad, (X, Y), 1.0, 1.0)


@pytest.mark.parametrize(
    "loss_fn, params0, error, message",
    [
        # complex parameters used to flow with the imaginary part ascending (jax.grad gives
        # the conjugate direction): loss 2.0 -> 54.6 at t = 1
        (lambda p: jnp.sum(jnp.abs(p) ** 2), jnp.array([1.0 + 1.0j]), ValueError, "params0"),
        # a float32 loss used to be accepted, the saved losses float32
        (lambda p: loss(p).astype(jnp.float32), jnp.ones(2), TypeError, "loss must return"),
        # empty arrays used to fail as numpy's "index is out of bounds for axis 1 with size 0"
        (loss, jnp.zeros((0,)), ValueError, "params0 must hold at least one"),
    ],
)
def test_complex_float32_loss_and_empty_params_are_named(loss_fn, params0, error, message):
    for call in (flows.gradient_flow, flows.gradient_descent):
        kwargs = {"eta": 0.1} if call is flows.gradient_descent else {}
        with pytest.raises(error, match=message):
            call(loss_fn, params0, 1.0, **kwargs)


def test_an_observable_may_return_a_python_number_and_at_names_a_bad_index():
    # A Python float used to fail as "'float' object has no attribute 'shape'".
    traj = flows.gradient_flow(
        loss, jnp.ones(2), 1.0, ts=[0.0, 1.0], observables={"c": lambda m: 0.5}
    )
    np.testing.assert_array_equal(traj.observables["c"], [0.5, 0.5])
    np.testing.assert_allclose(traj.at(-1), np.exp(-1.0) * np.ones(2), rtol=1e-8)
    with pytest.raises(TypeError, match="integer save index"):
        traj.at(0.5)  # used to be numpy's raw IndexError
    with pytest.raises(IndexError, match="i=2 is out of range for 2 save times"):
        traj.at(2)
    # a 0-d integer array is an index (jnp.argmin(traj.loss) was refused as not an integer);
    # a 0-d float or bool array is not
    np.testing.assert_array_equal(traj.at(jnp.argmin(traj.loss)), traj.at(1))
    np.testing.assert_array_equal(traj.at(np.array(0)), jnp.ones(2))
    for bad in (jnp.array(1.0), jnp.array(True), jnp.array([1])):
        with pytest.raises(TypeError, match="integer save index"):
            traj.at(bad)


@pytest.mark.parametrize(
    "args, message",
    [
        ((1.0, "10"), "n must be a number, got '10'"),  # was accepted as int("10")
        ((1.0, 2.5), "n must be an integer, got 2.5"),  # was truncated to 2
        (("1", 10), "t1 must be a number, got '1'"),
        ((1.0, 1), "n must be >= 2, got 1"),
    ],
)
def test_log_times_names_a_bad_argument(args, message):
    with pytest.raises(ValueError) as info:
        flows.log_times(*args)
    assert str(info.value) == message


def test_integer_parameters_are_named_as_what_does_not_move():
    with pytest.raises(ValueError) as info:
        flows.gradient_flow(loss, jnp.array([1, 2]), 1.0)
    assert str(info.value) == (
        "params0 must be a pytree holding trainable float64 arrays; got ArrayImpl, which has "
        "none (it holds int64: integer and Python numbers do not move)"
    )
