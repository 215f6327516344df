"""The benchmark problems: one model and data set shared by every case, and a tight reference.

The two-layer problem is the one the issue fixes: a bias-free two-layer tanh network
(`models.TwoLayerNet`, NTK scaling) on 64 Gaussian inputs in R^9, squared loss
½Σ(f(x_i) − y_i)² with targets y = sin(x·v), float64. Width m gives p = 10·m parameters.
"""

import dataclasses
import time

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

import flows
import models

N_POINTS = 64
IN_SIZE = 9
RTOL, ATOL = 1e-6, 1e-9  # the tolerances every case shares
REF_RTOL, REF_ATOL = 1e-12, 1e-14  # the reference solution's


@dataclasses.dataclass(frozen=True, eq=False)
class DataLoss:
    """θ ↦ R(f_θ(X), Y): hashable by identity, so that one object keeps one compilation."""

    X: jax.Array
    Y: jax.Array
    R: object

    def __call__(self, model):
        return self.R(jax.vmap(model)(self.X), self.Y)


class _NegGrad(eqx.Module):
    loss: DataLoss = eqx.field(static=True)
    static: object

    def __call__(self, t, y, args):
        g = jax.grad(lambda p: self.loss(eqx.combine(p, self.static)))(y)
        return jax.tree.map(jnp.negative, g)


@eqx.filter_jit
def _raw_solve(field, solver, y0, t1, rtol, atol, max_steps):
    sol = dfx.diffeqsolve(
        dfx.ODETerm(field),
        solver,
        0.0,
        t1,
        None,
        y0,
        saveat=dfx.SaveAt(t1=True),
        stepsize_controller=dfx.PIDController(rtol=rtol, atol=atol),
        max_steps=max_steps,
    )
    return jax.tree.map(lambda a: a[-1], sol.ys), sol.stats["num_steps"]


RAW_SOLVERS = {"tsit5": dfx.Tsit5(), "dopri5": dfx.Dopri5(), "dopri8": dfx.Dopri8()}
EVALS_PER_STEP = {"tsit5": 6, "dopri5": 6, "dopri8": 12}


