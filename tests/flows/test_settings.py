"""SolveSettings: one object, validated once, one set of defaults; the keyword overrides of
the entry points mean the same as the object; the lazy rules live in flows."""

import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flows
import models


def quadratic(p):
    return 0.5 * jnp.sum(jnp.array([1.0, 3.0]) * p**2)


@pytest.mark.parametrize(
    "changes, field",
    [
        (dict(solver="euler"), "solver"),
        (dict(rtol=float("nan")), "rtol"),
        (dict(rtol=0.0), "rtol"),
        (dict(rtol=1e-15), "rtol"),
        (dict(rtol=1.0), "rtol"),
        (dict(rtol="small"), "rtol"),
        (dict(atol=-1.0), "atol"),
        (dict(atol=float("inf")), "atol"),
        (dict(max_steps=0), "max_steps"),
        (dict(max_steps=2.5), "max_steps"),
        (dict(max_steps=True), "max_steps"),
        (dict(chunks=0), "chunks"),
        (dict(solver=flows.Kvaerno5), "solver"),  # the class, not an instance
    ],
)
def test_constructor_and_replace_refuse_a_bad_field_by_name(changes, field):
    with pytest.raises(ValueError, match=field):
        flows.SolveSettings(**changes)
    with pytest.raises(ValueError, match=field):
        flows.SolveSettings().replace(**changes)


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: flows.Auto(stiff_steps=0), "stiff_steps"),
        (lambda: flows.Auto(stiff_steps=4), "stiff_steps must be >= 5"),
        (lambda: flows.Auto(stiff_tests=0), "stiff_tests"),
        (lambda: flows.Auto(explicit_tests=1.5), "explicit_tests"),
        (lambda: flows.Kvaerno5(gmres_max_iters=0), "gmres_max_iters"),
        (lambda: flows.Kvaerno5(dense_max=-1), "dense_max"),
        (lambda: flows.Kvaerno5(dense_max="4"), "dense_max"),
    ],
)
def test_the_solver_options_refuse_a_bad_field_by_name(make, field):
    with pytest.raises(ValueError, match=field):
        make()


@pytest.mark.parametrize(
    "name, where", [("stiff_steps", "flows.Auto"), ("dense_max", "flows.Kvaerno5")]
)
def test_a_moved_field_is_refused_naming_the_solver_it_belongs_to(name, where):
    # The auto-switch and Kvaerno5 fields are options of their solver, not settings.
    for call in (
        lambda: flows.SolveSettings(**{name: 3}),
        lambda: flows.SolveSettings().replace(**{name: 3}),
        lambda: flows.gradient_flow(quadratic, jnp.ones(2), 1.0, **{name: 3}),
    ):
        with pytest.raises(TypeError, match=rf"{name} is an option of solver .*{where}\({name}="):
            call()


def test_solver_options_travel_in_the_settings_and_round_trip_through_the_dict():
    auto = flows.SolveSettings(solver=flows.Auto(stiff_steps=7), rtol=1e-8)
    assert auto.name == "auto" and auto.auto.stiff_steps == 7
    assert auto.kvaerno5 == flows.Kvaerno5()  # not its solver: the defaults
    d = auto.to_dict()
    assert d["solver"] == "auto"
    assert d["solver_options"] == {"stiff_steps": 7, "stiff_tests": 2, "explicit_tests": 2}
    assert json.loads(json.dumps(d)) == d
    assert flows.SolveSettings.from_dict(d) == auto
    assert auto.replace(rtol=1e-9).auto.stiff_steps == 7  # kept by replace
    # The defaults are the name: one spelling, equal settings and records.
    assert flows.SolveSettings(solver=flows.Kvaerno5()) == flows.SolveSettings(solver="kvaerno5")
    assert flows.SolveSettings(solver="tsit5").to_dict()["solver_options"] == {}
    with pytest.raises(TypeError, match="tsit5"):
        flows.SolveSettings.from_dict({"solver": "tsit5", "solver_options": {"dense_max": 1}})


