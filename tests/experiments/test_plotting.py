"""The shared plotting helpers and the figure checks: each check passes a good figure and
fails the fault it exists for (reference on the fit, legend over data, blank panel)."""

import numpy as np
import pytest
from matplotlib import colors, image

from experiments import _plotting as P

ALPHAS = np.logspace(0, 6, 13)
# a gap falling like α⁻² with a generic wobble (not an exact power law)
GAP = 0.07 * ALPHAS**-2.0 * (1 + 0.1 * np.sin(np.arange(13.0)))


def _loglog(offset=1.0, side="below"):
    fig = P.new_figure(6, 4)
    ax = fig.subplots()
    ax.plot(ALPHAS, GAP, "o", label="gap")
    slope = np.polyfit(np.log(ALPHAS), np.log(GAP), 1)[0]
    fit = P.fit_line(ax, ALPHAS, GAP, slope, label=f"fit {slope:.3f}", color="C0")
    ref = P.reference_slope(
        ax, ALPHAS, GAP, -2, label="slope −2: Thm 2.2", offset=offset, side=side, fits=(fit,)
    )
    P.log_axis(ax)
    ax.set_xlabel(P.ALPHA_LABEL)
    ax.set_ylabel("gap")
    P.legend_outside(ax)
    return fig, ax, fit, ref


@pytest.mark.parametrize("side", ["below", "above"])
def test_reference_slope_keeps_the_chosen_offset_from_data_and_fit(side):
    fig, ax, fit, ref = _loglog(offset=1.0, side=side)
    x, y = ref.get_data()
    np.testing.assert_allclose(np.diff(np.log10(y)) / np.diff(np.log10(x)), -2.0, rtol=1e-12)
    # the offset is a minimum, reached at the nearest point or fitted line: 1 to round-off
    d_fit = P.reference_distance(ax, ref, fit)
    ref_at = np.interp(np.log10(ALPHAS), np.log10(x), np.log10(y))
    d_points = np.abs(np.log10(GAP) - ref_at).min()
    assert min(d_fit, d_points) == pytest.approx(1.0, abs=1e-12)
    assert d_fit >= 1.0 - 1e-12 and d_points >= 1.0 - 1e-12
    sign = np.sign(np.log10(GAP) - ref_at)
    assert np.all(sign == (1 if side == "below" else -1))
    assert P.figure_problems(fig) == []


def test_reference_on_top_of_the_fit_is_reported():
    fig, ax, fit, _ = _loglog()
    # the old fault: theory's slope drawn through the data's centroid, under the fitted line
    P.reference_curve(ax, *fit.get_data(), lambda a: a**-2.0, label="theory", offset=0.0)
    P.legend_outside(ax)
    problems = P.check_references(fig, offset=1.0)
    assert len(problems) == 1 and "within" in problems[0]


def test_reference_curve_of_any_shape_stays_above_by_the_offset():
    fig = P.new_figure(6, 4)
    ax = fig.subplots()
    big = ALPHAS[ALPHAS > np.e]
    gap = GAP[ALPHAS > np.e]
    ax.plot(big, gap, "^", label="held-out gap")
    ref = P.reference_curve(
        ax, big, gap, lambda a: np.log(a) / a, label="(log α)/α: Prop. A.1", side="above"
    )
    x, y = ref.get_data()
    ratio = y * x / np.log(x)  # the constant c of c·(log α)/α
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
    lo = np.log10(np.interp(np.log(big), np.log(x), y) / gap)
    assert lo.min() == pytest.approx(1.0, abs=1e-9)  # interpolation in log α of a smooth curve


def test_unlabelled_reference_is_reported():
    fig, ax, _, _ = _loglog()
    ax.axhline(1e-8, gid=P.BOUND)  # a dotted tolerance line without a label
    problems = P.check_references(fig)
    assert len(problems) == 1 and "not labelled" in problems[0]
    P.bound_line(ax, ALPHAS, 1e-3 / ALPHAS, label="Thm 2.2 bound")  # near the data: allowed
    P.legend_outside(ax)
    assert len(P.check_references(fig)) == 1


