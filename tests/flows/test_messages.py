"""Messages a new user meets say what happened, once, naming the argument (issue #24, part 3)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models
from flows._failures import FEW_STEPS, collapse_message, max_steps_advice

X = jnp.array([[1.0, 0.2, -0.4], [-0.3, 0.8, 0.1], [0.5, -1.0, 0.9], [0.2, 0.3, -0.7]])
Y = jnp.sin(X[:, 0])
NET = models.MLP(3, 8, 2, activation="tanh", key=jax.random.PRNGKey(0))


def squared(m):
    return 0.5 * jnp.sum((jax.vmap(m)(X) - Y) ** 2)


def test_lazy_comparison_of_a_function_names_model_and_what_it_must_be():
    # Was numpy's "need at least one array to concatenate".
    match = r"^model must be an equinox Module called on one input x of shape \(d,\) holding "
    with pytest.raises(ValueError, match=match + r"trainable float64 arrays; got function"):
        flows.lazy.lazy_comparison(lambda x: x.sum(), (np.asarray(X), np.asarray(Y)), 10.0, 1.0)


def test_a_one_step_budget_on_a_smooth_net_only_says_raise_max_steps():
    # Was "100% of the steps were rejected, which points to a non-smooth objective (kinks such
    # as ReLU's)" and the kink advice again, ~600 characters; measured now: 150 characters.
    with pytest.raises(flows.MaxStepsReached) as info:
        flows.gradient_flow(squared, NET, 10.0, solver="tsit5", max_steps=1)
    message = str(info.value)
    assert "raise max_steps" in message and "so few steps say nothing yet" in message
    assert "rejected" not in message and "ReLU" not in message and len(message) < 200


@pytest.mark.parametrize("steps, rejected", [(300, 10), (300, 240), (19, 19)])
def test_the_budget_advice_names_a_kink_at_most_once_and_rates_only_enough_steps(steps, rejected):
    stats = flows.SolveStats(num_steps=steps, num_rejected_steps=rejected)
    advice = max_steps_advice("tsit5", flows.SolveSettings(), stats)
    assert advice.count("kink") == 1 and advice.count("ReLU") <= 1, advice
    assert ("80% of the 300 steps were rejected" in advice) == (rejected == 240), advice
    assert ("so few steps say nothing yet" in advice) == (steps < FEW_STEPS), advice


def test_a_loss_with_zero_gradient_warns_that_the_flow_stays_put():
    with pytest.warns(flows.ZeroGradientWarning, match="the gradient is exactly zero at the start"):
        traj = flows.gradient_flow(
            lambda m: jnp.round(squared(m)), NET, 10.0, solver="tsit5", save_params=False
        )
    assert np.all(traj.loss == traj.loss[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", flows.ZeroGradientWarning)  # a moving flow: no warning
        flows.gradient_flow(squared, NET, 1.0, solver="tsit5", save_params=False)


@pytest.mark.parametrize("t1", ["10", True, "nan"])
def test_t1_must_be_a_real_number(t1):
    with pytest.raises(ValueError, match=r"^t1 must be a number, got "):
        flows.gradient_flow(squared, NET, t1)
    with pytest.raises(ValueError, match=r"^t1 must be a number, got "):
        flows.gradient_descent(squared, NET, t1, eta=0.1)


@pytest.mark.parametrize(
    "loss, message",
    [
        (lambda m: jax.vmap(m)(X) - Y, r"^loss must return one float scalar \(shape \(\)\), got "
         r"float64 of shape \(4,\); reduce per-example losses with a sum or a mean"),
        (lambda m: jnp.sum(jax.vmap(m)(X) > 0), r"^loss must return a float scalar, got an "
         r"integer one \(int64\): an integer loss has no gradient"),
        (lambda m: jnp.all(jax.vmap(m)(X) > 0), r"^loss must return a float scalar, got a "
         r"boolean one \(bool\): a boolean loss has no gradient$"),
        (lambda m: squared(m) + 1j, r"^loss must return a real float scalar, got a complex one "
         r"\(complex128\): a gradient flow descends a real objective \(take e\.g\. the squared "
         r"modulus\)$"),
        (lambda m: (squared(m), squared(m)), r"^loss must return one float scalar"),
    ],
)  # fmt: skip
def test_a_loss_that_is_not_a_float_scalar_is_refused_naming_loss(loss, message):
    with pytest.raises(TypeError, match=message):
        flows.gradient_flow(loss, NET, 1.0)
    with pytest.raises(TypeError, match=message):
        flows.gradient_descent(loss, NET, 1.0, eta=0.1)


@pytest.mark.parametrize("solver", ["exprb32", "exprk4"])
def test_exponential_solvers_get_the_exponential_advice_not_use_a_stiff_solver(solver):
    # exprk4 used to be told "solver='exprk4' is explicit ... use solver='auto', 'exprb32'".
    stats = flows.SolveStats(num_steps=300, num_rejected_steps=10)
    advice = max_steps_advice(solver, flows.SolveSettings(), stats)
    assert f"solver={solver!r} is exponential, so stiffness does not limit its steps" in advice
    assert "is explicit" not in advice and "use solver=" not in advice
    message = collapse_message(solver, flows.SolveSettings(), 5.0, 1e-13, 1.0, 1.2, 0.3)
    assert f"solver={solver!r} follows stiffness exactly" in message