def test_the_auto_options_reach_the_solve():
    # A stiff quadratic (λ 1 and 1e4). Measured to t = 1: "auto" with its defaults switches
    # to exprb32 at t ≈ 0.034 (343 steps, 6 tests; not run here: compiling exprb32 takes
    # ~15 s); stiff_tests=1e9 never switches (3,841 Tsit5 steps, 18 tests). To t = 0.05,
    # stiff_steps=5 decides every 5 steps (31 tests in 426 steps, 3 with the default
    # stiff_steps; 52 before Tsit5's own estimate h·ρ skipped the tests after segments
    # without a rejected step; none in the last ~64, where Tsit5 ends the solve in fewer
    # steps than a switch would need to pay).
    lam = jnp.asarray([1.0, 1e4])
    loss = lambda w: 0.5 * jnp.sum(lam * w**2)  # noqa: E731
    never = flows.gradient_flow(
        loss, jnp.ones(2), 1.0, solver=flows.Auto(stiff_tests=10**9), save_params=False
    )
    often = flows.gradient_flow(
        loss, jnp.ones(2), 0.05, solver=flows.Auto(stiff_steps=5, stiff_tests=10**9),
        save_params=False,
    )  # fmt: skip
    assert never.stats["solvers"] == often.stats["solvers"] == ["tsit5"]
    assert 0 < never.stats["stiffness_tests"] < 0.01 * never.stats["num_steps"]
    assert often.stats["stiffness_tests"] >= 0.05 * often.stats["num_steps"] > 15
    assert never.config["solver_options"]["stiff_tests"] == 10**9


def test_replace_refuses_an_unknown_name_and_the_object_is_frozen():
    with pytest.raises(TypeError, match="rtl"):
        flows.SolveSettings().replace(rtl=1e-9)
    with pytest.raises(dataclasses.FrozenInstanceError):
        flows.SolveSettings().rtol = 1e-3


def test_to_dict_is_plain_json_with_normalised_types():
    s = flows.SolveSettings(rtol=np.float32(1e-6), max_steps=np.int64(10), chunks=3.0)
    d = s.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert type(d["rtol"]) is float and type(d["max_steps"]) is int and type(d["chunks"]) is int


def test_every_entry_point_uses_the_one_set_of_defaults():
    defaults = flows.SolveSettings().to_dict()
    flow = flows.gradient_flow(quadratic, jnp.ones(2), 1.0)
    assert {k: flow.config[k] for k in defaults} == defaults
    net = models.TwoLayerNet(2, 3, activation="tanh", key=jax.random.PRNGKey(0))
    X = jax.random.normal(jax.random.PRNGKey(1), (4, 2))
    lazy = flows.lazy.lazy_comparison(net, (X, jnp.zeros(4)), 1.0, 0.1)
    assert {k: lazy.config[k] for k in defaults} == defaults
    gd = flows.gradient_descent(quadratic, jnp.ones(2), 1.0, eta=0.1)
    assert gd.config["max_steps"] == defaults["max_steps"]


def test_keyword_overrides_equal_the_settings_object():
    settings = flows.SolveSettings(solver="dopri5", rtol=1e-9, atol=1e-11, chunks=3)
    a = flows.gradient_flow(quadratic, jnp.ones(2), 2.0, settings=settings)
    b = flows.gradient_flow(
        quadratic, jnp.ones(2), 2.0, solver="dopri5", rtol=1e-9, atol=1e-11, chunks=3
    )
    # Overrides apply on top of a given object.
    c = flows.gradient_flow(
        quadratic, jnp.ones(2), 2.0, settings=settings.replace(rtol=1e-3), rtol=1e-9
    )
    for other in (b, c):
        assert other.config == a.config and other.stats == a.stats
        np.testing.assert_array_equal(other.params, a.params)
    with pytest.raises(TypeError, match="rtl"):
        flows.gradient_flow(quadratic, jnp.ones(2), 1.0, rtl=1e-9)
    with pytest.raises(ValueError, match="settings"):
        flows.gradient_flow(quadratic, jnp.ones(2), 1.0, settings={"rtol": 1e-9})


def test_flow_and_gradient_descent_report_the_same_stats_keys():
    flow = flows.gradient_flow(quadratic, jnp.ones(2), 1.0)
    gd = flows.gradient_descent(quadratic, jnp.ones(2), 1.0, eta=0.1)
    keys = set(dataclasses.asdict(flows.SolveStats()))
    assert set(flow.stats) == set(gd.stats) == keys
    assert gd.stats["num_steps"] == gd.stats["num_accepted_steps"] == gd.stats["grad_evals"] == 10


def test_gradient_descent_budget_is_max_steps():
    with pytest.raises(flows.MaxStepsReached, match="max_steps=5"):
        flows.gradient_descent(quadratic, jnp.ones(2), 1.0, eta=0.1, max_steps=5)


