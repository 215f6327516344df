"""Bad input to the transport functions that failed deep inside: one line naming it."""

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

from flows.transport import particle_flow, sinkhorn

A = jnp.ones(3) / 3
COST = jnp.arange(9.0).reshape(3, 3) / 9


@pytest.mark.parametrize("eps", [jnp.array([0.1, 0.2]), [0.1]])
def test_an_array_of_several_eps_is_refused_naming_eps(eps):
    # was "Incompatible shapes for broadcasting: shapes=[(3, 3), (2,)]"
    with pytest.raises(ValueError, match=r"^eps must be one number, got an array of shape"):
        sinkhorn(A, A, COST, eps)
    with pytest.raises(ValueError, match=r"^eps must be one number"):
        particle_flow(jnp.zeros((2, 1)), jnp.ones((3, 1)), 1.0, eps=eps)


B = jnp.ones(4) / 4
COST34 = jnp.arange(12.0).reshape(3, 4) / 12


@pytest.mark.parametrize(
    "kwargs, says",
    [
        # was "could not convert string to float: 'x'"
        ({"tol": "x"}, r"^tol must be a number, got 'x'"),
        ({"tol": float("nan")}, r"^tol must be finite"),
        ({"tol": 0.0}, r"^tol must be finite and > 0"),
        ({"max_iters": "10"}, r"^max_iters must be a positive integer, got '10'"),
        ({"max_iters": 0}, r"^max_iters must be a positive integer"),
    ],
)
def test_bad_tol_and_max_iters_are_refused_naming_them(kwargs, says):
    with pytest.raises(ValueError, match=says):
        sinkhorn(A, B, COST34, 0.1, **kwargs)
    with pytest.raises(ValueError, match=says):
        particle_flow(jnp.zeros((2, 1)), jnp.ones((3, 1)), 1.0, eps=0.1, **kwargs)


@pytest.mark.parametrize(
    "init, says",
    [
        # was "too many values to unpack (expected 2)"
        (jnp.zeros(4), r"^init must be a pair \(u, v\) .* shapes \(3,\) and \(4,\), got Array"),
        ((jnp.zeros(3),), r"^init must be a pair \(u, v\)"),
        ((jnp.zeros(4), jnp.zeros(3)), r"^init must be a pair .* got shapes \(4,\) and \(3,\)"),
        # was max_iters iterations, then "marginal error nan"
        ((jnp.full(3, jnp.nan), jnp.zeros(4)), r"^init: the potential u holds NaN or inf"),
        ((jnp.zeros(3), jnp.full(4, jnp.inf)), r"^init: the potential v holds NaN or inf"),
    ],
)
def test_init_must_be_a_pair_of_finite_potentials(init, says):
    with pytest.raises(ValueError, match=says):
        sinkhorn(A, B, COST34, 0.1, init=init)


@pytest.mark.parametrize(
    "schedule, says",
    [
        (1.0, r"^eps_schedule must be a sequence .* got float 1.0"),  # was "not iterable"
        (jnp.ones((2, 2)), r"^eps_schedule must be a sequence"),
        ([0.01, 1.0], r"^eps_schedule must decrease .* eps_schedule\[0\]=0.01 is not above eps_"),
        ([0.01], r"^eps_schedule must decrease .* eps_schedule\[0\]=0.01 is not above eps=0.1"),
        ([1.0, 0.1], r"^eps_schedule must decrease .* eps_schedule\[1\]=0.1 is not above eps=0.1"),
        ([1.0, -1.0], r"^eps_schedule: eps must be finite and > 0"),
    ],
)
def test_eps_schedule_must_decrease_to_above_eps(schedule, says):
    with pytest.raises(ValueError, match=says):
        sinkhorn(A, B, COST34, 0.1, eps_schedule=schedule)


@pytest.mark.parametrize("eps", [5e-324, 1e-100, 9e-16])
def test_eps_below_the_float64_resolution_of_the_cost_is_refused(eps):
    # 5e-324 ran max_iters iterations on NaN, then "marginal error nan"; 1e-100 (cost/ε finite)
    # ran to max_iters; max|c|/ε > 1e15 leaves (u + v − c)/ε uncertain by more than 0.2
    says = rf"^eps={eps:g} is too small for a cost with entries in \[0, 0.916667\]"
    with pytest.raises(ValueError, match=says + r".* smallest usable eps is .* = 9.17e-16$"):
        sinkhorn(A, B, COST34, eps, "chi2")
    # a zero cost puts no bound on ε
    assert float(sinkhorn(A, B, jnp.zeros((3, 4)), 1e-300).marginal_error.sum()) <= 1e-12


def test_particle_flow_refuses_eps_below_the_resolution_of_the_start_cost():
    # it ran the first solve, then "marginal error nan > tol" (eps=1e-18), "inf" (x0 1e9 away)
    x0, y = jnp.array([[0.0, 0.0], [1.0, 0.0]]), jnp.array([[2.0, 2.0]])
    says = (
        r"^eps=1e-18 is too small for the start's cost ½\|x0_i − y_j\|² with entries in \[2.5, 4\]"
    )
    with pytest.raises(ValueError, match=says):
        particle_flow(x0, y, 1.0, eps=1e-18)


@pytest.mark.parametrize(
    "solve, says",
    [
        # ε = −1 under vmap (or jit) returned a plan whose gap and marginal errors were 1e-16
        (lambda e: sinkhorn(A, B, COST34, e), r"eps must be finite and > 0 \(checked at run time"),
        # a NaN cost and weights summing to 2 ran all max_iters iterations, then "did not
        # converge"
        (lambda e: sinkhorn(A, B, COST34 * (e / e - jnp.nan), 0.1), r"cost: non-finite entries"),
        (lambda e: sinkhorn(A * (e + 0.5) * 2, B, COST34, 0.1), r"a: weights must be finite, >= 0"),
    ],
)
def test_traced_arguments_are_checked_when_the_solve_runs(solve, says):
    with pytest.raises(eqx.EquinoxRuntimeError, match=says):
        jax.vmap(solve)(jnp.array([0.5, -1.0]))


def test_a_warm_start_shifted_by_a_constant_gives_the_cold_plan():
    # (u + c, v − c) is the same plan; from c = 1e10, KL lost 1e-6 of u + v − c to the shift
    # and stopped at max_iters with an L1 error of 3.2e-6
    cold = sinkhorn(A, B, COST34, 0.1)
    warm = sinkhorn(A, B, COST34, 0.1, init=(jnp.full(3, 1e10), jnp.zeros(4)), max_iters=200)
    assert float(jnp.max(jnp.abs(warm.plan - cold.plan))) <= 1e-12


def test_empty_bins_in_both_marginals_give_a_finite_plan():
    # a zero weight's potential is free: past f′(∞) its (f*)′ is inf, and 0 · inf made NaN
    # plan entries, primal and gap in a result returned as converged (reverse KL, JS,
    # Hellinger, Neyman, triangular)
    a, b = jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0])
    result = sinkhorn(a, b, jnp.array([[0.0, 1.0], [1.0, 0.0]]), 0.1, "reverse_kl")
    assert result.plan.tolist() == [[0.0, 1.0], [0.0, 0.0]]  # [[nan, 1], [0, 0]] before
    assert float(result.primal) == 1.0 and float(result.gap) == 0.0
