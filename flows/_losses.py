"""Losses R(prediction, target) of the training objective.

Each loss is a frozen, hashable object, so it can be a static field of a jitted vector field.
Predictions and targets have shape `(n,)` (one output per input) or `(n, k)`, as arrays or
lists of numbers (anything else is a `TypeError` naming `predictions` or `targets`). The squared,
logistic and exponential losses raise `ValueError` naming both shapes when the targets do
not have the predictions' shape (a scalar target broadcasts) or the predictions are empty
or 0-d;
the logistic and exponential losses also refuse concrete targets outside {−1, +1}.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np


def _reduce(values, reduction):
    return jnp.sum(values) if reduction == "sum" else jnp.mean(values)


def _as_arrays(pred, target):
    """(pred, target) as JAX arrays: a Python list or number is taken as an array (`pred -
    target` on two lists was "unsupported operand type(s) for -: 'list' and 'list'", naming
    neither); what is not numeric raises `TypeError` naming `predictions` or `targets`."""
    out = []
    for name, value in (("predictions", pred), ("targets", target)):
        if not isinstance(value, jax.Array):
            try:
                value = jnp.asarray(value)
            except (TypeError, ValueError) as e:
                raise TypeError(
                    f"{name} must be an array (or a list of numbers), got "
                    f"{type(value).__name__} {str(value)[:40]}: {e}"
                ) from None
            if not jnp.issubdtype(value.dtype, jnp.number):
                raise TypeError(f"{name} must hold numbers, got dtype {value.dtype}")
        out.append(value)
    return out


def _check_shapes(pred, target) -> None:
    """Refuse a `target` that would broadcast `pred` to another shape (pred (n, 1), target
    (n,): an (n, n) loss, silently; a model returning shape (1,) gives such pred) or shapes
    that do not broadcast (JAX's "sub got incompatible shapes"), and an empty `pred` (a
    ZeroDivisionError). Shapes are static, so this holds under `jit` too.
    **Raises:** `ValueError` naming both shapes."""
    shape, target_shape = jnp.shape(pred), jnp.shape(target)
    try:
        joint = jnp.broadcast_shapes(shape, target_shape)
    except ValueError:
        joint = None
    if not shape:
        raise ValueError(
            "predictions of shape () have no row axis: they must be (n,) or (n, k) "
            "(one example: reshape to (1,))"
        )
    if joint != shape:
        raise ValueError(
            f"predictions of shape {shape} and targets of shape {target_shape} do not match "
            "(they must have one shape, (n,) or (n, k); a scalar model's outputs of shape "
            "(1,) give (n, 1))"
        )
    if 0 in shape:
        raise ValueError(f"predictions of shape {shape} are empty: give at least one row")


def _check_labels(labels, k: int) -> None:
    """Refuse concrete class labels that are not integers in [0, k) (a label k gave a NaN
    loss, 1.5 was truncated to 1, silently); traced labels are not seen.
    **Raises:** `ValueError` naming the range found."""
    if isinstance(labels, jax.core.Tracer) or labels.size == 0:
        return
    values = np.asarray(labels)
    if not (np.all(np.isfinite(values)) and np.all(values == np.round(values))) or not (
        0 <= values.min() and values.max() < k
    ):
        raise ValueError(
            f"cross-entropy labels must be integers in [0, {k}) for {k} logits, got values "
            f"from {values.min():g} to {values.max():g}"
        )


def _check_rows(rows) -> None:
    """Refuse concrete cross-entropy target rows that are not probability vectors (a row
    summing to 2 counted its example twice, a negative entry made the loss unbounded below,
    silently); traced rows are not seen. Tolerance 1e-6 on the sums (float32 rows).
    **Raises:** `ValueError` naming the first bad row."""
    if isinstance(rows, jax.core.Tracer) or rows.size == 0:
        return
    values = np.asarray(rows, dtype=np.float64)
    sums = values.sum(axis=1)
    bad = ~np.all(np.isfinite(values) & (values >= 0), axis=1) | ~(np.abs(sums - 1) <= 1e-6)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(
            f"cross-entropy target rows must be probabilities (entries >= 0, summing to 1), "
            f"got row {i} with sum {sums[i]:g} and smallest entry {values[i].min():g}"
        )


def _check_signs(targets) -> None:
    """Refuse concrete margin-loss targets that are not ±1 (0/1 labels gave a wrong loss,
    silently: a 0 target has zero gradient); traced targets (arguments of a jitted function)
    cannot be seen and are not checked. Targets closed over by the loss, as data is, are
    concrete under `jit` too.
    **Raises:** `ValueError` naming `targets` and the values found."""
    if isinstance(targets, jax.core.Tracer):
        return
    values = np.asarray(targets)
    bad = values[(values != 1) & (values != -1)]
    if bad.size:
        found = np.unique(bad)
        shown = ", ".join(f"{v:g}" for v in found[:3]) + (", ..." if found.size > 3 else "")
        raise ValueError(
            f"targets of the logistic and exponential losses must be -1 or +1, got {shown} "
            "(0/1 labels y give ±1 targets as 2*y - 1)"
        )


def _check_reduction(reduction):
    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction must be 'sum' or 'mean', got {reduction!r}")


@dataclasses.dataclass(frozen=True)
class SquaredLoss:
    """R(y) = ½ Σ_i ‖y_i − y*_i‖² (`reduction="sum"`, the default, Chizat et al.'s R) or
    (1/2n) Σ_i ‖y_i − y*_i‖² (`reduction="mean"`, n = number of rows).

    As a function of all n·k outputs it is m-strongly convex and M-smooth with
    m = M = 1 (sum) or 1/n (mean): see `curvature`.
    """

    reduction: str = "sum"

    def __post_init__(self):
        _check_reduction(self.reduction)

    def __call__(self, pred, target):
        pred, target = _as_arrays(pred, target)
        _check_shapes(pred, target)
        sq = 0.5 * jnp.reshape((pred - target) ** 2, (pred.shape[0], -1)).sum(axis=1)
        return _reduce(sq, self.reduction)

    def curvature(self, n: int) -> tuple[float, float]:
        """(m, M): strong convexity and smoothness constants for n rows."""
        c = 1.0 if self.reduction == "sum" else 1.0 / n
        return c, c


@dataclasses.dataclass(frozen=True)
class LogisticLoss:
    """R(y) = Σ_i log(1 + exp(−y*_i y_i)) (or the mean), targets y*_i ∈ {−1, +1}.

    Computed as softplus(−margin), exact in float32 and float64 at any margin (a naive
    `sigmoid(m) − 1` is exactly 0 in float32 for m ≥ 17, freezing the flow).

    **Raises:** `ValueError` naming both shapes (see the module), or naming `targets` when
    concrete targets are not all −1 or +1 (traced targets, arguments of a jitted function,
    are not checked).
    """

    reduction: str = "sum"

    def __post_init__(self):
        _check_reduction(self.reduction)

    def __call__(self, pred, target):
        pred, target = _as_arrays(pred, target)
        _check_shapes(pred, target)
        _check_signs(target)
        return _reduce(jax.nn.softplus(-target * pred), self.reduction)


@dataclasses.dataclass(frozen=True)
class ExponentialLoss:
    """R(y) = Σ_i exp(−y*_i y_i) (or the mean), targets y*_i ∈ {−1, +1}.

    **Raises:** as `LogisticLoss`.
    """

    reduction: str = "sum"

    def __post_init__(self):
        _check_reduction(self.reduction)

    def __call__(self, pred, target):
        pred, target = _as_arrays(pred, target)
        _check_shapes(pred, target)
        _check_signs(target)
        return _reduce(jnp.exp(-target * pred), self.reduction)


@dataclasses.dataclass(frozen=True)
class CrossEntropyLoss:
    """Softmax cross-entropy R(z) = Σ_i [logsumexp(z_i) − Σ_j t_ij z_ij] (or the mean over the
    n rows), for logits z of shape `(n, k)`.

    Targets: integer labels of shape `(n,)` in [0, k) (t_i the one-hot vector of y_i), or
    rows t_i of shape `(n, k)` (one-hot, or probabilities summing to 1). By logsumexp, so
    exact at any logit scale (no overflow of exp, no log of an underflowed softmax).

    **Raises:** `ValueError` when the logits are not `(n, k)` with n >= 1 and k >= 2 (one
    logit, `(n, 1)`, gives 0 for every network: use `LogisticLoss`), or the targets' shape
    fits neither form (checked at trace time), or when concrete labels are not integers in
    [0, k) or concrete rows are not probabilities (entries >= 0 summing to 1 within 1e-6).
    """

    reduction: str = "sum"

    def __post_init__(self):
        _check_reduction(self.reduction)

    def __call__(self, pred, target):
        pred, target = _as_arrays(pred, target)
        if pred.ndim != 2:
            raise ValueError(f"cross-entropy needs logits of shape (n, k), got shape {pred.shape}")
        if pred.shape[1] < 2:  # softmax of one logit is 1: the loss was 0 for every network
            raise ValueError(
                f"cross-entropy over one logit, shape {pred.shape}, is 0 for every network "
                "(the softmax of a single logit is 1): for two classes use flows.LogisticLoss "
                "on the logit of shape (n,) with targets 2*y - 1, or give 2 logits"
            )
        if pred.shape[0] == 0:  # the mean over no rows was NaN, the sum 0.0, silently
            raise ValueError(f"logits of shape {pred.shape} are empty: give at least one row")
        lse = jax.scipy.special.logsumexp(pred, axis=1)
        if target.shape == pred.shape[:1]:
            _check_labels(target, pred.shape[1])
            picked = jnp.take_along_axis(pred, target.astype(jnp.int32)[:, None], axis=1)[:, 0]
            return _reduce(lse - picked, self.reduction)
        if target.shape != pred.shape:
            raise ValueError(
                f"cross-entropy targets must be labels (n,) or rows (n, k) = {pred.shape}, "
                f"got {target.shape}"
            )
        _check_rows(target)
        return _reduce(lse * target.sum(axis=1) - (target * pred).sum(axis=1), self.reduction)


LOSSES = {
    "squared": SquaredLoss,
    "logistic": LogisticLoss,
    "exponential": ExponentialLoss,
    "cross_entropy": CrossEntropyLoss,
}


def get_loss(loss):
    """A loss object from a name ("squared", "logistic", "exponential", "cross_entropy") or a
    loss object."""
    if isinstance(loss, str):
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {tuple(LOSSES)}, got {loss!r}")
        return LOSSES[loss]()
    if not callable(loss):
        raise ValueError(f"loss must be a name or a callable, got {loss!r}")
    return loss
