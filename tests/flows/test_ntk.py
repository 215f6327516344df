"""flows.ntk.ntk_gram: its three methods agree, closed forms, and the empirical NTK at
initialisation converges to flows.ntk.ntk_infinite at rate m^(−1/2)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models


def _inputs(n=7, d=5, seed=0):
    X = np.random.default_rng(seed).standard_normal((n, d))
    return X * np.sqrt(d) / np.linalg.norm(X, axis=1, keepdims=True)


class _Affine(eqx.Module):
    """h(x) = W x, W of shape (k, d): ∂h_j(x_i)/∂W_ab = δ_ja·x_ib, so Σ = XXᵀ ⊗ I_k."""

    W: jax.Array

    def __call__(self, x):
        return self.W @ x


@pytest.mark.parametrize("parameterization", ["standard", "ntk"])
@pytest.mark.parametrize("bias", [True, False])
def test_layers_and_blocks_equal_the_explicit_jacobian(parameterization, bias):
    X = _inputs()
    model = models.MLP(5, (6, 9), activation=models.abs_family(0.6, 0.4), bias=bias,
                       parameterization=parameterization, weight_std=1.2, bias_std=0.3,
                       key=jax.random.PRNGKey(1))  # fmt: skip
    K = flows.ntk.ntk_gram(model, X, method="jacobian")
    scale = np.abs(K).max()
    # measured: 8e-16 of the largest entry (layers), 4e-16 (blocks of 3 rows)
    np.testing.assert_allclose(flows.ntk.ntk_gram(model, X, method="layers"), K, atol=1e-13 * scale)
    blocks = flows.ntk.ntk_gram(model, X, method="blocks", memory=2 * 8 * 3 * 200)
    np.testing.assert_allclose(blocks, K, atol=1e-13 * scale)
    # "auto" forms J when it fits in `memory`, else goes layer by layer
    np.testing.assert_array_equal(flows.ntk.ntk_gram(model, X), K)
    np.testing.assert_allclose(flows.ntk.ntk_gram(model, X, memory=100), K, atol=1e-13 * scale)


def test_blocks_of_a_multi_output_model_give_the_kronecker_closed_form():
    X = _inputs(5, 4)
    model = _Affine(jnp.asarray(np.random.default_rng(1).standard_normal((3, 4))))
    expected = np.kron(X @ X.T, np.eye(3))
    # one input per block (memory of 2·8·3·12 bytes), so every off-diagonal block is a pair
    got = flows.ntk.ntk_gram(model, X, method="blocks", memory=2 * 8 * 3 * 12)
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(flows.ntk.ntk_gram(model, X), expected, rtol=1e-14, atol=1e-14)


def test_blocks_work_on_a_symmetrised_network():
    X = _inputs()
    model = models.symmetrize(models.MLP(5, 6, 2, key=jax.random.PRNGKey(2)), "doubled")
    K = flows.ntk.ntk_gram(model, X, method="jacobian")
    got = flows.ntk.ntk_gram(model, X, memory=8 * 100)  # auto → blocks: not an MLP
    np.testing.assert_allclose(got, K, atol=1e-13 * np.abs(K).max())  # measured 6e-16


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(method="svd"), "method must be one of"),
        (dict(memory=0), "memory must be an integer number of bytes >= 1"),
        (dict(method="layers", model=_Affine(jnp.ones((1, 5)))), "needs a models.MLP"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    model = kwargs.pop("model", models.MLP(5, 3, 1, key=jax.random.PRNGKey(0)))
    with pytest.raises(ValueError, match=match):
        flows.ntk.ntk_gram(model, _inputs(), **kwargs)


@pytest.mark.parametrize("model", [None, np.ones((3, 5))])
def test_a_model_that_cannot_be_called_is_refused_naming_model(model):
    # None said "'NoneType' object is not callable"
    with pytest.raises(TypeError) as info:
        flows.ntk.ntk_gram(model, _inputs())
    assert str(info.value) == (
        "model must be a callable equinox Module (one input of shape (d,)), got "
        f"{type(model).__name__}"
    )


@pytest.mark.parametrize(
    "X, message",
    [
        (np.zeros((0, 5)), "X must have shape (n, d) with n >= 1, got (0, 5)"),
        (np.ones(5), "X must have shape (n, d) with n >= 1, got (5,)"),
        (np.where(np.eye(3, 5) > 0, np.nan, 1.0), "X: non-finite values (NaN or inf)"),
        ([["a"] * 5], "X must be an array of numbers, got list"),
    ],
)  # fmt: skip
def test_empty_or_non_finite_X_is_refused_naming_X(X, message):
    model = models.MLP(5, 3, 1, key=jax.random.PRNGKey(0))
    for method in ("auto", "layers", "blocks"):  # was NaN Σ, or an empty one, silently
        with pytest.raises(ValueError) as info:
            flows.ntk.ntk_gram(model, X, method=method)
        assert str(info.value) == message


@pytest.mark.parametrize("method", ["auto", "jacobian", "layers", "blocks"])
def test_rows_of_another_dimension_are_refused_naming_X(method):
    # a (4, 3) X for a 5-input MLP: JAX's 'dot_general requires contracting dimensions to
    # have the same shape' TypeError (auto) or a broadcast error, without naming X
    model = models.MLP(5, 3, 1, key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError) as info:
        flows.ntk.ntk_gram(model, np.ones((4, 3)), method=method)
    message = str(info.value)
    assert message.startswith("X of shape (4, 3) does not fit the model: ")
    assert "\n" not in message


def test_a_multi_output_mlp_past_the_jacobian_memory_uses_blocks_and_layers_is_refused():
    # "layers" differentiates a scalar output: for out_size 2 it failed as JAX's "Gradient
    # only defined for scalar-output functions", also when "auto" chose it (J over memory)
    model = models.MLP(3, 8, 2, out_size=2, key=jax.random.PRNGKey(0))
    X = np.random.default_rng(0).normal(size=(5, 3))
    dense = flows.ntk.ntk_gram(model, X, method="jacobian")
    auto = flows.ntk.ntk_gram(model, X, memory=100)  # J is 10 x p floats, over 100 bytes
    # measured relative difference 2.6e-16; asserted to 1e-12
    assert dense.shape == (10, 10)
    assert np.abs(auto - dense).max() <= 1e-12 * np.abs(dense).max()
    with pytest.raises(ValueError, match=r"^method='layers' needs a scalar models.MLP"):
        flows.ntk.ntk_gram(model, X, method="layers")


def test_empirical_ntk_at_init_converges_to_ntk_infinite_at_rate_minus_one_half():
    # ReLU at the edge of chaos (σ_w² = 2), NTK parameterisation, one hidden layer: K_m is a
    # mean of m i.i.d. terms with mean K∞, so E‖K_m − K∞‖ ∝ m^(−1/2) (central limit theorem).
    # Slope of the seed-mean relative operator-norm error over m = 2^4 … 2^13, 24 seeds.
    # Measured: −0.501 here; four disjoint groups of 24 seeds gave −0.487 … −0.516.
    X = _inputs(6, 5)
    _, K_inf = flows.ntk.ntk_infinite(X, depth=1, a=0.5, b=0.5)
    widths = [2**k for k in range(4, 14)]
    errors = []
    for i, m in enumerate(widths):
        e = []
        for s in range(24):
            net = models.MLP(5, m, 1, activation=models.abs_family(0.5, 0.5), bias=False,
                             parameterization="ntk", weight_std=np.sqrt(2),
                             key=jax.random.PRNGKey(1000 * i + s))  # fmt: skip
            K = flows.ntk.ntk_gram(net, X, method="layers")
            e.append(np.linalg.norm(K - K_inf, 2) / np.linalg.norm(K_inf, 2))
        errors.append(np.mean(e))
    assert errors[-1] < 0.05  # measured 0.012
    assert flows.lazy.loglog_slope(widths, errors) == pytest.approx(-0.5, abs=0.15)
