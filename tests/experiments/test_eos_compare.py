"""`experiments.eos.compare` on closed forms: divergence reported at its step with its loss,
never NaN; bad arguments as one line naming them."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import flows
from experiments.eos import compare
from experiments.eos._gd import descend
from flows._divergence import GROWTH, WINDOW
from flows.large_steps import uv_init, uv_loss, uv_ntk

LAM = np.array([3.0, 1.3, 0.4])  # a generic diagonal quadratic L = ½ Σ λ_i w_i²
W0 = {"w": jnp.array([0.7, -1.1, 0.45])}


def quadratic(params):
    return 0.5 * jnp.sum(LAM * params["w"] ** 2)


def test_divergent_gd_is_reported_at_the_step_where_the_loss_passes_the_threshold():
    # η = 1: the top mode is multiplied by 1 − ηλ = −2 per step, the others shrink; the loss
    # passes L(0) + 1e3·|L(0)| at the first k with Σ λ_i w_i²(1 − ηλ_i)^(2k) > 1001 Σ λ_i w_i²,
    # and stays above it for the window of 100 steps.
    w0 = np.asarray(W0["w"])
    k = np.arange(60)[:, None]
    losses = 0.5 * np.sum(LAM * w0**2 * (1 - LAM) ** (2 * k), axis=1)
    step = int(np.argmax(losses - losses[0] > GROWTH * losses[0]))
    with warnings.catch_warnings():  # the loss grows 4^50 in the first chunk: not shown
        warnings.simplefilter("error", flows.DivergenceWarning)
        gd = descend(quadratic, W0, eta=1.0, steps=200)
    assert gd.diverged["step"] == step  # closed form: step 6 here
    assert gd.diverged["loss"] == pytest.approx(losses[step], rel=1e-12)
    assert len(gd.trajectory.ts) == step and np.all(np.isfinite(gd.trajectory.loss))
    np.testing.assert_allclose(gd.trajectory.loss, losses[:step], rtol=1e-12)


def test_a_loss_that_jumps_to_inf_at_finite_iterates_stops_at_that_step():
    # w ↦ −1.5w (η = 2.5 on ½w²): |w| = 1, 1.5, 2.25, and the loss is inf where |w| > 2, at
    # step 2, before it passes the threshold; the steps before are kept.
    def jump(params):
        w = params["w"]
        return 0.5 * jnp.sum(w**2) + jnp.where(jnp.abs(w[0]) > 2.0, jnp.inf, 0.0)

    gd = descend(jump, {"w": jnp.array([1.0])}, eta=2.5, steps=10)
    assert gd.diverged == {
        "step": 2,
        "t": 5.0,
        "loss": None,
        "reason": "the loss became non-finite at step 2",
    }
    np.testing.assert_array_equal(gd.trajectory.loss, [0.5, 1.125])


def test_compare_records_divergence_and_writes_no_nan():
    record, arrays = compare(quadratic, W0, eta=1.0, t1=100.0, flows_compared=("gradient",))
    assert record["diverged"]["step"] == 6 and record["diverged"]["t"] == 6.0
    assert all(np.all(np.isfinite(a)) for a in arrays.values())
    # the sharpness of a quadratic is its largest λ at every step (measured error 4e-16)
    np.testing.assert_allclose(arrays["sharpness_gd"][:, 0], LAM.max(), rtol=1e-9)
    assert record["t_edge"] == 0.0 and record["hover"]["median"] == pytest.approx(1.5)


def _uv(m=10**4):
    params = uv_init(m, 0)
    return params, float(uv_ntk(params))


def test_the_catapult_is_not_divergence():
    # uv model, m = 1e4, η = 3/λ0: the loss spikes 1,745 times at step 6 and converges to
    # 6.7e-33 by step 300. Was "diverged at step 6" with 5 of 300 steps kept.
    params, lam0 = _uv()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gd = descend(uv_loss(0.0), params, eta=3.0 / lam0, steps=300)
    # GD past 2/η is the experiment, not a mistake: EdgeOfStabilityWarning was printed on
    # the CLI as a raw Python warning, again for each chunk of 50 steps starting above 2/η
    edge = [w for w in caught if issubclass(w.category, flows.large_steps.EdgeOfStabilityWarning)]
    assert not edge, [str(w.message) for w in edge]
    loss = gd.trajectory.loss
    assert gd.diverged is None and len(loss) == 301
    assert loss.max() / loss[0] == pytest.approx(1744.643, rel=1e-5) and np.argmax(loss) == 6
    assert loss[-1] < 1e-30 * loss[0]


def test_real_divergence_on_the_uv_model_is_caught_with_step_and_loss():
    # ηλ0 = 4.5 > 4: no catapult can bring λ below 2/η; f overflows within 20 steps. The
    # excursion above 1e3·L(0) begins at the step found by the exact map of (f, λ).
    from flows.large_steps import catapult_map, uv_output

    params, lam0 = _uv()
    eta = 4.5 / lam0
    f, lam, exact = float(uv_output(params)), lam0, [0.5 * float(uv_output(params)) ** 2]
    with np.errstate(all="ignore"):
        while np.isfinite(exact[-1]) and exact[-1] - exact[0] <= GROWTH * exact[0]:
            f, lam = catapult_map(f, lam, eta=eta, y=0.0, m=10**4)
            exact.append(0.5 * f**2)
    gd = descend(uv_loss(0.0), params, eta=eta, steps=300)
    d = gd.diverged
    assert d is not None and d["step"] == len(exact) - 1
    assert d["loss"] == pytest.approx(exact[-1], rel=1e-6) and d["t"] == d["step"] * eta
    assert len(gd.trajectory.ts) == d["step"] and np.all(np.isfinite(gd.trajectory.loss))


def shifted(params):
    return quadratic(params) - 5.0  # L(0) = −3.2: a shifted objective


def test_a_negative_loss_is_not_divergence_and_its_divergence_is_caught():
    # was "diverged at step 0" and 0 steps kept: L_0 < 0 made the threshold 1e3·L(0) < L(0)
    gd = descend(shifted, W0, eta=0.1, steps=120)
    assert gd.diverged is None and len(gd.trajectory.ts) == 121
    w0 = np.asarray(W0["w"])
    closed = 0.5 * np.sum(LAM * w0**2 * (1 - 0.1 * LAM) ** (2 * np.arange(121)[:, None]), 1) - 5
    np.testing.assert_allclose(gd.trajectory.loss, closed, rtol=1e-12)
    # η = 1: the top mode doubles; the excess over L(0) passes 1e3·|L(0)| at the closed-form step
    k = np.arange(60)[:, None]
    losses = 0.5 * np.sum(LAM * w0**2 * (1 - LAM) ** (2 * k), axis=1) - 5.0
    step = int(np.argmax(losses - losses[0] > GROWTH * abs(losses[0])))
    gd = descend(shifted, W0, eta=1.0, steps=200)
    assert gd.diverged["step"] == step and step > 1
    assert gd.diverged["loss"] == pytest.approx(losses[step], rel=1e-12)


def test_an_excursion_open_at_the_horizon_is_followed_past_it():
    # the run ends 2 steps into the excursion: the window (100 steps) is decided past it
    w0 = np.asarray(W0["w"])
    k = np.arange(60)[:, None]
    losses = 0.5 * np.sum(LAM * w0**2 * (1 - LAM) ** (2 * k), axis=1)
    step = int(np.argmax(losses - losses[0] > GROWTH * losses[0]))
    gd = descend(quadratic, W0, eta=1.0, steps=step + 2)
    assert gd.diverged["step"] == step and f"within {WINDOW} steps" in gd.diverged["reason"]


@pytest.mark.parametrize(
    "kwargs, error, says",
    [
        ({"eta": 0.0}, ValueError, "eta must be a finite number > 0, got 0.0"),
        ({"eta": -1.0}, ValueError, "eta must be a finite number > 0"),
        ({"eta": 0.1, "k": 4}, ValueError, "k must be <= p"),
        ({"eta": 0.1, "t1": "1"}, ValueError, "t1 must be a number, got '1'"),  # was TypeError
        ({"eta": 0.1, "every": 0}, ValueError, "every must be an integer >= 1, got 0"),
        # saved t = 0 alone: no flow was solved, and no edge could be seen
        ({"eta": 0.1, "every": 10**4}, ValueError, r"^every=10000 leaves 0 save\(s\) after t = 0"),
        # found only after GD and the other flows had run; 'x' as a TypeError there
        (
            {"eta": 0.1, "central_max_steps": -1},
            ValueError,
            "^central_max_steps must be an integer >= 1, got -1$",
        ),
        (
            {"eta": 0.1, "central_max_steps": "x"},
            ValueError,
            "^central_max_steps must be an integer >= 1, got 'x'$",
        ),
        # "'str' object has no attribute 'to_dict'", "'NoneType' object is not callable"
        (
            {"eta": 0.1, "settings": "x"},
            TypeError,
            "^settings must be a flows.SolveSettings or None, got str$",
        ),
        ({"eta": 0.1, "report": None}, TypeError, "^report must be a callable"),
        # inf said "cannot convert float infinity to integer"; t1=1e12 ran 1e13 steps
        ({"eta": 0.1, "t1": float("inf")}, ValueError, "^t1 must be finite, got inf$"),
        # NaN said "t1 must be at least one step eta=0.1, got nan"
        ({"eta": 0.1, "t1": float("nan")}, ValueError, "^t1 must be finite, got nan$"),
        (
            {"eta": 0.1, "t1": 1e12},
            ValueError,
            r"^t1=1e\+12 is 1e\+13 steps of eta=0.1, over 200000 \(every step of gradient",
        ),
        # an unknown name was ignored; a str was read letter by letter
        (
            {"eta": 0.1, "flows_compared": ("foo",)},
            ValueError,
            "flows_compared must be a sequence of 'gradient', 'modified', 'central', got",
        ),
        (
            {"eta": 0.1, "flows_compared": "gradient"},
            ValueError,
            "flows_compared must be a sequence of",
        ),
    ],
)
def test_bad_arguments_raise_one_line_naming_them(kwargs, error, says):
    with pytest.raises(error, match=says) as info:
        compare(quadratic, W0, **{"t1": 1.0, **kwargs})
    assert "\n" not in str(info.value)


def test_non_finite_params0_is_refused_naming_params0():
    # was named "params", the argument of flows.sharpness that compare calls
    with pytest.raises(ValueError, match="^params0: non-finite values"):
        compare(quadratic, {"w": jnp.array([np.nan, 1.0, 1.0])}, eta=0.1, t1=1.0)


def test_a_loss_that_is_not_scalar_is_refused_naming_loss():
    with pytest.raises(TypeError, match="loss") as info:
        compare(lambda p: LAM * p["w"], W0, eta=0.1, t1=1.0)
    assert "\n" not in str(info.value)


def test_compare_reports_each_part_with_its_time():
    seen = []
    compare(quadratic, W0, eta=0.1, t1=2.0, flows_compared=("gradient", "central"),
            report=lambda t, t1, what=None: seen.append((what, t, t1)))  # fmt: skip
    parts = [what for what, _, _ in seen]
    assert parts[0] == "gradient descent" and parts[-1] == "central flow"
    assert {"sharpness", "gradient flow"} <= set(parts)
    central = [(t, t1) for what, t, t1 in seen if what == "central flow"]
    # the central flow reports the time reached after each save (t = 0, 0.2, …, 2)
    assert len(central) > 5 and central[-1] == pytest.approx((2.0, 2.0))
    assert np.all(np.diff([t for t, _ in central]) >= 0)


def test_gd_diverging_at_once_still_gets_the_requested_flows_and_a_figure_that_says_why():
    # `gradflows run eos --etas 50 --t1 500` exited 0 with empty panels: GD diverged at
    # step 1, t_end was 0 and the requested gradient flow was not run or drawn
    from experiments.eos._plots import eta_figure

    record, arrays = compare(quadratic, W0, eta=50.0, t1=500.0, flows_compared=("gradient",))
    assert record["diverged"]["step"] == 1 and len(arrays["t_gd"]) == 1
    np.testing.assert_array_equal(arrays["t_flow"], 50.0 * np.arange(11))
    flow = arrays["loss_gradient_flow"]
    assert len(flow) == 11 and flow[0] == pytest.approx(float(quadratic(W0)), rel=1e-15)
    assert flow[-1] < 1e-12 and record["gradient_flow"]["t_final"] == 500.0
    assert all(np.all(np.isfinite(a)) for a in arrays.values())
    texts = [t.get_text() for ax in eta_figure(record, arrays).axes for t in ax.texts]
    assert any("GD stops at step 1 (t = 50): diverged" in t for t in texts), texts


def test_gd_above_the_edge_from_the_start_is_not_said_to_reach_it_and_hover():
    # η = 1, S = 3 > 2/η = 2 at every point: GD diverges at step 6 (the closed form above).
    # The figure's title read "passes 2/η at t = 0 and hovers there (median S/(2/η) = 1.5
    # after)" and the printed line "S reached 2/η at t=0"
    from experiments.eos._plots import eta_figure
    from experiments.eos._report import _run_line

    record, arrays = compare(quadratic, W0, eta=1.0, t1=20.0, flows_compared=("gradient",))
    assert record["diverged"]["step"] == 6 and record["hover"]["median"] == pytest.approx(1.5)
    title = eta_figure(record, arrays)._suptitle.get_text().splitlines()[0]
    assert title == (
        "GD at η = 1: diverges at step 6 (t = 6); S above 2/η from the start (S(0)/(2/η) 1.5)"
    )
    line = _run_line(record)
    assert "S above 2/η from the start (S0/(2/η) 1.5), then" in line and "reached" not in line


def test_gd_past_the_edge_is_not_warned_once_per_chunk():
    # η = 0.7 > 2/S(0) = 0.667: gradient_descent warns EdgeOfStabilityWarning once per call;
    # descend calls it per chunk of 50 steps (3 warnings here, GD diverging at step 41)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        descend(quadratic, W0, eta=0.7, steps=200)
    assert not [w for w in caught if "S(0)" in str(w.message)], [str(w.message) for w in caught]


def test_the_predicted_loss_error_is_measured_against_the_gaussian_average():
    # GD's loss linear in the step: a symmetric Gaussian filter (σ = 50 steps, cut at 4σ)
    # leaves it unchanged more than 200 steps from either end; a prediction 3 % above it
    # has error 3 % at every save there, and none before the edge.
    from experiments.eos._compare import AVERAGE_SIGMA, _averaged, _prediction_error

    assert AVERAGE_SIGMA == 50
    steps = np.arange(1001)
    loss = 2.0 + 1e-3 * steps
    idx = steps[::2]
    averaged = _averaged(loss, idx, len(idx))
    inner = (idx >= 200) & (idx <= 800)
    np.testing.assert_allclose(averaged[inner], loss[idx][inner], rtol=1e-12)
    ts = 0.5 * idx  # η = 0.5
    # only saves 3σ = 150 steps from either end count: the filter is exact from step 200
    window = (idx >= 150) & (idx <= 850)
    predicted = np.where(window, 1.03 * averaged, 5.0)
    error = _prediction_error(averaged, predicted, ts, 100.0, idx, 1000)
    assert error["mean"] == pytest.approx(0.03, rel=1e-12)
    assert error["max"] == pytest.approx(0.03, rel=1e-12)  # 5.0 outside is left out
    assert error["from_t"] == 100.0 and error["saves"] == 326  # steps 200, 202, …, 850
    # settled: from 3σ after the edge's save (step 200), steps 350, 352, …, 850
    settled = error["settled"]
    assert settled["mean"] == pytest.approx(0.03, rel=1e-12)
    assert settled["from_t"] == 175.0 and settled["saves"] == 251
    assert _prediction_error(averaged, averaged, ts, None, idx, 1000) is None
    assert _prediction_error(averaged, averaged, ts, 100.0, idx, 300) is None  # too short