def test_legend_over_the_data_is_reported_and_outside_is_not():
    fig = P.new_figure(6, 4)
    ax = fig.subplots()
    t = np.linspace(0, 1, 50)
    ax.plot(t, t, label="rises")
    ax.plot(t, 1 - t, label="falls")
    ax.set_xlabel("t")
    ax.set_ylabel("y")
    ax.legend(loc="center")
    problems = P.check_legends(fig)
    assert len(problems) == 2  # the box covers the crossing of both lines
    P.legend_outside(ax, where="below", ncol=2)
    assert P.check_legends(fig) == []
    P.figure_legend(fig, ncol=2)
    assert P.check_legends(fig) == []


def test_nearly_blank_colour_panel_is_reported():
    fig = P.new_figure(8, 3)
    a, b = fig.subplots(1, 2)
    w = np.linspace(-1, 1, 21)
    z = np.add.outer(w, w)
    shared = colors.Normalize(-4.4, 4.4)  # the seed figure's fault: one scale for two rows
    a.contourf(w, w, 4.4 * z / 2, norm=shared, levels=np.linspace(-4.4, 4.4, 21))
    b.contourf(w, w, 0.48 * z / 2, norm=shared, levels=np.linspace(-4.4, 4.4, 21))
    for ax, title in ((a, "big"), (b, "small")):
        ax.set(title=title, xlabel="w1", ylabel="w2")
    problems = P.check_panels(fig)
    assert len(problems) == 1 and "'small'" in problems[0] and "11%" in problems[0]


def test_flat_line_panel_is_reported():
    fig = P.new_figure(6, 3)
    ax = fig.subplots()
    t = np.linspace(0, 1, 20)
    ax.plot(t, 1 + 1e-3 * t)
    ax.set_ylim(0, 2)  # a shared or fixed range that the data do not use
    ax.set(xlabel="t", ylabel="y", title="flat")
    problems = P.check_panels(fig)
    assert len(problems) == 1 and "0% of the height" in problems[0]


def test_missing_axis_label_is_reported():
    fig = P.new_figure(6, 3)
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("flow time t")
    assert P.check_labels(fig) == ["panel '': no y label"]


def test_log_axis_labels_powers_of_ten_only():
    fig = P.new_figure(4, 3)
    ax = fig.subplots()
    ax.plot([1, 10], [0.3, 0.9])
    P.log_axis(ax, "y")
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels(minor=True)]
    assert all(text == "" for text in labels)  # no 6×10⁻¹ clutter


def test_roundoff_floor_does_not_widen_the_axis():
    fig = P.new_figure(4, 3)
    ax = fig.subplots()
    t = np.logspace(-3, 1, 30)
    ax.loglog(t, 1e-3 * t)
    before = ax.get_ylim()
    P.roundoff_floor(ax, t, 1e-5, label="round-off")
    assert ax.get_ylim() == before


def test_save_figure_writes_atomically_in_the_format_of_the_extension(tmp_path):
    fig, *_ = _loglog()
    png = P.save_figure(fig, str(tmp_path / "a.png"))
    svg = P.save_figure(fig, str(tmp_path / "a.svg"))
    assert image.imread(png).shape[0] > 100
    assert open(svg).read(200).lstrip().startswith("<?xml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "a.svg"]


def test_bad_arguments_name_themselves():
    fig = P.new_figure(4, 3)
    ax = fig.subplots()
    with pytest.raises(ValueError, match="side"):
        P.reference_slope(ax, ALPHAS, GAP, -2, label="x", side="left")
    with pytest.raises(ValueError, match="where"):
        P.legend_outside(ax, where="top")
    with pytest.raises(ValueError, match="positive point"):
        P.reference_slope(ax, ALPHAS, -GAP, -2, label="x")
