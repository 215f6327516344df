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


def test_gd_warnings_name_the_callers_file_and_optimize_gives_no_edge_warning():
    """η = 0.7 on S = 3: w₁ grows 1.1× per step, the loss passes 1e3·L(0) near step 39 and
    stays: gradient_descent warns EdgeOfStabilityWarning and DivergenceWarning, both at the
    caller's line (one loop serves gradient_descent, optimize and the game maps: before the
    merge's fix the edge warning named flows/_optimize.py); optimize through the same loop
    gives only the DivergenceWarning, naming the optimizer."""
    import optax

    def caught(run):
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            run()
        return {w.category.__name__: (w.filename, str(w.message)) for w in ws}

    gd = caught(lambda: flows.gradient_descent(_loss, W0, 250 * 0.7, eta=0.7))
    assert {name: where for name, (where, _) in gd.items()} == {
        "EdgeOfStabilityWarning": __file__,
        "DivergenceWarning": __file__,
    }
    assert gd["DivergenceWarning"][1].startswith("gradient descent diverges")
    opt = caught(lambda: flows.large_steps.optimize(
        _loss, W0, 250 * 0.7, optimizer=optax.sgd(0.7), eta=0.7))  # fmt: skip
    assert list(opt) == ["DivergenceWarning"] and opt["DivergenceWarning"][0] == __file__
    assert opt["DivergenceWarning"][1].startswith("the optimizer diverges")
    assert "is above the optimizer's limit" in opt["DivergenceWarning"][1]