def test_lazy_remainder_rule_switches_at_thirty():
    assert flows.lazy.LAZY_REMAINDER_ALPHA == 30.0
    assert not flows.lazy.lazy_remainder_rule(29.999)
    assert flows.lazy.lazy_remainder_rule(30.0) and flows.lazy.lazy_remainder_rule(1e6)
    with pytest.raises(ValueError, match="alpha"):
        flows.lazy.lazy_remainder_rule(0.0)


@pytest.mark.parametrize("alpha", [10.0, 30.0])
def test_lazy_comparison_auto_follows_the_rule(alpha):
    net = models.TwoLayerNet(2, 3, activation="tanh", key=jax.random.PRNGKey(0))
    X = jax.random.normal(jax.random.PRNGKey(1), (4, 2))
    res = flows.lazy.lazy_comparison(net, (X, jnp.zeros(4)), alpha, 0.1, ts=[0.0, 0.1])
    assert res.config["remainder"] is flows.lazy.lazy_remainder_rule(alpha)
    assert res.config["nodes"] == flows.lazy.LAZY_NODES


def test_lazy_horizon_makes_the_slowest_mode_fall_by_d_decades():
    lam, decades = 0.37, 6.0
    t1 = flows.lazy.lazy_horizon(lam, decades)
    # The loss of the slowest mode, e^{-2λt}, falls by exactly 10^D (identity; float64 round-off).
    assert math.isclose(math.exp(-2 * lam * t1), 10**-decades, rel_tol=1e-12)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="lambda_min"):
            flows.lazy.lazy_horizon(bad, decades)
    with pytest.raises(ValueError, match="decades"):
        flows.lazy.lazy_horizon(lam, 0.0)


def test_explicit_steps_is_the_step_count_tsit5_needs_on_a_stiff_quadratic():
    # F(w) = ½Σλ_i w_i², λ from 1 to 500: after the fast mode decays (t ≈ 0.1), Tsit5's step
    # is held at its stability boundary h·λ_max ≈ 3.5, whatever rtol asks for.
    lam = jnp.asarray([1.0, 20.0, 500.0])
    t1 = 20.0
    bound = flows.lazy.explicit_steps(t1, 500.0, "tsit5")
    assert bound == pytest.approx(500.0 * 20.0 / 3.5, rel=1e-12)
    traj = flows.gradient_flow(
        lambda w: 0.5 * jnp.sum(lam * w**2), jnp.ones(3), t1, solver="tsit5", rtol=1e-6
    )
    accepted = traj.stats["num_accepted_steps"]
    assert 0.9 * bound <= accepted <= 1.5 * bound, (accepted, bound)  # measured 2,911 of 2,857
    assert flows.lazy.explicit_steps(t1, 0.0) == 0.0
    for kwargs, named in (
        ({"t1": 0.0}, "t1"),
        ({"lambda_max": float("nan")}, "lambda_max"),
        ({"solver": "kvaerno5"}, "solver"),
    ):
        args = {"t1": t1, "lambda_max": 500.0, **kwargs}
        with pytest.raises(ValueError, match=named):
            flows.lazy.explicit_steps(**args)


def test_lazy_save_times_resolve_the_fastest_mode_and_end_at_t1():
    ts = flows.lazy.lazy_save_times(100.0, 50.0, 30)
    assert ts[0] == 0.0 and ts[-1] == 100.0 and np.all(np.diff(ts) > 0)
    assert ts[1] == pytest.approx(1e-2 / 50.0, rel=1e-12)  # min(1e-3·t1, 1e-2/λ_max)
    assert np.all(np.isin(np.linspace(0, 100.0, 21)[1:], ts))
    assert flows.lazy.lazy_save_times(100.0, 0.0, 30)[1] == pytest.approx(0.1, rel=1e-12)


def test_chunks_beyond_the_save_times_mean_one_call_per_save_time():
    # chunks=10**9 is documented (SolveSettings): min(chunks, len(ts)) diffrax calls
    ts = jnp.array([0.0, 0.1, 0.4, 1.0, 2.0])
    solve = lambda chunks: flows.gradient_flow(  # noqa: E731
        quadratic, jnp.array([1.0, -0.5]), 2.0, ts=ts, solver="tsit5", chunks=chunks
    )
    huge, exact = solve(10**9), solve(len(ts))
    assert huge.stats["chunks"] == exact.stats["chunks"] == len(ts)
    np.testing.assert_array_equal(huge.params, exact.params)
    closed = np.array([1.0, -0.5]) * np.exp(-np.outer(np.asarray(ts), [1.0, 3.0]))
    np.testing.assert_allclose(huge.params, closed, rtol=0, atol=1e-8)  # measured 1.9e-12
