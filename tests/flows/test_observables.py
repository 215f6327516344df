"""Observables and the max-margin direction, against closed forms and an independent QP."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from scipy.optimize import minimize, nnls

import flows
import models


def test_max_margin_matches_an_independent_qp_and_its_kkt_conditions_on_digits(digits_3_8):
    X, y = digits_3_8
    assert flows.observables.is_linearly_separable(X, y)
    mm = flows.observables.max_margin(X, y)
    Z = y[:, None] * X
    qp = minimize(  # primal hard-margin QP, scipy's SLSQP: min ½‖w‖² s.t. Zw ≥ 1
        lambda w: 0.5 * w @ w,
        np.zeros(X.shape[1]),
        jac=lambda w: w,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda w: Z @ w - 1, "jac": lambda w: Z}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    w_qp = qp.x
    np.testing.assert_allclose(mm.direction, w_qp / np.linalg.norm(w_qp), atol=1e-8)
    np.testing.assert_allclose(mm.margin, 1.0 / np.linalg.norm(w_qp), rtol=1e-8)
    # KKT: w* = Σ_{i ∈ support} α_i y_i x_i with α_i ≥ 0.
    w_star = mm.direction / mm.margin
    alpha, residual = nnls(Z[mm.support].T, w_star)
    assert residual <= 1e-6 * np.linalg.norm(w_star)
    assert 1 <= len(mm.support) <= X.shape[1] + 1


def test_separability_check_and_error_for_inseparable_data():
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    y = np.array([1.0, 1.0, -1.0])  # x and −x share a label: no hyperplane through 0
    assert not flows.observables.is_linearly_separable(X, y)
    with pytest.raises(ValueError, match="not linearly separable through the origin"):
        flows.observables.max_margin(X, y)
    with pytest.raises(ValueError, match="y must hold labels -1 and \\+1"):
        flows.observables.max_margin(X, np.array([1.0, 0.0, -1.0]))
    with pytest.raises(ValueError, match="both classes"):
        flows.observables.max_margin(X, np.ones(3))
    # Signed points z = (1, 0), (0, 1): w* ∝ (1, 1), γ = 1/√2.
    X2, y2 = np.array([[1.0, 0.0], [0.0, -1.0]]), np.array([1.0, -1.0])
    mm = flows.observables.max_margin(X2, y2)
    np.testing.assert_allclose(mm.direction, [2**-0.5, 2**-0.5], atol=1e-9)
    np.testing.assert_allclose(mm.margin, 2**-0.5, atol=1e-9)


def test_alignment_ratio_stable_rank_and_gaps_closed_forms():
    rot = lambda a: jnp.array([[jnp.cos(a), -jnp.sin(a)], [jnp.sin(a), jnp.cos(a)]])  # noqa: E731
    w1 = rot(0.3) @ jnp.diag(jnp.array([4.0, 3.0]))  # top left singular vector (cos .3, sin .3)
    w2 = jnp.diag(jnp.array([2.0, 1.0])) @ rot(-0.5)  # top right singular vector (cos .5, sin .5)
    w3 = jnp.array([[1.0, 2.0]])
    net = models.DeepLinearNet([w1, w2, w3])
    align = flows.observables.adjacent_alignment(net)
    np.testing.assert_allclose(align[0], np.cos(0.2), atol=1e-14)
    np.testing.assert_allclose(
        flows.observables.singular_value_ratio(net), [0.75, 0.5, 0.0], atol=1e-14
    )
    np.testing.assert_allclose(
        flows.observables.stable_rank(net), [25 / 16, 5 / 4, 1.0], atol=1e-14
    )
    np.testing.assert_allclose(flows.observables.layer_norm_gaps(net), [25 - 5, 5 - 5], atol=1e-13)
    sv = flows.observables.layer_singular_values(net)
    np.testing.assert_allclose(sv[0], [4.0, 3.0], atol=1e-14)
    np.testing.assert_allclose(flows.observables.end_to_end(net), w3 @ w2 @ w1, atol=1e-14)


def test_margin_and_angle_of_a_known_end_to_end_vector():
    direction = np.array([1.0, 0.0, 0.0])
    angle = flows.observables.max_margin_angle(direction)
    beta = np.array([np.cos(1e-9), np.sin(1e-9), 0.0])  # small angles stay exact (atan2 form)
    net = models.DeepLinearNet([jnp.eye(3), 2.0 * jnp.asarray(beta)[None, :]])
    np.testing.assert_allclose(angle(net), 1e-9, rtol=1e-6)
    net_opposite = models.DeepLinearNet([-jnp.eye(3), jnp.asarray(direction)[None, :]])
    np.testing.assert_allclose(angle(net_opposite), np.pi, rtol=1e-14)
    X = np.array([[1.0, 1.0, 0.0], [-2.0, 0.5, 0.0]])
    y = np.array([1.0, -1.0])
    margin = flows.observables.normalised_margin(X, y)
    # β ∝ (cos 1e-9, sin 1e-9, 0): margins 1·(c + s) and 2c − 0.5s, min over i, ÷ ‖β‖ = 1
    c, s = np.cos(1e-9), np.sin(1e-9)
    np.testing.assert_allclose(margin(net), min(c + s, 2 * c - 0.5 * s), rtol=1e-14)


def test_balancedness_drift_and_neuron_invariant_values():
    net0 = models.DeepLinearNet([jnp.array([[1.0, 2.0], [0.0, 1.0]]), jnp.array([[3.0, 0.0]])])
    net1 = models.DeepLinearNet([jnp.array([[1.0, 2.0], [0.0, 1.0]]), jnp.array([[3.0, 1.0]])])
    # C(1) − C(0) = −(w2ᵀw2 − w2₀ᵀw2₀) = −[[0, 3], [3, 1]]: Frobenius norm √19
    np.testing.assert_allclose(
        flows.observables.balancedness_drift(net0)(net1), [19**0.5], rtol=1e-15
    )
    rel = flows.observables.balancedness_drift(net0, relative=True)(net1)
    np.testing.assert_allclose(rel, [19**0.5 / (6.0 + 10.0)], rtol=1e-15)
    two = models.TwoLayerNet(2, 3, activation="relu", key=jax.random.PRNGKey(0))
    np.testing.assert_allclose(
        flows.observables.neuron_balancedness(two),
        np.sum(np.asarray(two.b) ** 2, 1) - np.asarray(two.a) ** 2,
    )
    with pytest.raises(ValueError, match="at least two layers"):
        flows.observables.balancedness_drift(models.DeepLinearNet([jnp.eye(2)]))


def test_neuron_balancedness_drift_values_absolute_and_relative_to_the_initial_scale():
    net0 = models.TwoLayerNet(2, 2, activation="relu", key=jax.random.PRNGKey(0))
    net0 = eqx.tree_at(
        lambda n: (n.a, n.b), net0, (jnp.array([0.5, 2.0]), jnp.array([[1.0, 0.0], [0.0, 0.1]]))
    )
    # q(0) = (1 − 0.25, 0.01 − 4) = (0.75, −3.99); scales max(1, ‖b_j‖² + a_j²) = (1.25, 4.01).
    net1 = eqx.tree_at(lambda n: n.a, net0, jnp.array([1.0, 1.0]))  # q(1) = (0, −0.99)
    np.testing.assert_allclose(flows.observables.neuron_balancedness_drift(net0)(net1), [0.75, 3.0])
    rel_of = flows.observables.neuron_balancedness_drift(net0, relative=True)
    np.testing.assert_allclose(rel_of(net1), [0.75 / 1.25, 3.0 / 4.01], rtol=1e-15)
    # The scale stays that of t = 0 (‖b_1‖² grew to 4: 3/1.25, not 3/4.25).
    net2 = eqx.tree_at(lambda n: n.b, net0, jnp.array([[2.0, 0.0], [0.0, 0.1]]))
    np.testing.assert_allclose(rel_of(net2), [3.0 / 1.25, 0.0], rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize(
    "model",
    [
        models.MLP(3, 5, 2, activation="relu", bias=True, key=jax.random.PRNGKey(1)),
        models.MLP(3, 5, 2, activation="abs", bias=False, key=jax.random.PRNGKey(2)),
        models.TwoLayerNet(3, 6, activation="leaky_relu", key=jax.random.PRNGKey(3)),
    ],
    ids=["relu_mlp_bias", "abs_mlp", "leaky_two_layer"],
)
def test_homogeneous_invariants_have_zero_rate_along_the_gradient(model):
    # Under the flow d/dt I(θ) = −⟨∇I, ∇F⟩: it must vanish identically, for any loss.
    X = jax.random.normal(jax.random.PRNGKey(0), (7, 3))
    y = jnp.cos(X[:, 0])

    def loss(m):
        return jnp.sum((jax.vmap(m)(X) - y) ** 2)

    invariant = (
        flows.observables.neuron_balancedness
        if isinstance(model, models.TwoLayerNet)
        else (flows.observables.layer_norm_gaps)
    )
    flat, unravel = ravel_pytree(model)
    J = jax.jacobian(lambda f: invariant(unravel(f)))(flat)  # (m, p)
    g = ravel_pytree(jax.grad(loss)(model))[0]
    rate, scale = J @ g, jnp.abs(J) @ jnp.abs(g)  # scale: the rate with no cancellation
    assert float(jnp.abs(rate / scale).max()) <= 1e-14
    assert float(scale.min()) > 1e-3 and float(jnp.abs(invariant(model)).min()) > 1e-3


@pytest.mark.parametrize(
    "call, message",
    [
        # each used to raise "'NoneType' object has no attribute ..." (an AttributeError)
        (lambda m: flows.observables.end_to_end(m), "model must be a models.DeepLinearNet"),
        (
            lambda m: flows.observables.balancedness_drift(m),
            "params0 must be a models.DeepLinearNet",
        ),
        (lambda m: flows.observables.neuron_balancedness(m), "model must be a models.TwoLayerNet"),
        (
            lambda m: flows.observables.neuron_balancedness_drift(m),
            "params0 must be a models.TwoLayerNet",
        ),
        # printed the whole array over several lines
        (lambda m: flows.observables.stable_rank(m), "expected a model with `weights`"),
    ],
)
@pytest.mark.parametrize("model, got", [(None, "NoneType"), (jnp.ones((3, 3)), "ArrayImpl")])
def test_observables_refuse_another_model_in_one_line(call, message, model, got):
    with pytest.raises(ValueError) as info:
        call(model)
    said = str(info.value)
    assert said in (f"{message}, got {got}", f"{message} (e.g. DeepLinearNet), got {got}")


_REF = models.DeepLinearNet([np.arange(1.0, 13.0).reshape(4, 3) / 7, np.ones((1, 4))])
_TWO = models.TwoLayerNet(3, 4, key=jax.random.PRNGKey(0))


@pytest.mark.parametrize(
    "call, error, message",
    [
        # "sub got incompatible shapes for broadcasting: (5, 5), (4, 4)"
        (
            lambda: flows.observables.balancedness_drift(_REF)(
                models.DeepLinearNet([np.ones((5, 3)), np.ones((1, 5))])
            ),
            ValueError,
            "model has shapes [(5, 3), (1, 5)], but the observable was built for [(4, 3), (1, 4)]",
        ),
        # "zip() argument 2 is longer than argument 1"
        (
            lambda: flows.observables.balancedness_drift(_REF)(
                models.DeepLinearNet([np.ones((1, 3))])
            ),
            ValueError,
            "model has shapes [(1, 3)], but the observable was built for [(4, 3), (1, 4)]",
        ),
        (
            lambda: flows.observables.neuron_balancedness_drift(_TWO)(
                models.TwoLayerNet(3, 5, key=jax.random.PRNGKey(1))
            ),
            ValueError,
            "model has shapes [(5,), (5, 3)], but the observable was built for [(4,), (4, 3)]",
        ),
        # "yes" and None were taken by truth value
        (
            lambda: flows.observables.balancedness_drift(_REF, relative="yes"),
            TypeError,
            "relative must be True or False, got str 'yes'",
        ),
        (
            lambda: flows.observables.neuron_balancedness_drift(_TWO, relative=None),
            TypeError,
            "relative must be True or False, got NoneType None",
        ),
        # "dot_general requires contracting dimensions to have the same shape"
        (
            lambda: flows.observables.normalised_margin(np.eye(2), [1.0, -1.0])(_REF),
            ValueError,
            "model has input dimension d_0 = 3, but X's number of columns is 2",
        ),
        (
            lambda: flows.observables.max_margin_angle(np.ones(2))(_REF),
            ValueError,
            "model has input dimension d_0 = 3, but direction's length is 2",
        ),
        # "could not convert string to float: 'ab'"
        (
            lambda: flows.observables.max_margin_angle("ab"),
            ValueError,
            "direction must be a nonzero finite 1-D vector, got str",
        ),
    ],
)
def test_observables_refuse_a_model_of_other_shapes_naming_it(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message


def test_pair_observables_of_a_one_layer_net_are_empty():
    # jnp.stack([]) said "Need at least one array to stack"; L - 1 = 0 entries
    one = models.DeepLinearNet([np.arange(1.0, 7.0).reshape(2, 3)])
    for fn in (flows.observables.adjacent_alignment, flows.observables.layer_norm_gaps):
        value = fn(one)
        assert value.shape == (0,) and value.dtype == jnp.float64
