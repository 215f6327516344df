import jax
import jax.numpy as jnp
import numpy as np
import pytest

import models


def _max_abs(matrices):
    return max(float(jnp.max(jnp.abs(c))) for c in matrices)


@pytest.mark.parametrize("dims", [[4, 4, 4, 4], [3, 5, 2, 4], [6, 1, 3]])
def test_balanced_init_has_zero_balancedness(dims):
    net = models.DeepLinearNet.balanced(dims, scale=1.3, key=jax.random.PRNGKey(0))
    assert [w.shape for w in net.weights] == list(zip(dims[1:], dims[:-1], strict=True))
    assert _max_abs(net.balancedness()) <= 1e-12
    assert float(jnp.linalg.norm(net.end_to_end())) > 1e-3


def test_balanced_square_layers_are_scaled_orthogonal():
    net = models.DeepLinearNet.balanced([3, 3, 3], scale=0.7, key=jax.random.PRNGKey(1))
    for w in net.weights:
        np.testing.assert_allclose(w @ w.T, 0.49 * jnp.eye(3), atol=1e-14)
    assert not np.allclose(net.weights[0], net.weights[1])


def test_gaussian_init_is_unbalanced():
    net = models.DeepLinearNet.gaussian([3, 5, 2, 4], scale=1.0, key=jax.random.PRNGKey(0))
    assert len(net.balancedness()) == 2
    assert _max_abs(net.balancedness()) > 0.1


def test_balancedness_orientation_and_end_to_end():
    w1 = jnp.array([[1.0, 2.0], [0.0, 1.0], [3.0, -1.0]])
    w2 = jnp.array([[2.0, 0.0, 1.0]])
    net = models.DeepLinearNet([w1, w2])
    (c1,) = net.balancedness()
    np.testing.assert_allclose(c1, w1 @ w1.T - w2.T @ w2)
    np.testing.assert_allclose(net.end_to_end(), w2 @ w1)
    np.testing.assert_allclose(net(jnp.array([1.0, -1.0])), w2 @ w1 @ jnp.array([1.0, -1.0]))


@pytest.mark.parametrize("shape, hidden", [((4, 4), 4), ((3, 5), 6), ((5, 3), 3)])
def test_decoupled_init_aligns_with_sigma31_and_is_balanced(shape, hidden):
    sigma31 = jax.random.normal(jax.random.PRNGKey(2), shape)
    u0 = 0.01
    net = models.DeepLinearNet.decoupled(sigma31, u0=u0, hidden=hidden, key=jax.random.PRNGKey(3))
    w1, w2 = net.weights
    assert w1.shape == (hidden, shape[1]) and w2.shape == (shape[0], hidden)
    u, _, vt = jnp.linalg.svd(sigma31, full_matrices=False)
    np.testing.assert_allclose(net.end_to_end(), u0 * u @ vt, atol=1e-14)
    np.testing.assert_allclose(w1 @ w1.T, w2.T @ w2, atol=1e-14)
    # each mode of sigma31 is scaled by u0, i.e. U^T (W2 W1) V = u0 I
    np.testing.assert_allclose(u.T @ net.end_to_end() @ vt.T, u0 * jnp.eye(min(shape)), atol=1e-14)


def test_decoupled_covers_only_needed_rank():
    sigma31 = jnp.outer(jnp.array([1.0, 2.0, 0.5]), jnp.array([0.3, -1.0]))
    net = models.DeepLinearNet.decoupled(sigma31, u0=0.1, hidden=1, key=jax.random.PRNGKey(0))
    expected = 0.1 * sigma31 / jnp.linalg.norm(sigma31)
    np.testing.assert_allclose(net.end_to_end(), expected, atol=1e-14)


def test_bad_arguments_raise():
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match="dims must have at least 2 entries"):
        models.DeepLinearNet.balanced([3], scale=1.0, key=key)
    with pytest.raises(ValueError, match=r"dims\[1\] must be an integer >= 1, got 0"):
        models.DeepLinearNet.gaussian([3, 0, 2], scale=1.0, key=key)
    with pytest.raises(ValueError, match="scale must be a finite number > 0"):
        models.DeepLinearNet.gaussian([3, 2], scale=float("inf"), key=key)
    with pytest.raises(ValueError, match=r"hidden must be >= rank\(sigma31\) = 2, got 1"):
        models.DeepLinearNet.decoupled(jnp.eye(2), u0=0.1, hidden=1, key=key)
    with pytest.raises(ValueError, match="sigma31 must be finite"):
        models.DeepLinearNet.decoupled(jnp.array([[jnp.nan]]), u0=0.1, hidden=1, key=key)
    with pytest.raises(ValueError, match="u0 must be a finite number > 0, got -1"):
        models.DeepLinearNet.decoupled(jnp.eye(2), u0=-1, hidden=2, key=key)
    with pytest.raises(ValueError, match=r"weights\[0\] must be finite"):
        models.DeepLinearNet([jnp.array([[jnp.inf]])])
    with pytest.raises(ValueError, match=r"weights\[1\] has shape \(2, 3\), which does not chain"):
        models.DeepLinearNet([jnp.ones((2, 2)), jnp.ones((2, 3))])
