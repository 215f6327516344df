"""The elementwise losses refuse predictions and targets of different shapes, and empty
ones, in one line naming both shapes, eagerly and under `jit` (shapes are static)."""

import jax
import jax.numpy as jnp
import pytest

import flows

_LOSSES = [flows.SquaredLoss(), flows.LogisticLoss(), flows.ExponentialLoss(reduction="mean")]


@pytest.mark.parametrize("loss", _LOSSES)
@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize(
    "pred, target, message",
    [
        # an (n, 1) prediction against (n,) targets used to give an (n, n) loss, silently
        (
            (5, 1),
            (5,),
            "predictions of shape (5, 1) and targets of shape (5,) do not match (they must "
            "have one shape, (n,) or (n, k); a scalar model's outputs of shape (1,) give (n, 1))",
        ),
        # used to fail in JAX as "sub got incompatible shapes for broadcasting"
        ((3,), (4,), "predictions of shape (3,) and targets of shape (4,) do not match"),
        # the squared loss used to raise ZeroDivisionError "integer modulo by zero"
        ((0,), (0,), "predictions of shape (0,) are empty: give at least one row"),
    ],
)
def test_mismatched_or_empty_shapes_are_refused_naming_them(loss, jit, pred, target, message):
    call = jax.jit(loss) if jit else loss
    with pytest.raises(ValueError) as info:
        call(jnp.full(pred, 0.3), jnp.full(target, 1.0))
    assert str(info.value).startswith(message)


def test_matching_shapes_give_the_closed_forms():
    pred, target = jnp.array([0.5, -1.0, 2.0]), jnp.array([1.0, -1.0, 1.0])
    assert abs(flows.SquaredLoss()(pred, target) - 0.5 * (0.25 + 0.0 + 1.0)) < 1e-15
    margins = jnp.array([0.5, 1.0, 2.0])
    expected = float(jnp.sum(jnp.exp(-margins)))
    assert abs(flows.ExponentialLoss()(pred, target) - expected) < 1e-14
    # a scalar target broadcasts into the predictions: allowed
    assert abs(flows.SquaredLoss()(pred, 1.0) - 0.5 * (0.25 + 4.0 + 1.0)) < 1e-14


@pytest.mark.parametrize(
    "labels, got",
    [
        ([0.0, 1.0, 5.0], "from 0 to 5"),  # gave a NaN loss, silently
        ([0.0, 1.5, 1.0], "from 0 to 1.5"),  # 1.5 was truncated to class 1
        ([-1.0, 1.0, 0.0], "from -1 to 1"),
    ],
)
def test_cross_entropy_refuses_labels_outside_the_classes(labels, got):
    loss = flows.CrossEntropyLoss()
    logits = jnp.array([[0.2, -0.4], [1.0, 0.3], [-0.5, 0.7]])
    labels = jnp.array(labels)  # closed over by the loss, as data is: concrete under jit
    with pytest.raises(ValueError) as info:
        jax.jit(lambda z: loss(z, labels))(logits)
    assert (
        str(info.value)
        == f"cross-entropy labels must be integers in [0, 2) for 2 logits, got values {got}"
    )
    good = loss(logits, jnp.array([0, 1, 1]))
    expected = sum(
        float(jax.scipy.special.logsumexp(row)) - float(row[c])
        for row, c in zip(logits, [0, 1, 1], strict=True)
    )
    assert abs(good - expected) < 1e-13


@pytest.mark.parametrize("loss", [flows.LogisticLoss(), flows.ExponentialLoss("mean")])
@pytest.mark.parametrize(
    "targets, got",
    [
        ([1.0, 0.0, 1.0, 0.0], "0"),  # 0/1 labels: a 0 target has zero gradient, silently
        ([2.0, -1.0, 0.5, -3.0], "-3, 0.5, 2"),
        ([1.0, 0.0, 2.0, 3.0, 4.0], "0, 2, 3, ..."),
    ],
)
def test_margin_losses_refuse_concrete_targets_that_are_not_signs(loss, targets, got):
    targets = jnp.array(targets)  # closed over by the loss, as data is: concrete under jit
    pred = jnp.linspace(-0.7, 1.1, targets.size)
    with pytest.raises(ValueError) as info:
        jax.jit(lambda p: loss(p, targets))(pred)
    assert str(info.value) == (
        f"targets of the logistic and exponential losses must be -1 or +1, got {got} "
        "(0/1 labels y give ±1 targets as 2*y - 1)"
    )


