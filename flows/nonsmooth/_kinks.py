"""Two-layer networks with a kinked activation, in one canonical form for the Filippov flow.

Every supported model is read as f(x) = Σ_j c_j a_j φ(b_j·x̃) + Σ_k e_k β_k + f_0(x), with
x̃ = (x, 1) when the hidden layer has biases, fixed coefficients c_j (the output scale, with
the sign of a symmetrised copy), trainable output biases β_k with signs e_k, and a fixed
offset f_0 (the frozen copy of a centred net). φ(s) = a·s + b·|s| has the one-sided slopes
σ'₋ = a − b and σ'₊ = a + b at its kink s = 0.
"""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from models import MLP, AbsFamily, Centred, Doubled, TwoLayerNet, read_frozen

_SMOOTH_HINT = "use flows.gradient_flow for smooth activations"
_SUPPORTED = (
    "a models.TwoLayerNet, a one-hidden-layer models.MLP (depth=1, with or without biases), "
    "or models.symmetrize(...) of one of them"
)


def kink_slopes(activation) -> tuple[float, float]:
    """(σ'₋, σ'₊): the slopes of a piecewise-linear activation below and above its kink at 0.

    Accepts `models.abs_family(a, b)` results (so "relu", "abs", "leaky_relu" by name) and
    the plain callables `jax.nn.relu` and `jnp.abs`. Raises `ValueError` pointing to
    `flows.gradient_flow` for anything else.
    """
    if isinstance(activation, AbsFamily):
        return activation.a - activation.b, activation.a + activation.b
    if activation is jax.nn.relu:
        return 0.0, 1.0
    if activation is jnp.abs:
        return -1.0, 1.0
    raise ValueError(
        f"filippov_flow needs a piecewise-linear activation of the family φ(s) = a·s + b·|s| "
        f"(models.abs_family(a, b), or 'relu', 'abs', 'leaky_relu' by name), got "
        f"{activation!r}; {_SMOOTH_HINT}"
    )


def _out_size(part) -> int:
    """k, the number of outputs of a `TwoLayerNet` (a of shape (k, m) when k > 1) or `MLP`."""
    if isinstance(part, TwoLayerNet):
        return 1 if part.a.ndim == 1 else int(part.a.shape[0])
    return int(part.weights[-1].shape[0])


def _part_arrays(part):
    """(a (w,), B (w, d̃), output biases (k,), coefficient of the neurons, d)."""
    if isinstance(part, (TwoLayerNet, MLP)) and _out_size(part) != 1:
        # an MLP's out_size=2 was trained on its first output only, silently; a TwoLayerNet's
        # failed in numpy's concatenate ("all the input arrays must have same number of ...")
        raise ValueError(
            f"model: filippov_flow needs a scalar-output network (out_size=1), got "
            f"out_size={_out_size(part)}"
        )
    if isinstance(part, TwoLayerNet):
        return part.a, part.b, jnp.zeros((0,)), part.scale, part.b.shape[1]
    if isinstance(part, MLP):
        if len(part.weights) != 2:
            raise ValueError(
                f"filippov_flow supports two-layer networks only (one hidden layer); got an "
                f"MLP with {len(part.weights) - 1} hidden layers: {_SUPPORTED}; use "
                "flows.gradient_flow for deeper networks"
            )
        w_in, w_out = part.weights
        if part.biases is None:
            return w_out[0], w_in, jnp.zeros((0,)), 1.0, w_in.shape[1]
        b_in, b_out = part.biases
        return w_out[0], jnp.concatenate([w_in, b_in[:, None]], 1), b_out, 1.0, w_in.shape[1]
    raise ValueError(
        f"filippov_flow supports {_SUPPORTED}; got {type(part).__name__}; use "
        "flows.gradient_flow for other architectures"
    )


def _parts(model):
    """[(getter, sign)] of the trainable two-layer nets inside `model`, and the frozen copy."""
    if isinstance(model, Doubled):
        return [(lambda m: m.plus, 1.0), (lambda m: m.minus, -1.0)], None
    if isinstance(model, Centred):
        return [(lambda m: m.model, 1.0)], model.model0
    return [(lambda m: m, 1.0)], None


