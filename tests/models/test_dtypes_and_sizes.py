"""Models refuse what gradient_flow would refuse later, naming the argument: float32
matrices (integers are converted exactly), and sizes that cannot fit in memory."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import models


def test_deep_linear_net_refuses_float32_and_converts_integers():
    with pytest.raises(ValueError) as info:
        models.DeepLinearNet([np.ones((2, 3)), np.ones((1, 2), np.float32)])
    assert str(info.value).startswith("weights[1] is float32; gradflows computes in float64")
    net = models.DeepLinearNet([[[1, 0], [0, 2]]])
    assert net.weights[0].dtype == jnp.float64
    np.testing.assert_array_equal(net.end_to_end(), [[1.0, 0.0], [0.0, 2.0]])


@pytest.mark.parametrize(
    "build",
    [
        lambda key: models.TwoLayerNet(3, 10**12, key=key),
        lambda key: models.MLP(3, 10**7, 2, key=key),
        lambda key: models.DeepLinearNet.gaussian([3, 10**12, 1], scale=1.0, key=key),
    ],
)
def test_a_model_larger_than_memory_is_refused_before_allocating(build):
    # TwoLayerNet(3, 10**12) has 4e12 parameters (29 TiB): it used to be built lazily and die
    # later. The MLP's 10^14 and the deep linear net's 4e12 likewise.
    with pytest.raises(ValueError, match=r"^(width|dims): the model would have .* GiB in "
                       r"float64, more than this machine's memory"):  # fmt: skip
        build(jax.random.PRNGKey(0))


@pytest.mark.parametrize(
    "weights, message",
    [
        # None said "'NoneType' object is not iterable", a str JAX's "not a valid JAX array type"
        (None, "weights must be a sequence of matrices (W_1, …, W_L), got NoneType"),
        ("abc", "weights must be a sequence of matrices (W_1, …, W_L), got str"),
        ([np.eye(2), "ab"], "weights[1] must be a numeric array, got str"),
    ],
)
def test_deep_linear_net_refuses_what_is_not_a_list_of_matrices(weights, message):
    with pytest.raises(ValueError) as info:
        models.DeepLinearNet(weights)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "build, message",
    [
        # float(True) and float("1") were taken as scale 1 / u0 1
        (
            lambda key: models.DeepLinearNet.gaussian([2, 3], scale=True, key=key),
            "scale must be a finite number > 0, got True",
        ),
        (
            lambda key: models.DeepLinearNet.balanced([2, 3], scale="1", key=key),
            "scale must be a finite number > 0, got '1'",
        ),
        (
            lambda key: models.DeepLinearNet.decoupled(np.eye(2), u0=True, hidden=2, key=key),
            "u0 must be a finite number > 0, got True",
        ),
        # dims=3 said "'int' object is not iterable"
        (
            lambda key: models.DeepLinearNet.gaussian(3, scale=1.0, key=key),
            "dims must be a sequence of integers (d_0, …, d_L), got int",
        ),
        # float32 was computed in float32 then promoted; (0, 0) built (1, 0), (0, 1) layers
        (
            lambda key: models.DeepLinearNet.decoupled(
                np.eye(2, dtype=np.float32), u0=0.1, hidden=2, key=key
            ),
            "sigma31 is float32; gradflows computes in float64: pass float64 arrays "
            "(np.asarray(w, np.float64)), or build them after importing flows or models",
        ),
        (
            lambda key: models.DeepLinearNet.decoupled(np.ones((0, 0)), u0=0.1, hidden=1, key=key),
            "sigma31 must have no zero dimension, got shape (0, 0)",
        ),
        # a (0, 2) layer was accepted, f(x) of shape (0,)
        (
            lambda key: models.DeepLinearNet([np.ones((0, 2))]),
            "weights[0] must have no zero dimension, got shape (0, 2)",
        ),
    ],
)
def test_deep_linear_net_refuses_bools_strings_and_empty_layers(build, message):
    with pytest.raises(ValueError) as info:
        build(jax.random.PRNGKey(0))
    assert str(info.value) == message
