"""Phase portraits: the drawn data against closed forms and identities, and non-blank images."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from matplotlib import image

from experiments import portraits
from experiments.portraits import CONSERVATION_STARTS

NET = portraits.TwoWeightNet("tanh", x=1.0)
W0 = np.array([0.37, -1.21])  # generic: neither weight zero, no symmetry
TARGET = 0.8


def _assert_not_blank(path):
    pixels = image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert pixels[..., :3].std() > 0.05
    assert len(np.unique(pixels[..., :3].reshape(-1, 3), axis=0)) > 50


def _seed_jacobian(w0, x=1.0):
    """∇f(w0) for f(w) = w2·tanh(w1·x), by hand."""
    return np.array([w0[1] * x / np.cosh(w0[0] * x) ** 2, np.tanh(w0[0] * x)])


@pytest.fixture(scope="module")
def lazy(tmp_path_factory):
    path = tmp_path_factory.mktemp("portrait") / "flows.png"
    portrait = portraits.lazy_flow_portrait(
        NET, W0, TARGET, alphas=(1.0, 10.0), grid=9, path=str(path)
    )
    return portrait, path


def test_linearization_equals_network_and_its_gradient_at_w0():
    f_lin = portraits.linearized(NET, W0)
    w0 = jnp.asarray(W0)
    np.testing.assert_allclose(f_lin(w0), NET(w0), rtol=0, atol=1e-15)
    np.testing.assert_allclose(jax.grad(f_lin)(w0), jax.grad(NET)(w0), rtol=0, atol=1e-15)
    np.testing.assert_allclose(jax.grad(NET)(w0), _seed_jacobian(W0), rtol=1e-14)
    # affine: f̄(w0 + d) = f(w0) + ∇f(w0)·d at a point far from w0, where f itself is not
    d = np.array([2.3, -0.7])
    expected = float(NET(w0)) + _seed_jacobian(W0) @ d
    np.testing.assert_allclose(f_lin(w0 + d), expected, rtol=1e-14)
    assert abs(float(NET(w0 + d)) - expected) > 0.1


def test_centred_linearization_vanishes_at_w0_with_the_same_gradient():
    g_lin = portraits.linearized(NET, W0, centred=True)
    w0 = jnp.asarray(W0)
    assert float(g_lin(w0)) == 0.0
    np.testing.assert_allclose(jax.grad(g_lin)(w0), _seed_jacobian(W0), rtol=1e-14)


def test_surface_portrait_agrees_at_w0_and_draws_a_nonblank_image(tmp_path):
    path = tmp_path / "seed.png"
    portrait = portraits.surface_portrait(NET, W0, scales=(0.1, 10.0), grid=11, path=str(path))
    data = portrait.data
    c = data["output"].shape[-1] // 2
    np.testing.assert_allclose(data["w1"][:, c], W0[0], atol=1e-15)
    np.testing.assert_allclose(data["w2"][:, c], W0[1], atol=1e-15)
    np.testing.assert_allclose(
        data["output"][:, c, c], data["output_linearized"][:, c, c], atol=1e-14
    )
    np.testing.assert_allclose(data["output"][:, c, c], data["scales"] * float(NET(W0)), rtol=1e-14)
    np.testing.assert_allclose(data["radii"], 2.0 / np.array([0.1, 10.0]))
    # the gap α(f − f̄) on the window w0 ± ρ/α falls like 1/α: (ρ/α)²·α
    gap = np.abs(data["output"] - data["output_linearized"]).max(axis=(1, 2))
    assert gap[1] < 0.15 * gap[0]
    _assert_not_blank(path)
    assert portrait.figure.axes


def test_linearised_flows_match_the_closed_form_of_the_linear_branch(lazy):
    portrait, _ = lazy
    data = portrait.data
    J = _seed_jacobian(W0)
    sigma = J @ J
    ts = data["ts"]
    for k, alpha in enumerate(data["alphas"]):
        # h = f − f(w0): w̄(t) = w0 + (y*/α) Jᵀ/‖J‖² (1 − e^{−‖J‖² t})
        expected = W0 + (TARGET / alpha) * np.outer(1 - np.exp(-sigma * ts), J / sigma)
        np.testing.assert_allclose(data["paths"][k, 1, 0], expected, rtol=0, atol=1e-8 / alpha)
        for branch in range(2):  # both flows start at the drawn starting points
            np.testing.assert_array_equal(data["paths"][k, branch, :, 0], data["starts"][k])


def test_lazy_flows_shorten_straighten_and_coincide_as_alpha_grows(lazy):
    portrait, path = lazy
    data = portrait.data
    length = data["path_length"][:, 0, 0]  # nonlinear flow from w0, α = 1 and 10
    np.testing.assert_allclose(length[1] / length[0], 0.1, rtol=0.15)
    straightness = data["straightness"][:, 0, 0]
    assert straightness[0] < 0.999 < straightness[1]
    gap = data["weight_gap"][:, 0]
    assert gap[1] / gap[0] < 0.03  # Thm 2.2: O(1/α²)
    _assert_not_blank(path)


def test_flow_portrait_of_a_user_objective_follows_the_matrix_exponential(tmp_path):
    A = np.array([[2.0, 0.6], [0.6, 0.5]])
    B = np.array([[1.0, -0.3], [-0.3, 0.4]])
    centre = np.array([0.3, -0.2])
    starts = np.array([[1.5, 1.0], [-1.2, 0.4], [0.2, -1.7]])
    path = tmp_path / "user.png"
    portrait = portraits.flow_portrait(
        lambda w: 0.5 * (w - centre) @ A @ (w - centre),
        starts,
        (-2, 2, -2, 2),
        compare=lambda w: 0.5 * w @ B @ w,
        t1=3.0,
        n_times=30,
        grid=9,
        path=str(path),
    )
    data = portrait.data
    for i, ts in enumerate(data["ts"][::7]):
        t_index = 7 * i
        exact = centre + (starts - centre) @ scipy.linalg.expm(-A * ts).T
        exact_compare = starts @ scipy.linalg.expm(-B * ts).T
        np.testing.assert_allclose(data["paths"][0, 0, :, t_index], exact, atol=1e-8)
        np.testing.assert_allclose(data["paths"][0, 1, :, t_index], exact_compare, atol=1e-8)
    # the drawn field is −∇F = −A(w − c)
    w = np.array([data["w1"][0, 2], data["w2"][0, 5]])
    np.testing.assert_allclose(data["fields"][0, 0, 5, 2], -A @ (w - centre), rtol=1e-12)
    _assert_not_blank(path)


def test_flows_keep_balancedness_and_gradient_descent_leaves_it(tmp_path):
    x, eta = 1.0, 0.35
    objective = portraits.ModelLoss(portraits.ScalarLinearNet(x), TARGET)
    path = tmp_path / "conservation.png"
    portrait = portraits.conservation_portrait(
        objective,
        portraits.balancedness,
        np.array(CONSERVATION_STARTS),
        (-2.5, 2.5, -2.5, 2.5),
        eta=eta,
        gd_steps=5,
        grid=15,
        path=str(path),
    )
    data = portrait.data
    paths = data["paths"]
    q = paths[..., 0] ** 2 - paths[..., 1] ** 2
    np.testing.assert_allclose(data["invariant_paths"], q, rtol=1e-14, atol=1e-14)
    assert np.abs(q - q[:, :1]).max() <= 1e-8
    assert np.abs(paths[:, -1] - paths[:, 0]).max() > 0.5  # the flows do move
    # gradient descent: Q_{k+1} = Q_k (1 − η² r_k² x²), r = x·w1·w2 − y*
    gd, q_gd = data["gd"], data["invariant_gd"]
    r = x * gd[:-1, 0] * gd[:-1, 1] - TARGET
    np.testing.assert_allclose(q_gd[1:], q_gd[:-1] * (1 - eta**2 * r**2 * x**2), rtol=1e-12)
    assert abs(q_gd[-1] - q_gd[0]) > 1.0
    _assert_not_blank(path)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: portraits.surface_portrait(NET, [1.0, 2.0, 3.0]), "w0"),
        (lambda: portraits.surface_portrait(NET, W0, grid=3), "grid"),
        (lambda: portraits.surface_portrait(NET, W0, scales=(0.1, -1.0)), "scales"),
        (lambda: portraits.flow_portrait(NET, [[0.0, 0.0]], (1, 0, 0, 1)), "bounds"),
        (lambda: portraits.flow_portrait(NET, [0.0, 0.0], (0, 1, 0, 1)), "starts"),
        (lambda: portraits.lazy_flow_portrait(NET, W0, float("nan")), "target"),
    ],
)
def test_bad_arguments_raise_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def _conservation(**kwargs):
    objective = portraits.ModelLoss(portraits.ScalarLinearNet(1.0), TARGET)
    return portraits.conservation_portrait(
        objective, portraits.balancedness, [[0.5, 1.0]], (-2, 2, -2, 2), **kwargs
    )


@pytest.mark.parametrize(
    "call, message",
    [
        # n_times=-5 was taken as 3 silently; "abc" failed in int() without the name
        (
            lambda: portraits.flow_portrait(NET, [[0.1, 0.2]], (0, 1, 0, 1), n_times=-5),
            "n_times must be an integer >= 3, got -5",
        ),
        (
            lambda: portraits.flow_portrait(NET, [[0.1, 0.2]], (0, 1, 0, 1), n_times="abc"),
            "n_times must be an integer >= 3, got 'abc'",
        ),
        # None said "int() argument must be ..." (TypeError)
        (
            lambda: portraits.surface_portrait(NET, W0, grid=None),
            "grid must be an integer >= 5, got None",
        ),
        # float("abc") failed without the name; True was taken as 1
        (
            lambda: portraits.surface_portrait(NET, W0, radius="abc"),
            "radius must be a finite number > 0, got 'abc'",
        ),
        (
            lambda: _conservation(eta=True),
            "eta must be a finite number > 0, got True",
        ),
        (
            lambda: _conservation(gd_steps=float("nan")),
            "gd_steps must be an integer >= 1, got nan",
        ),
    ],
)
def test_bad_numbers_are_refused_in_one_line_naming_them(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


def test_lazy_flow_figure_is_one_panel_per_alpha_each_naming_the_path_it_measures(lazy):
    # issue 40: 6 panels (F_α and F̄_α rows), two y-labels merged, and bottom-row titles that
    # described one path of five; the claim is on the paths, which every panel draws
    portrait, _ = lazy
    panels = [ax for ax in portrait.figure.axes if ax.get_xlabel()]  # the colour bar has none
    assert len(panels) == 2  # one per α (two here), F_α's field, both objectives' flows
    assert all(ax.get_ylabel() == "w2 (weight)" for ax in panels)
    data = portrait.data
    for k, ax in enumerate(panels):
        title = ax.get_title()
        assert "path from w0 ★" in title
        assert f"length {data['path_length'][k, 0, 0]:.2g}" in title
        assert f"max_t ‖w_α − w̄_α‖ = {data['weight_gap'][k, 0]:.2g}" in title
        styles = {line.get_linestyle() for line in ax.get_lines()}
        assert {"-", "--"} <= styles  # the flows of F_α and of F̄_α
    assert "coincide" in portrait.figure._suptitle.get_text()


def test_flow_figure_colour_bar_ticks_lie_within_its_range(lazy):
    # --grid 9: the top tick 6 lay above the bar's top 5.6 and was drawn on top of 5
    portrait, _ = lazy
    (ax,) = [ax for ax in portrait.figure.axes if not ax.get_xlabel()]
    lo, hi = ax._colorbar.norm.vmin, ax._colorbar.norm.vmax
    ticks = ax.get_yticks()
    assert len(ticks) >= 3 and lo - 1e-9 <= ticks.min() and ticks.max() <= hi + 1e-9
