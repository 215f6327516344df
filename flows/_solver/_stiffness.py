"""Stiffness decisions of `solver="auto"`, made along the path, both ways, by cost.

The rule is described once, in "How to choose a solver" (docs/solvers.md, "The auto rule"),
with the options of `flows.Auto`; here it is implemented. Its parts, by name:
`StiffnessMonitor.decide` runs after every solve segment (`first` steps after a switch,
doubling up to `longest`, `flows.Auto.stiff_steps`) and compares h·λ̂ with the stability
boundary b (`STABILITY_BOUNDARY`), λ̂ from warm-started Lanczos (Arnoldi for a field whose
Jacobian is not symmetric): positive at h·λ̂ ≥ `margin`·b in the explicit phase (`to_stiff`
in a row, `flows.Auto.stiff_tests`, ask for a trial step of the stiff solver, `_trial`: it
switches when that step, or the shorter one its error estimate would accept, pays); negative
in the stiff phase when h·λ̂ < b·max(`back`, c_s/(2·c_e)), c_s/c_e the measured cost ratio
(`cost_ratio`; `to_explicit` in a row, `flows.Auto.explicit_tests`, switch back). An
explicit-phase test is skipped (`_skip`) where Tsit5's own estimate h·ρ
(`_indicator.IndicatedTsit5`) is below `margin`·b/`far` (`calm`), else where h·λ̂,
predicted from the last λ̂, is, or where the explicit solver ends the solve in fewer than
4·c_s/c_e steps.

Reference: Hairer & Wanner, Solving Ordinary Differential Equations II, §IV.2 (the stiffness
test of DOPRI5: h·λ̂ against the stability boundary, repeated along the path); Petzold 1983,
"Automatic selection of methods for solving stiff and nonstiff systems of ordinary
differential equations", SIAM J. Sci. Stat. Comput. 4 (LSODA, switching both ways by the
cost of the steps each method would take); Rackauckas & Nie 2017, J. Open Res. Softw. 5
(DifferentialEquations.jl, AutoSwitch).
"""

import dataclasses
import functools

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ._solvers import EVALS_PER_STEP
from ._structure import ByStructure

#: Stability boundaries on the negative real axis, |R(−b)| = 1 (Hairer & Wanner II, §IV.2).
STABILITY_BOUNDARY = {"tsit5": 3.5, "dopri5": 3.3, "dopri8": 6.0}
#: The explicit and the stiff solver between which `solver="auto"` switches.
#: "exprb32" rather than "kvaerno5": its steps cost fewer Hessian-vector products, and it is
#: exact on the linear part (docs/performance.md, "The numbers behind the code's
#: defaults").
AUTO_EXPLICIT, AUTO_STIFF = "tsit5", "exprb32"
#: The cost of one Hessian-vector product (forward over reverse) in gradients.
HVP_COST = 2.0
#: c_s/c_e assumed before a stiff step is timed: exprb32's step over Tsit5's, in seconds
#: (docs/performance.md, "The numbers behind the code's defaults").
PRIOR_COST_RATIO = 16.0


@eqx.filter_jit
def probe_error(solver, field, t, y, h, rtol, atol):
    """The error ratio of one step of `solver` of length `h` from (t, y): the rms over the
    entries of y_error/(atol + rtol·max(|y|, |y_new|)), as diffrax's PID controller measures
    it; ≤ 1 means the step would be accepted."""
    term = dfx.ODETerm(field)
    y1, y_error, _, _, _ = solver.step(term, t, t + h, y, None, None, False)
    flat0, flat1, err = (ravel_pytree(x)[0] for x in (y, y1, y_error))
    scale = atol + rtol * jnp.maximum(jnp.abs(flat0), jnp.abs(flat1))
    return jnp.sqrt(jnp.mean((err / scale) ** 2))


def _product(field, t, y, v):
    flat, unravel = ravel_pytree(y)
    return -jax.jvp(lambda x: ravel_pytree(field(t, unravel(x), None))[0], (flat,), (v,))[1]