class Problem:
    """A model, its data and loss, and the helpers every case uses.

    - `net`: the model at θ0; `loss(model) -> scalar`; `trainable`, `static`: its partition.
    - `theta0`: the trainable parameters as one flat vector `(p,)`; `unravel` inverts it.
    - `t1`, `rtol`, `atol`: the horizon and tolerances the cases share.
    - `cold`: wall time of the first (compiling) call of each `flow` configuration.
    """

    def __init__(self, net, X, Y, R, *, t1, name):
        self.name = name
        self.net, self.X, self.Y = net, X, Y
        self.loss = DataLoss(X, Y, R)
        self.trainable, self.static = models.partition(net)
        self.theta0, self.unravel = ravel_pytree(self.trainable)
        self.params = int(self.theta0.size)
        self.t1, self.rtol, self.atol = float(t1), RTOL, ATOL
        self.field = _NegGrad(self.loss, self.static)
        self.cold: dict = {}
        self._reference = None
        loss_flat = lambda v: self.loss(eqx.combine(self.unravel(v), self.static))  # noqa: E731
        self.loss_flat = jax.jit(loss_flat)
        self.grad_flat = jax.jit(jax.grad(loss_flat))
        self.hvp_flat = jax.jit(lambda v, u: jax.jvp(jax.grad(loss_flat), (v,), (u,))[1])

    # -- solving ---------------------------------------------------------------------------
    def flow(self, **kwargs) -> flows.Trajectory:
        """`flows.gradient_flow(self.loss, self.net, t1, **kwargs)` (t1 defaults to
        `self.t1`, tolerances to the shared ones); the first call of each configuration is
        timed into `self.cold` (it includes compilation)."""
        kwargs = {"t1": self.t1, "rtol": self.rtol, "atol": self.atol, **kwargs}
        key = _config_key(kwargs)
        start = time.perf_counter()
        traj = flows.gradient_flow(self.loss, self.net, kwargs.pop("t1"), **kwargs)
        self.cold.setdefault(key, time.perf_counter() - start)
        return traj

    def cold_seconds(self, **kwargs):
        """Wall time of the first `flow(**kwargs)` call, or None if there was none."""
        return self.cold.get(
            _config_key({"t1": self.t1, "rtol": self.rtol, "atol": self.atol, **kwargs})
        )

    def raw(self, solver="tsit5", rtol=None, atol=None, max_steps=1_000_000, t1=None):
        """A bare `diffrax.diffeqsolve` of the same flow (no gradflows layer), saving only
        θ(t1). Returns `(theta1 flat (p,), grad_evals)`, blocking. Tolerances are traced, so
        one compilation per solver serves every tolerance."""
        rtol = self.rtol if rtol is None else rtol
        atol = self.atol if atol is None else atol
        y1, steps = _raw_solve(
            self.field,
            RAW_SOLVERS[solver],
            self.trainable,
            jnp.asarray(self.t1 if t1 is None else t1),
            jnp.asarray(rtol),
            jnp.asarray(atol),
            max_steps,
        )
        flat, _ = ravel_pytree(y1)
        flat = jax.block_until_ready(flat)
        return flat, EVALS_PER_STEP[solver] * int(steps) + 3

    def final(self, traj: flows.Trajectory) -> jax.Array:
        """θ at the last save time of a trajectory, flat `(p,)`."""
        trainable, _ = models.partition(traj.at(-1))
        return ravel_pytree(trainable)[0]

    # -- accuracy ----------------------------------------------------------------------------
    def reference(self) -> jax.Array:
        """θ(t1) from Dopri8 at rtol 1e-12, atol 1e-14 (computed once)."""
        if self._reference is None:
            self._reference, _ = self.raw("dopri8", REF_RTOL, REF_ATOL)
        return self._reference

    def error(self, theta1) -> float:
        """‖θ(t1) − θ_ref(t1)‖ / ‖θ_ref(t1) − θ0‖: the error relative to the distance moved."""
        ref = self.reference()
        return float(
            jnp.linalg.norm(jnp.asarray(theta1) - ref) / jnp.linalg.norm(ref - self.theta0)
        )

    def lambda_max(self, iters: int = 30) -> float:
        """Largest Hessian eigenvalue at θ0 by power iteration on Hessian-vector products."""
        u = jax.random.normal(jax.random.PRNGKey(1), self.theta0.shape)
        lam = 0.0
        for _ in range(iters):
            u = u / jnp.linalg.norm(u)
            hu = self.hvp_flat(self.theta0, u)
            lam = float(jnp.vdot(u, hu))
            u = hu
        return lam


def _config_key(kwargs) -> str:
    return repr(sorted((k, v if np.isscalar(v) else repr(v)) for k, v in kwargs.items()))


def two_layer(params: int, *, seed: int = 0, t1: float = 100.0) -> Problem:
    """The shared problem with p = `params` parameters (rounded down to a multiple of 10)."""
    width = max(1, int(params) // (IN_SIZE + 1))
    kx, kv, kn = jax.random.split(jax.random.PRNGKey(seed), 3)
    X = jax.random.normal(kx, (N_POINTS, IN_SIZE))
    Y = jnp.sin(X @ jax.random.normal(kv, (IN_SIZE,)))
    net = models.TwoLayerNet(IN_SIZE, width, activation="tanh", key=kn)
    return Problem(net, X, Y, flows.SquaredLoss("sum"), t1=t1, name="two-layer tanh, squared")


def deep_linear_logistic(params: int, *, seed: int = 0, t1: float = 1e6) -> Problem:
    """A depth-3 linear net (10, h, h, 1), h chosen so that p ≈ `params`, Gaussian
    (unbalanced) init, logistic loss on 64 linearly separable points."""
    hidden = max(1, round((-11 + (121 + 4 * int(params)) ** 0.5) / 2))
    kx, kv, kn = jax.random.split(jax.random.PRNGKey(seed), 3)
    X = jax.random.normal(kx, (N_POINTS, 10))
    Y = jnp.sign(X @ jax.random.normal(kv, (10,)))[:, None]
    net = models.DeepLinearNet.gaussian((10, hidden, hidden, 1), scale=1.0, key=kn)
    return Problem(net, X, Y, flows.LogisticLoss("sum"), t1=t1, name="deep linear, logistic")