def test_margin_losses_accept_signs_and_leave_traced_targets_unchecked():
    pred, signs = jnp.array([0.5, -1.0, 2.0]), jnp.array([1.0, -1.0, -1.0])
    margins = -signs * pred  # -0.5, -1, 2
    expected = float(jnp.sum(jnp.log1p(jnp.exp(margins))))
    assert abs(flows.LogisticLoss()(pred, signs) - expected) < 1e-14
    # a traced target cannot be seen (documented): a 0 target gives log 2, not an error
    traced = jax.jit(flows.LogisticLoss())(pred, jnp.zeros(3))
    assert abs(traced - 3 * float(jnp.log(2.0))) < 1e-14


# ------------------------------------------------- shapes accepted but not meant (issue 37)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize(
    "target",
    [
        jnp.array([[1.0], [0.0], [1.0], [0.0]]),  # 0/1 rows of one logit: the loss was 0.0
        jnp.array([0, 0, 0, 0]),  # labels of the one class: the loss was 0.0
    ],
)
def test_cross_entropy_refuses_one_logit_naming_the_shape_and_logistic_loss(jit, target):
    logits = jnp.array([[0.3], [-1.2], [2.0], [0.1]])
    loss = flows.CrossEntropyLoss()
    call = jax.jit(lambda z: loss(z, target)) if jit else (lambda z: loss(z, target))
    with pytest.raises(ValueError) as info:
        call(logits)
    message = str(info.value)
    assert "shape (4, 1)" in message and "flows.LogisticLoss" in message and "\n" not in message


@pytest.mark.parametrize(
    "rows, says",
    [
        ([[1.0, 1.0], [0.0, 1.0]], "got row 0 with sum 2 and smallest entry 1"),  # counted twice
        ([[0.0, 1.0], [1.5, -0.5]], "got row 1 with sum 1 and smallest entry -0.5"),  # unbounded
        ([[0.0, 0.0], [0.5, 0.5]], "got row 0 with sum 0"),  # the example was dropped
    ],
)
def test_cross_entropy_refuses_rows_that_are_not_probabilities(rows, says):
    logits = jnp.array([[0.2, -0.4], [1.0, 0.3]])
    with pytest.raises(ValueError, match=says):
        flows.CrossEntropyLoss()(logits, jnp.array(rows))
    # probability rows give Σ_i [lse(z_i) − t_i·z_i]
    t = jnp.array([[0.25, 0.75], [1.0, 0.0]])
    lse = jax.scipy.special.logsumexp(logits, axis=1)
    expected = float(jnp.sum(lse - jnp.sum(t * logits, axis=1)))
    assert abs(flows.CrossEntropyLoss()(logits, t) - expected) < 1e-14


@pytest.mark.parametrize("loss", [*_LOSSES, flows.CrossEntropyLoss()])
def test_a_0d_prediction_is_refused_naming_its_shape(loss):
    # the squared loss raised IndexError "tuple index out of range"; the margin losses
    # accepted it as one example outside the documented shapes
    with pytest.raises(ValueError, match=r"shape \(\)"):
        loss(jnp.array(0.3), jnp.array(1.0))


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("target", [(0,), (0, 3)])
def test_cross_entropy_refuses_empty_logits_naming_the_shape(reduction, target):
    # the mean over no rows was NaN and the sum 0.0, silently (the other losses refuse (0,))
    loss = flows.CrossEntropyLoss(reduction)
    with pytest.raises(ValueError, match=r"logits of shape \(0, 3\) are empty"):
        loss(jnp.zeros((0, 3)), jnp.zeros(target, dtype=int if len(target) == 1 else float))


LOSSES = [flows.SquaredLoss(), flows.LogisticLoss(), flows.ExponentialLoss()]


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: type(loss).__name__)
def test_python_lists_are_taken_as_arrays(loss):
    # lists gave "unsupported operand type(s) for -: 'list' and 'list'", naming neither
    pred, target = [0.3, -1.2, 2.0], [1.0, -1.0, -1.0]
    assert float(loss(pred, target)) == float(loss(jnp.array(pred), jnp.array(target)))
    logits, labels = [[0.3, -1.2], [2.0, 0.5]], [1, 0]
    ce = flows.CrossEntropyLoss()
    assert float(ce(logits, labels)) == float(ce(jnp.array(logits), jnp.array(labels)))


@pytest.mark.parametrize(
    "pred, target, name",
    [(["a", "b"], [1.0, 1.0], "predictions"), ([1.0, 1.0], None, "targets"),
     ([[1.0], [1.0, 2.0]], [1.0, 1.0], "predictions")],
)  # fmt: skip
@pytest.mark.parametrize("loss", [*LOSSES, flows.CrossEntropyLoss()], ids=lambda x: x.__repr__())
def test_what_is_not_an_array_of_numbers_is_refused_naming_the_argument(loss, pred, target, name):
    with pytest.raises(TypeError, match=f"^{name} must "):
        loss(pred, target)
