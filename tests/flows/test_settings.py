"""SolveSettings: one object, validated once, one set of defaults; the keyword overrides of
the entry points mean the same as the object; the lazy rules live in flows."""

import json

import jax.numpy as jnp
import pytest

import flows


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
    # ~15 s); stiff_tests=1e9 never switches (3,841 Tsit5 steps, 21 tests). To t = 0.05,
    # stiff_steps=5 tests every 5 steps (84 tests in 427 steps).
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
    assert often.stats["stiffness_tests"] >= 0.15 * often.stats["num_steps"] > 15
    assert never.config["solver_options"]["stiff_tests"] == 10**9