class _Static:
    """The part of `(field, y)` that is not arrays, hashed and compared by its structure and
    leaves (as `eqx.filter_jit` keys its cache), so that `_hvp` runs through `jax.jit`'s own
    dispatch: eight calls a test, each about half as costly on the host as through
    `eqx.filter_jit`."""

    def __init__(self, tree):
        self.tree = tree
        leaves, treedef = jax.tree.flatten(tree)
        self.key = (treedef, tuple(leaves))
        self.hash = hash(self.key)  # TypeError for a leaf that cannot be hashed

    def __hash__(self):
        return self.hash

    def __eq__(self, other):
        return isinstance(other, _Static) and self.key == other.key


@functools.partial(jax.jit, static_argnums=0)
def _hvp(static, arrays, t, v):
    """−∂field/∂y · v at (t, y), flat `(p,)`, `(field, y)` split into `arrays` and `static`
    (a `_Static`): for a gradient flow one Hessian-vector product, forward over reverse. The
    stiffness tests' only program: the Krylov recurrence and the small eigenproblem run on the
    host (a program with the recurrence's loop took 4× as long to compile,
    docs/performance.md, "First call (12)")."""
    field, y = eqx.combine(arrays, static.tree)
    return _product(field, t, y, v)


_hvp_filtered = eqx.filter_jit(_product)  # for a field with a leaf that cannot be hashed


#: The (field, y) structures whose `_hvp` program this process compiled (`compiled`).
_COMPILED = ByStructure()


def _matvec(field, t, y):
    """v ↦ −∂field/∂y · v at (t, y), on the host."""
    t = jnp.asarray(t)
    arrays, static = eqx.partition((field, y), eqx.is_array)
    try:
        static = _Static(static)
    except TypeError:
        return lambda v: _hvp_filtered(field, t, y, v)
    return lambda v: _hvp(static, arrays, t, v)


def _top(H: np.ndarray, symmetric: bool) -> float:
    """The largest eigenvalue of the symmetric projection `H` (`symmetric`), else the largest
    modulus of its eigenvalues."""
    if symmetric:
        return float(np.linalg.eigvalsh((H + H.T) / 2)[-1])
    return float(np.max(np.abs(np.linalg.eigvals(H))))


def krylov(matvec, start: np.ndarray, iters: int, symmetric: bool, settle: float = 0.0):
    """`(H, V)`: the projection `(m, m)` of the operator `matvec` on the Krylov space of
    `start`, and its orthonormal basis `(m, p)`, m ≤ `iters` vectors (fewer when the space
    turns invariant: happy breakdown), by Lanczos (`symmetric`: each new vector orthogonalised
    against the two latest) or Arnoldi (against all), Gram–Schmidt twice, on the host
    (Saad 1992; the recurrence of `_krylov.krylov_phi`, without its error estimate).

    `settle` > 0 also stops once the projection's top eigenvalue (largest modulus for
    Arnoldi) changes by at most `settle` times itself from one vector to the next (the
    extreme Ritz values converge first, Saad 1992, §6.6)."""
    m = min(iters, start.size)
    V = np.zeros((m + 1, start.size))
    H = np.zeros((m + 1, m))
    V[0] = start / np.linalg.norm(start)
    top = None
    for j in range(m):
        w = np.asarray(matvec(V[j]), dtype=V.dtype)
        scale = np.linalg.norm(w)
        near = slice(max(j - 1, 0) if symmetric else 0, j + 1)
        for _ in range(2):
            c = V[near] @ w
            w = w - c @ V[near]
            H[near, j] += c
        H[j + 1, j] = beta = np.linalg.norm(w)
        if beta <= 1e-12 * scale:  # the space is invariant, the projection exact
            return H[: j + 1, : j + 1], V[: j + 1]
        if settle > 0:
            last, top = top, _top(H[: j + 1, : j + 1], symmetric)
            if last is not None and abs(top - last) <= settle * abs(top):
                return H[: j + 1, : j + 1], V[: j + 1]
        V[j + 1] = w / beta
    return H[:m, :m], V[:m]


