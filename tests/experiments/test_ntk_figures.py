"""The NTK figures pass the shared checks and show their claim: the slope −½ of the claim as an
offset reference (never through the data), and where cond(K∞) settles marked per activation.

Drawn from a small synthetic run folder: the plots read only what a run saved."""

import json

import numpy as np

from experiments import _plotting as P
from experiments.ntk import _plots as ntk_plots
from experiments.ntk._design import key
from experiments.ntk._report import settle_depth

WIDTHS = np.array([16, 32, 64, 128])
DEPTHS = np.array([1, 2, 4, 8, 16, 32, 64])
ACTIVATIONS = {"relu": [0.5, 0.5], "abs": [0.0, 1.0]}


def _folder(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"widths": WIDTHS, "depths": DEPTHS}
    for data in ("digits", "gaussian"):
        for i, act in enumerate(ACTIVATIONS):
            for scheme, scale in (("constant", 2.0), ("quadratic", 1.0)):
                mean = scale * WIDTHS**-0.5
                arrays[key("errors", data, act, scheme)] = mean[:, None] * rng.uniform(
                    0.6, 1.4, (len(WIDTHS), 10)
                )
            cond = 12 + (30 + 5 * i) * np.exp(-DEPTHS / (8 + 8 * i))
            arrays[key("lambda", data, act)] = np.stack([np.ones_like(cond), cond])
    np.savez(tmp_path / "arrays.npz", **arrays)
    config = {
        "datasets": ["digits", "gaussian"],
        "activations": ACTIVATIONS,
        "schemes": ["constant", "quadratic"],
        "depth": 3,
        "format": "png",
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    return arrays, config


def test_ntk_figures_pass_the_checks_and_write_both_files(tmp_path):
    arrays, config = _folder(tmp_path)
    assert [p.rsplit("/", 1)[-1] for p in ntk_plots.plot(str(tmp_path))] == [
        "error_vs_width.png",
        "condition_vs_depth.png",
    ]
    for fig in (
        ntk_plots._error_figure(arrays, config),
        ntk_plots._condition_figure(arrays, config),
    ):
        assert P.figure_problems(fig) == []


def test_reference_slope_is_minus_one_half_and_a_decade_above_every_mean(tmp_path):
    arrays, config = _folder(tmp_path)
    fig = ntk_plots._error_figure(arrays, config)
    for ax in fig.axes[:4]:
        (ref,) = [line for line in ax.get_lines() if line.get_gid() == P.REFERENCE]
        x, y = ref.get_data()
        slope = np.polyfit(np.log(x), np.log(y), 1)[0]
        assert abs(slope + 0.5) < 1e-9  # a power law drawn exactly (measured ~1e-15)
        means = [line for line in ax.get_lines() if line.get_marker() == "o"]
        assert len(means) == 2
        for line in means:
            mx, my = line.get_data()
            above = np.log10(np.interp(mx, x, y)) - np.log10(my)
            assert above.min() >= 1.0 - 1e-9  # one decade (the helper's offset), never fitted


def test_settle_depth_is_marked_where_the_rule_puts_it(tmp_path):
    arrays, config = _folder(tmp_path)
    fig = ntk_plots._condition_figure(arrays, config)
    ax = fig.axes[0]
    marks = sorted(
        int(line.get_xdata()[0]) for line in ax.get_lines() if line.get_gid() == ntk_plots.SETTLE
    )
    expected = sorted(
        settle_depth(DEPTHS, arrays[key("lambda", "digits", act)][1]) for act in ACTIVATIONS
    )
    assert marks == expected and all(m in DEPTHS for m in marks)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "linear"


def test_each_panel_draws_and_names_the_fitted_slope_of_both_schemes(tmp_path):
    arrays, config = _folder(tmp_path)
    fig = ntk_plots._error_figure(arrays, config)
    for ax, (data, act) in zip(fig.axes, [(d, a) for d in config["datasets"] for a in ACTIVATIONS]):
        fits = [line for line in ax.get_lines() if line.get_gid() == P.FIT]
        assert len(fits) == 2
        for line, scheme in zip(fits, config["schemes"]):
            mean = arrays[key("errors", data, act, scheme)].mean(axis=1)
            expected = np.polyfit(np.log(WIDTHS), np.log(mean), 1)[0]
            drawn = np.polyfit(*np.log(line.get_data()), 1)[0]
            assert abs(drawn - expected) < 1e-9  # the line is that power law (measured ~1e-15)
            assert f"{expected:+.2f} ({ntk_plots.LABELS[scheme]})" in ax.get_title()


def test_settle_marker_says_from_which_depth_and_relative_to_which_depth(tmp_path):
    arrays, config = _folder(tmp_path)
    fig = ntk_plots._condition_figure(arrays, config)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert f"within 10% of its value at depth {DEPTHS[-1]} from this depth on" in labels[-1]


def test_condition_figure_states_the_claim_and_names_each_settle_depth(tmp_path):
    # issue 40: the title named the setting, not the claim, and the settle depths were unmarked
    arrays, config = _folder(tmp_path)
    fig = ntk_plots._condition_figure(arrays, config)
    ax = fig.axes[0]
    depths = {
        act: settle_depth(DEPTHS, arrays[key("lambda", "digits", act)][1]) for act in ACTIVATIONS
    }
    for act, depth in depths.items():
        assert f"{depth} ({act}," in ax.get_title()
    dotted = [line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert sorted(dotted) == sorted(depths.values())
    deltas = {act: b * b / (a * a + b * b) for act, (a, b) in config["activations"].items()}
    order = [depths[act] for act in sorted(depths, key=deltas.get, reverse=True)]
    holds = order == sorted(order)
    title = fig._suptitle.get_text()
    assert ("the larger Δ_φ, the shallower" in title) == holds
    assert ("NOT in the order of Δ_φ" in title) == (not holds)