@dataclasses.dataclass(frozen=True)
class TwoLayerForm:
    """The canonical form of a supported model: which arrays are a, B and β, and how to put
    them back. Built by `two_layer_form`."""

    widths: tuple  # neurons per trainable part
    n_out_biases: tuple  # output biases per part (0 or 1)
    signs: tuple
    in_size: int
    hidden_bias: bool
    slopes: tuple  # (σ'₋, σ'₊)
    coef: np.ndarray  # (m,)
    bias_coef: np.ndarray  # (k,)

    def pack(self, model):
        """(a (m,), B (m, d̃), β (k,)) as float64 numpy arrays."""
        a, B, c = [], [], []
        for getter, _ in _parts(model)[0]:
            pa, pB, pc, _, _ = _part_arrays(getter(model))
            a.append(pa), B.append(pB), c.append(pc)
        cat = lambda xs: np.concatenate([np.asarray(x, np.float64) for x in xs], 0)  # noqa: E731
        return cat(a), cat(B), cat(c)

    def unpack(self, model, a, B, c):
        """`model` with its trainable arrays replaced by a (..., m), B (..., m, d̃), β (..., k);
        leading axes (e.g. save times) are kept on every trainable leaf."""
        start, k0 = 0, 0
        for (getter, _), w, k in zip(_parts(model)[0], self.widths, self.n_out_biases):
            part = getter(model)
            pa, pB = a[..., start : start + w], B[..., start : start + w, :]
            pc = c[..., k0 : k0 + k]
            start, k0 = start + w, k0 + k
            if isinstance(part, TwoLayerNet):
                new = eqx.tree_at(lambda n: (n.a, n.b), part, (pa, pB))
            else:
                d = self.in_size
                new = eqx.tree_at(lambda n: n.weights, part, (pB[..., :d], pa[..., None, :]))
                if part.biases is not None:
                    new = eqx.tree_at(lambda n: n.biases, new, (pB[..., d], pc))
            model = eqx.tree_at(getter, model, new)
        return model

    def offset(self, model, X) -> np.ndarray:
        """The fixed part of the output on inputs X (n, d): −f(w0, x_i) for a centred net."""
        frozen = _parts(model)[1]
        if frozen is None:
            return np.zeros(X.shape[0])
        return -np.asarray(jax.vmap(read_frozen(frozen))(jnp.asarray(X)), np.float64)

    def inputs(self, X) -> np.ndarray:
        """x̃_i: X (n, d) with a column of ones appended when the hidden layer has biases."""
        X = np.asarray(X, np.float64)
        return np.concatenate([X, np.ones((len(X), 1))], 1) if self.hidden_bias else X


def two_layer_form(model) -> TwoLayerForm:
    """Read `model` in the canonical form; `ValueError` naming what is supported otherwise."""
    getters, _ = _parts(model)
    widths, n_bias, signs, coef, bias_coef, acts, ins, hidden = [], [], [], [], [], [], [], []
    for getter, sign in getters:
        part = getter(model)
        pa, pB, pc, scale, d = _part_arrays(part)
        widths.append(int(pa.shape[0])), n_bias.append(int(pc.shape[0])), signs.append(sign)
        coef += [sign * scale] * int(pa.shape[0])
        bias_coef += [sign] * int(pc.shape[0])
        acts.append(part.activation), ins.append(d), hidden.append(pB.shape[1] > d)
    if len(set(ins)) != 1 or len(set(hidden)) != 1 or len(set(acts)) != 1:
        raise ValueError(f"the copies inside model differ in shape or activation: {_SUPPORTED}")
    return TwoLayerForm(
        tuple(widths),
        tuple(n_bias),
        tuple(signs),
        ins[0],
        hidden[0],
        tuple(float(s) for s in kink_slopes(acts[0])),
        np.asarray(coef, np.float64),
        np.asarray(bias_coef, np.float64),
    )