def lambda_max(field, t, y, previous, rng, iters: int, symmetric: bool = True, settle=0.0):
    """`(λ̂, ritz, m)`: the largest eigenvalue of −∂field/∂y at (t, y), from at most `iters`
    Lanczos steps (fewer once λ̂ changes by at most `settle` times itself from one step to the
    next, `krylov`), its Ritz vector `(p,)` (the next call's `previous`), and m, the
    Hessian-vector products it took; `y` may be a pytree, `p` its
    number of entries. The start is `previous` `(p,)` plus a little of a random vector drawn
    from `rng` (a `numpy.random.Generator`; a start inside an invariant subspace would never
    see a direction that turns stiff outside it), or the random vector alone when `previous`
    is None. For a gradient flow λ̂ ≤ λ_max(∇²F), with equality once the Krylov space holds
    the top eigenvector.

    With `symmetric=False` (a field whose Jacobian is not symmetric, such as the lazy pair's,
    which is block lower-triangular) the space is built by Arnoldi and λ̂ is the largest
    modulus of its Ritz values (an explicit method's step is stable while h·|λ| stays inside
    its stability region; on the negative real axis, below its boundary), the Ritz vector
    the real part of that value's. Lanczos would assume the symmetry that is not there."""
    p = sum(int(np.size(leaf)) for leaf in jax.tree.leaves(y))
    fresh = rng.standard_normal(p)
    start = (0.0 if previous is None else previous) + 0.1 * fresh / np.linalg.norm(fresh)
    H, V = krylov(_matvec(field, t, y), start, iters, symmetric, settle)
    if symmetric:
        vals, vecs = np.linalg.eigh((H + H.T) / 2)
        top = int(np.argmax(vals))
        lam, ritz = float(vals[top]), vecs[:, top] @ V
    else:
        vals, vecs = np.linalg.eig(H)
        top = int(np.argmax(np.abs(vals)))
        lam, ritz = float(np.abs(vals[top])), np.real(vecs[:, top]) @ V
    return lam, ritz / max(float(np.linalg.norm(ritz)), 1e-300), len(V)


