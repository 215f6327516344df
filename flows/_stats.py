"""What a solve did: one counter shape for the flow and for gradient descent."""

import dataclasses


@dataclasses.dataclass
class SolveStats:
    """Counters of one solve; `Trajectory.stats` and `LazyComparison.stats` hold it as a plain
    dict (`dataclasses.asdict`), with the same keys for `gradient_flow`, `lazy_comparison`
    and `gradient_descent`.

    - `num_steps`, `num_accepted_steps`, `num_rejected_steps`: solver steps (gradient
      descent: its iterations, all accepted).
    - `grad_evals`: vector-field evaluations (gradients, for a gradient flow). Exact for
      implicit solvers and for gradient descent; for explicit solvers computed as (new stages
      per step) × steps + 2 per initial step selection, within 1% of an exact count (Tsit5: 6
      new stages per step, first-same-as-last).
    - `jvp_evals`: Jacobian-vector products (Hessian-vector products) of Newton–GMRES, of
      exprb32's Krylov spaces and of the stiffness tests of `solver="auto"`, each costing
      about 2 gradients; 0 for explicit solvers and gradient descent.
    - `chunks`: diffrax calls completed (gradient descent: save times recorded).
    - `solvers`: the solvers used, in order ("gradient_descent" for gradient descent).
    - `switched_to_stiff_at`: flow time where `solver="auto"` first went to its stiff solver
      (exprb32), or None.
    - `switches`: every switch of `solver="auto"`, in order, as `{"t": flow time, "to":
      solver, "h_lambda": h·λ̂ of the deciding test, "cost_ratio": the seconds of a stiff
      step over those of an explicit step, measured along the solve}` (h the proposed step, λ̂
      the Hessian's λ_max by Lanczos); empty for a fixed solver.
    - `probes`: the trial steps of the stiff solver `solver="auto"` took before switching,
      as `{"t", "h": trial step, "error": its error ratio (≤ 1: it would be accepted)}`;
      a switch follows one that is accepted or whose accepted length still pays (the rule:
      docs/solvers.md). Their evaluations are counted above.
    - `stiffness_tests`: the stiffness tests `solver="auto"` made (8 Hessian-vector products
      each, counted in `jvp_evals`; skipped tests are not counted); 0 for a fixed solver.
    - `stiffness`: λ̂·t1 from the first stiffness test `solver="auto"` made (λ̂ the Hessian's
      λ_max by Lanczos at that test's time), for the record; None where no test was made
      (Tsit5's own estimate said every segment was calm) and for a fixed solver.
    - `result`: "successful".
    - `newton_residual`: the largest relative residual of the stage equations over the
      accepted steps of a Gauss–Legendre solver (None for other solvers).
    """

    num_steps: int = 0
    num_accepted_steps: int = 0
    num_rejected_steps: int = 0
    grad_evals: int = 0
    jvp_evals: int = 0
    chunks: int = 0
    solvers: list = dataclasses.field(default_factory=list)
    switched_to_stiff_at: float | None = None
    switches: list = dataclasses.field(default_factory=list)
    probes: list = dataclasses.field(default_factory=list)
    stiffness_tests: int = 0
    stiffness: float | None = None
    result: str = "successful"
    newton_residual: float | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
