import jax
import jax.numpy as jnp
import numpy as np
import pytest

import models


def test_mlp_matches_explicit_formula():
    model = models.MLP(3, 4, 2, activation="softplus", key=jax.random.PRNGKey(0))
    x = jnp.array([0.3, -1.2, 0.7])
    (w1, w2, w3), (b1, b2, b3) = model.weights, model.biases
    sp = jax.nn.softplus
    expected = (w3 @ sp(w2 @ sp(w1 @ x + b1) + b2) + b3)[0]
    assert model(x).shape == ()
    np.testing.assert_allclose(model(x), expected, rtol=1e-14)


def test_mlp_shapes_dtype_and_no_bias():
    model = models.MLP(3, 5, 3, bias=False, key=jax.random.PRNGKey(1))
    assert [w.shape for w in model.weights] == [(5, 3), (5, 5), (5, 5), (1, 5)]
    assert model.biases is None
    assert model.weights[0].dtype == jnp.float64


def test_mlp_init_variance_is_one_over_fan_in():
    model = models.MLP(400, 300, 1, key=jax.random.PRNGKey(2))
    assert np.var(model.weights[0]) == pytest.approx(1 / 400, rel=0.02)
    assert np.var(model.weights[1]) == pytest.approx(1 / 300, rel=0.2)


def test_mlp_batches_with_vmap():
    model = models.MLP(2, 3, 1, key=jax.random.PRNGKey(3))
    xs = jax.random.normal(jax.random.PRNGKey(4), (6, 2))
    np.testing.assert_allclose(jax.vmap(model)(xs), [model(x) for x in xs], rtol=1e-14)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(in_size=0, width=3, depth=1), "in_size must be an integer >= 1, got 0"),
        (dict(in_size=2, width=0, depth=1), "width must be an integer >= 1, got 0"),
        (dict(in_size=2, width=3, depth=0), "depth must be an integer >= 1, got 0"),
        (dict(in_size=2, width=2.5, depth=1), "width"),
        (dict(in_size=2, width=3, depth=1, activation="nope"), "activation"),
    ],
)
def test_mlp_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        models.MLP(**kwargs, key=jax.random.PRNGKey(0))


def test_mlp_wrong_input_shape_raises():
    model = models.MLP(2, 3, 1, key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=r"x must have shape \(2,\)"):
        model(jnp.ones((4, 2)))


def test_mlp_per_layer_widths_build_quadratic_growth():
    model = models.MLP(3, (2, 8, 18), bias=False, key=jax.random.PRNGKey(0))  # m_k = k²·2
    assert [w.shape for w in model.weights] == [(2, 3), (8, 2), (18, 8), (1, 18)]
    assert model.widths == (2, 8, 18)
    assert models.MLP(3, (4, 4), 2, key=jax.random.PRNGKey(0)).widths == (4, 4)


@pytest.mark.parametrize("width", [np.array([2, 8, 18]), range(2, 19, 8)], ids=["array", "range"])
def test_mlp_takes_an_array_or_range_of_widths_as_the_tuple(width):
    # both said "width must be an integer >= 1, got array([ 2,  8, 18])"
    key = jax.random.PRNGKey(0)
    model = models.MLP(3, width, bias=False, key=key)
    assert model.widths == tuple(width)
    reference = models.MLP(3, tuple(int(w) for w in width), bias=False, key=key)
    for w, w_ref in zip(model.weights, reference.weights, strict=True):
        np.testing.assert_array_equal(w, w_ref)


def test_ntk_parameterisation_draws_the_same_normals_and_scales_them_in_the_forward_pass():
    key, x = jax.random.PRNGKey(7), jnp.array([0.3, -1.2, 0.7])
    phi = models.abs_family(0.6, 0.4)
    kw = dict(activation=phi, weight_std=1.3, bias_std=0.2, key=key)
    ntk = models.MLP(3, (5, 4), parameterization="ntk", **kw)
    std = models.MLP(3, (5, 4), parameterization="standard", **kw)
    # standard: W = (σ_w/√fan_in)·N, b = σ_b·N; ntk stores N and scales in the forward pass
    for (w_n, w_s, fan_in), b_n, b_s in zip(
        zip(ntk.weights, std.weights, (3, 5, 4)), ntk.biases, std.biases
    ):
        np.testing.assert_allclose(w_s, 1.3 / np.sqrt(fan_in) * w_n, rtol=1e-15)
        np.testing.assert_allclose(b_s, 0.2 * b_n, rtol=1e-15)
    assert ntk.weight_scales == pytest.approx((1.3 / np.sqrt(3), 1.3 / np.sqrt(5), 1.3 / 2))
    assert ntk.bias_scales == (0.2, 0.2, 0.2) and std.weight_scales == (1.0, 1.0, 1.0)
    (w1, w2, w3), (b1, b2, b3) = ntk.weights, ntk.biases
    s1, s2, s3 = ntk.weight_scales
    expected = (s3 * w3 @ phi(s2 * w2 @ phi(s1 * w1 @ x + 0.2 * b1) + 0.2 * b2) + 0.2 * b3)[0]
    np.testing.assert_allclose(ntk(x), expected, rtol=1e-14)
    np.testing.assert_allclose(std(x), expected, rtol=1e-13)  # same function at init


def test_forward_returns_the_layer_inputs_and_shifts_give_backpropagated_errors():
    model = models.MLP(
        2, (3, 4), activation="tanh", parameterization="ntk", key=jax.random.PRNGKey(1)
    )
    x = jnp.array([0.5, -0.25])
    out, inputs = model.forward(x)
    assert [h.shape for h in inputs] == [(2,), (3,), (4,)] and out == model(x)
    np.testing.assert_array_equal(inputs[0], x)
    z1 = model.weight_scales[0] * model.weights[0] @ x + model.bias_scales[0] * model.biases[0]
    np.testing.assert_allclose(inputs[1], jnp.tanh(z1), rtol=1e-15)
    zeros = tuple(jnp.zeros(w.shape[0]) for w in model.weights)
    deltas = jax.grad(lambda s: model.forward(x, s)[0])(zeros)
    assert deltas[-1] == pytest.approx(jnp.ones(1))  # ∂f/∂z_{L+1} = 1
    # ∂f/∂z_L = φ'(z_L)·(σ/√m_L)·w_out
    z2 = (
        model.weight_scales[1] * model.weights[1] @ inputs[1]
        + model.bias_scales[1] * model.biases[1]
    )
    expected = (1 - jnp.tanh(z2) ** 2) * model.weight_scales[2] * model.weights[2][0]
    np.testing.assert_allclose(deltas[1], expected, rtol=1e-14)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(width=(3, 0)), "width must be an integer >= 1, got 0"),
        (dict(width=()), "non-empty tuple"),
        (dict(width=(3, 3), depth=3), r"depth \(3\) must equal len\(width\) \(2\)"),
        (dict(width=3), "depth must be given"),
        (dict(width=3, depth=1, parameterization="mup"), "parameterization must be"),
        (dict(width=3, depth=1, weight_std=-1.0), "weight_std must be a finite number >= 0"),
        (dict(width=3, depth=1, weight_std=0.0), "weight_std must be > 0"),
        (dict(width=3, depth=1, bias_std=float("inf")), "bias_std must be a finite number"),
    ],
)
def test_mlp_bad_widths_and_parameterisations_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        models.MLP(2, **kwargs, key=jax.random.PRNGKey(0))
