"""CrossEntropyLoss against its definition; out_size=k on the models."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models


def test_cross_entropy_equals_minus_log_softmax_for_labels_and_one_hot():
    rng = np.random.default_rng(0)
    z = jnp.asarray(rng.standard_normal((7, 4)) * 3)
    labels = jnp.asarray(rng.integers(0, 4, 7))
    direct = -np.log(np.exp(z) / np.exp(z).sum(1, keepdims=True))[np.arange(7), labels]
    ce = flows.get_loss("cross_entropy")
    assert isinstance(ce, flows.CrossEntropyLoss)
    # measured: 0 and 1.8e-15 relative
    np.testing.assert_allclose(ce(z, labels), direct.sum(), rtol=1e-12)
    np.testing.assert_allclose(
        flows.CrossEntropyLoss("mean")(z, jax.nn.one_hot(labels, 4)), direct.mean(), rtol=1e-12
    )


def test_cross_entropy_is_finite_at_logits_that_overflow_exp():
    z = jnp.array([[1000.0, 0.0], [0.0, -1000.0]])
    # logsumexp: exactly 0 and 1000 (a naive softmax gives inf - inf)
    assert float(flows.CrossEntropyLoss()(z, jnp.array([0, 1]))) == 1000.0


def test_cross_entropy_refuses_targets_of_another_shape():
    with pytest.raises(ValueError, match="targets must be labels"):
        flows.CrossEntropyLoss()(jnp.zeros((3, 4)), jnp.zeros((3, 2)))


@pytest.mark.parametrize("make", ["mlp", "two_layer"])
def test_out_size_gives_k_outputs_and_keeps_the_scalar_model(make):
    key, x = jax.random.PRNGKey(0), jnp.arange(3.0)
    build = {
        "mlp": lambda k: models.MLP(3, 5, 2, out_size=k, key=key),
        "two_layer": lambda k: models.TwoLayerNet(3, 5, out_size=k, key=key),
    }[make]
    assert build(1)(x).shape == () and build(4)(x).shape == (4,)
    # the first hidden layer is drawn from the same key whatever k
    hidden = (lambda m: m.weights[0]) if make == "mlp" else (lambda m: m.b)
    np.testing.assert_array_equal(hidden(build(1)), hidden(build(4)))
    with pytest.raises(ValueError, match="out_size"):
        build(0)
