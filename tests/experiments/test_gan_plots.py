"""The gan figures of a small run (one mixture variant, three saves) keep every title, label
and legend entry inside the figure, and draw no empty panel: the suptitles and the
four-column legend of a one-panel figure ran past both edges, and three saves drew a fourth
column of empty panels."""

import numpy as np

from experiments.gan import _plots


def _mixture(saves: int = 3) -> dict:
    rng = np.random.default_rng(0)
    d = {"ts": np.linspace(0.0, 2.0, saves), "real": rng.normal(size=(16, 2))}
    for run in _plots.RUNS:
        d[f"{run}_samples"] = rng.normal(size=(saves, 32, 2))
        d[f"{run}_modes"] = np.arange(saves, dtype=float)
        d[f"{run}_gap"] = np.geomspace(1e-3, 1e-1, saves)
        d[f"{run}_eigs"] = rng.normal(size=(saves, 4)) + 1j
    return d


def _outside(fig) -> list[str]:
    """The texts of `fig` (titles, labels, legend entries) that leave the figure."""
    fig.canvas.draw()
    renderer, box = fig.canvas.get_renderer(), fig.bbox
    texts = list(fig.texts) + [t for legend in fig.legends for t in legend.get_texts()]
    for ax in fig.axes:
        if ax.get_visible():
            texts += [ax.title, ax.xaxis.label, ax.yaxis.label]
    problems = []
    for text in texts:
        if text.get_text():
            e = text.get_window_extent(renderer)
            if e.x0 < box.x0 - 1 or e.x1 > box.x1 + 1 or e.y0 < box.y0 - 1 or e.y1 > box.y1 + 1:
                problems.append(text.get_text())
    return problems


def test_one_dirac_variant_keeps_the_portraits_texts_inside():
    grid = np.stack(np.meshgrid(np.linspace(-2, 2, 5), np.linspace(-2, 2, 5)), -1)
    orbit = np.stack([np.cos(np.linspace(0, 3, 20)), np.sin(np.linspace(0, 3, 20))], -1)
    d = {"grid": grid, "field": grid[..., ::-1] * [1, -1], "orbit": orbit, "simgd": orbit,
         "altgd": orbit}  # fmt: skip
    assert _outside(_plots.draw_portraits([("gan", d)])) == []


def test_one_variant_figures_keep_their_texts_inside_and_draw_no_empty_panel():
    panels = [("r1", _mixture())]
    samples = _plots.draw_mixture_samples(panels)
    assert _outside(samples) == []
    assert all(ax.has_data() for ax in samples.axes if ax.get_visible())
    assert len([ax for ax in samples.axes if ax.get_visible()]) == 2 * 3  # flow, SimGD × saves
    for key, ylabel, title in (
        ("gap", "distance", "2-D mixture: distance of each discrete run from the exact flow at "
         "the same flow time"),
        ("modes", "modes", "2-D mixture: modes covered (≥ 1 % of 512 samples within 0.25); the "
         "discrete runs' counts follow the flow's only where they track it (R1)"),
    ):  # fmt: skip
        assert _outside(_plots._per_variant(panels, key, ylabel, title, log=key == "gap")) == []


def test_the_portraits_title_says_so_when_altgd_leaves_the_plot():
    # at --eta 3 AltGD reached r = 6.8e83 under the title "AltGD stays bounded"
    grid = np.stack(np.meshgrid(np.linspace(-2, 2, 5), np.linspace(-2, 2, 5)), -1)
    orbit = np.stack([np.cos(np.linspace(0, 3, 20)), np.sin(np.linspace(0, 3, 20))], -1)
    d = {"grid": grid, "field": grid[..., ::-1] * [1, -1], "orbit": orbit, "simgd": orbit}
    title = _plots.draw_portraits([("wgan", {**d, "altgd": orbit})])._suptitle.get_text()
    assert "AltGD stays bounded" in title
    away = orbit * np.geomspace(1.0, 1e3, 20)[:, None]  # from radius 1 out to 1e3
    title = _plots.draw_portraits([("wgan", {**d, "altgd": away})])._suptitle.get_text()
    assert "AltGD leaves the plot at this η" in title and "stays bounded" not in title
