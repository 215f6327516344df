"""gradient_descent with S(0) > 2/η and modified_flow with ηλ_max > 1 warn once, naming the
quantities; below those bounds they are silent. On L = ½Σ d_i w_i², d = (3, 1, ½): S = 3."""

import warnings

import jax.numpy as jnp
import pytest

import flows
from flows.large_steps import EdgeOfStabilityWarning

D = jnp.asarray([3.0, 1.0, 0.5])
W0 = jnp.ones(3)


def _loss(w):
    return 0.5 * jnp.sum(D * w**2)


def _caught(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught if issubclass(w.category, EdgeOfStabilityWarning)]


def test_gradient_descent_above_two_over_eta_warns_once_naming_s0_and_two_over_eta():
    # before: silent (GD at η = 0.7 grows along w₀ by |1 − 0.7·3| = 1.1 per step)
    said = _caught(lambda: flows.gradient_descent(_loss, W0, 7.0, eta=0.7))
    assert len(said) == 1
    assert said[0].startswith("gradient_descent: S(0) = 3 > 2/eta = 2.85714 (eta·S(0) = 2.1")
    assert _caught(lambda: flows.gradient_descent(_loss, W0, 6.0, eta=0.6)) == []  # 1.8 < 2


@pytest.mark.parametrize("order", [1, 2])
def test_modified_flow_past_eta_lambda_one_warns_once_naming_the_product(order):
    said = _caught(lambda: flows.modified_flow(_loss, W0, 1.0, eta=0.34, order=order))
    assert len(said) == 1
    assert said[0].startswith("modified_flow: λ_max(0) = 3 > 1/eta = 2.94118 (eta·λ_max(0) = 1.02")
    assert _caught(lambda: flows.modified_flow(_loss, W0, 1.0, eta=0.32, order=order)) == []


def test_the_gradient_flow_as_order_zero_does_not_warn():
    assert _caught(lambda: flows.modified_flow(_loss, W0, 1.0, eta=0.5, order=0)) == []