@dataclasses.dataclass
class StiffnessMonitor:
    """Host-side state of the decisions of one solve. `decide` returns the solver for the
    next segment, appending `{"t", "to", "h_lambda", "cost_ratio"}` to `switches` when it
    changes; `steps` is the length (solver steps) of the next segment, `dt0` the stiff
    solver's first step after a switch to it (None: the solver's own choice); `record` adds a
    segment's measured time and work."""

    explicit: str = AUTO_EXPLICIT
    stiff: str = AUTO_STIFF
    to_stiff: int = 2
    to_explicit: int = 2
    margin: float = 0.8
    back: float = 0.5
    hvp_cost: float = HVP_COST
    iters: int = 8  # at most this many Hessian-vector products a test
    settle: float = 0.01  # fewer once λ̂ changes by at most this fraction (`krylov`)
    hvps: int = 0  # Hessian-vector products of the tests so far
    symmetric: bool = True  # the field's Jacobian (Lanczos); False: Arnoldi, see lambda_max
    first: int = 10
    longest: int = 50
    steps: int = 10
    streak: int = 0
    tests: int = 0
    stiff_work: float = 0.0  # gradients + hvp_cost·HVPs in the stiff segments so far
    stiff_taken: int = 0  # stiff steps so far
    trial_work: float = 0.0  # gradients + hvp_cost·HVPs of the trial stiff steps so far
    trials: int = 0  # trial stiff steps whose work was counted
    seconds: dict = dataclasses.field(default_factory=dict)  # solver: [s per step], segments
    start: np.ndarray | None = None
    far: float = 4.0  # an explicit-phase test predicted below margin·b/far is skipped
    horizon: float = np.inf  # the end of the solve: no trial where the rest cannot repay it
    last: float | None = None  # λ̂ of the last test made
    skipped: int = 0  # tests skipped so far (predicted negative, no Lanczos)
    just_skipped: bool = False
    dt0: float | None = None  # the stiff solver's first step after a switch to it
    paid: float | None = None  # the last failed trial's accepted step over c_s/c_e·h
    switches: list = dataclasses.field(default_factory=list)
    probes: list = dataclasses.field(default_factory=list)  # trial stiff steps {t, h, error}
    history: list = dataclasses.field(default_factory=list)  # (t, phase, h·λ̂) of every test

    def __post_init__(self):
        self.steps = min(self.first, self.longest)

    def lam(self, field, t: float, y) -> float:
        """λ̂ at (t, y), warm-starting Lanczos from the last Ritz vector."""
        rng = np.random.default_rng(self.tests)  # a deterministic start, no program
        lam, self.start, m = lambda_max(
            field, t, y, self.start, rng, self.iters, self.symmetric, self.settle
        )
        self.tests += 1
        self.hvps += m
        self.last = float(lam)
        return self.last

    def compiled(self, field, y) -> bool:
        """Whether `compile` already ran for this (field, y) structure in this process."""
        return _COMPILED.get((field, y)) is not None

    def compile(self, field, t: float, y) -> None:
        """One Hessian-vector product at (t, y), its value discarded and not counted: it
        compiles the tests' only program (`_hvp`) before the first test needs it, so that a
        caller can overlap that with compiling the solve (on a second thread)."""
        p = sum(int(np.size(leaf)) for leaf in jax.tree.leaves(y))
        jax.block_until_ready(_matvec(field, t, y)(np.zeros(p)))
        _COMPILED.put((field, y), True)

    def record(self, phase: str, seconds: float, steps: int, grads: int, hvps: int) -> None:
        """Add a segment of `steps` steps of `phase` that took `seconds` (`grads` gradients
        and `hvps` Hessian-vector products, counted for the stiff solver only)."""
        if steps <= 0:
            return
        self.seconds.setdefault(phase, []).append(seconds / steps)
        if phase == self.stiff:
            self.stiff_work += grads + self.hvp_cost * hvps
            self.stiff_taken += steps

    def cost_ratio(self) -> float:
        """c_s/c_e: the cost of a stiff step over that of an explicit step, from measured
        seconds per step (median over segments, the first of each solver left out), or from
        counts while a solver has no measured segment but its first."""
        timed = {k: v[1:] for k, v in self.seconds.items()}
        if timed.get(self.stiff) and timed.get(self.explicit):
            return float(np.median(timed[self.stiff]) / np.median(timed[self.explicit]))
        if self.stiff_taken:
            return self.stiff_work / self.stiff_taken / EVALS_PER_STEP[self.explicit]
        if self.trials:
            return self.trial_work / self.trials / EVALS_PER_STEP[self.explicit]
        return PRIOR_COST_RATIO

    def decide(self, phase: str, field, t: float, y, h: float, probe=None, rho=None) -> str:
        """The solver of the next segment, after a test at (t, y) with the step `h` last
        proposed; `probe(h)` is the error ratio of a trial stiff step of length h from there;
        `rho` the explicit solver's own stiffness estimate at its last step (1/time,
        `_indicator.IndicatedTsit5`; None: not known)."""
        b = STABILITY_BOUNDARY[self.explicit]
        stiff_now = phase == self.stiff
        self.steps = min(self.longest, 2 * self.steps)  # each test doubles the next segment
        ratio = self.cost_ratio()
        # No switch can pay where Tsit5 ends the solve in fewer steps than 4·c_s/c_e (a trial
        # step and exprb32's first steps): the test is skipped there too.
        near_end = (self.horizon - float(t)) / float(h) < 4 * ratio
        if not stiff_now and (near_end or self._skip(float(h), b, rho)):
            self.streak, self.skipped = 0, self.skipped + 1
            return phase
        hl = float(h) * self.lam(field, t, y)
        self.history.append((float(t), phase, hl, None if rho is None else float(h) * rho))
        if stiff_now:
            # c_e·max(1, h·λ̂/b) against c_s/2: the explicit steps cost less, a negative test.
            threshold = max(self.back, ratio / 2) * b
            positive = hl >= threshold
        else:
            positive = hl >= self.margin * b
        # A test that argues for the other solver extends the streak; any other resets it.
        self.streak = self.streak + 1 if positive != stiff_now else 0
        if self.streak < (self.to_explicit if stiff_now else self.to_stiff):
            return phase
        self.dt0 = None
        if not stiff_now and probe is not None:
            self.dt0 = self._trial(probe, float(t), float(h), ratio)
            if self.dt0 is None:
                return phase
        self.streak, self.steps, self.paid = 0, self.first, None
        new = self.explicit if stiff_now else self.stiff
        if stiff_now:
            self.to_stiff *= 2  # the stiff solver did not pay here: ask more next time
        self.switches.append({"t": float(t), "to": new, "h_lambda": hl, "cost_ratio": ratio})
        return new

    def calm(self, h: float, rho: float) -> bool:
        """Whether the explicit solver's step `h` is far from held by stability by its own
        estimate ρ (`_indicator.IndicatedTsit5`): h·ρ < margin·b/`far`."""
        return h * rho < self.margin * STABILITY_BOUNDARY[self.explicit] / self.far

    def _skip(self, h: float, b: float, rho: float | None) -> bool:
        """Whether to skip an explicit-phase test: h·ρ, the explicit solver's own estimate
        (Hairer & Wanner II, §IV.2), is below margin·b/`far` (`calm`): its step is not held
        by stability (where it is, h·ρ measured 2.7–4.5 against h·λ̂ 3.2–4.5 on the
        generated family of benchmark case 16, and 0.18–0.47 on its flows that never turn
        stiff). The caller passes ρ only after a segment without a rejected step: on
        y' = −diag(1, 10⁴)·y Tsit5 is held at h·λ_max ≈ 3.3 with h·ρ ≈ 0.1, and rejects
        a fifth of its steps. Without ρ: h·λ̂
        predicted from the last λ̂ is below margin·b/`far` (λ̂ would have to have grown
        `far`-fold since for the test to be positive), and the previous test was made (never
        two such skips in a row)."""
        if rho is not None:
            return self.calm(h, rho)
        skip = self.last is not None and not self.just_skipped
        self.just_skipped = skip and h * (self.last or 0.0) < self.margin * b / self.far
        return self.just_skipped

    def _trial(self, probe, t: float, h: float, ratio: float) -> float | None:
        """The first step of the stiff solver if a trial step says it pays here, else None.

        The trial is one step of 2·ratio·h (ratio = c_s/c_e, h the explicit solver's stable
        step). If its error ratio e > 1, the step the error test would accept is
        0.9·(2·ratio·h)·e^(−1/3) (exprb32's error estimate is of order 3 in h): if that is
        still ≥ ratio·h, the stiff solver pays from there, starting with it, and its
        controller grows the step as the flow slows. Otherwise the explicit solver goes on;
        the positive tests the next trial needs double only if that accepted step grew by
        less than a quarter since the last failed trial (a flow that is still moving lets the
        stiff solver's step grow, and the next trial should come at the usual pace)."""
        h_trial = 2 * ratio * h
        error, grads, hvps = probe(h_trial)
        error = float(error)
        self.probes.append({"t": t, "h": h_trial, "error": error})
        if grads is not None:
            self.trial_work += grads + self.hvp_cost * hvps
            self.trials += 1
        if error <= 1.0:
            return h_trial
        ratio = self.cost_ratio()  # the trial's own work, before a stiff segment is measured
        accepted = 0.9 * h_trial * error ** (-1 / 3) if np.isfinite(error) else 0.0
        if accepted >= ratio * h:
            return accepted
        paid = accepted / (ratio * h)
        if self.paid is not None and not paid > 1.25 * self.paid:
            self.to_stiff *= 2  # not paying and not getting closer: ask more next time
        self.streak, self.paid = 0, paid
        return None
