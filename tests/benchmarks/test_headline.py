"""The performance page's headline (benchmarks/_headline.py, benchmarks/tables.py): every ratio
is alternative ÷ gradflows, a row stated the other way round is inverted with its goal, a goal
set at another size is not applied, and the short table fits the page (5 columns)."""

import json
import os

import pytest

from benchmarks import _headline, tables

HERE = os.path.dirname(_headline.__file__)


def _rows():
    with open(os.path.join(HERE, "results.json"), encoding="utf-8") as f:
        return json.load(f)["rows"]


def _claim(alternative, params):
    (c,) = [
        c for c in _headline.claims() if c["alternative"] == alternative and c["params"] == params
    ]
    return c


def test_a_row_stated_as_gradflows_over_the_alternative_is_inverted_with_its_goal():
    row = _headline._row(_rows(), "overhead", 10000, "time/grad")
    c = _claim("bare lax.scan of GD steps", 10000)
    assert c["ratio"] == pytest.approx(1 / row["value"], rel=1e-15)
    assert c["goal"] == pytest.approx(1 / 1.15, rel=1e-15)  # row goal "<= 1.15"
    assert c["met"] == (row["value"] <= 1.15)


def test_a_goal_set_at_another_size_is_not_applied_and_one_at_this_size_is():
    assert _claim("scipy solve_ivp RK45", 100000)["goal"] == 5.0  # ">= 5 at p=1e5"
    torch = _claim("torchdiffeq dopri5", 10000)  # ">= 7", no size: applies
    assert torch["goal"] == 7.0 and torch["met"] is (torch["ratio"] >= 7.0)


def test_the_short_table_has_five_columns_and_one_row_per_claim():
    lines = tables.headline_table().splitlines()
    assert lines[0].count("|") == 6 and len(lines) == 2 + len(_headline.claims())


def test_the_headline_figure_is_a_png():
    assert tables.headline_figure()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_peer_examples_rows_are_eulers_cpu_time_over_ours_from_its_json():
    with open(os.path.join(HERE, "central_euler_peer.json"), encoding="utf-8") as f:
        peer = json.load(f)
    rows = [c for c in _headline.claims() if c["alternative"].startswith("Euler central flow, pe")]
    assert [c["unit"] for c in rows] == ["CPU time, compile included", "CPU time, warm"]
    for c, key in zip(rows, ("cold", "warm")):
        ratio = peer[f"euler_{key}_cpu_s"] / peer[f"ours_{key}_cpu_s"]
        assert c["ratio"] == pytest.approx(ratio, rel=1e-12)
        assert c["goal"] == _headline.PEER_GOAL and c["met"] is (ratio >= _headline.PEER_GOAL)


def test_the_peer_table_of_the_eos_page_is_its_json():
    with open(os.path.join(HERE, "central_euler_peer.json"), encoding="utf-8") as f:
        peer = json.load(f)
    lines = tables.central_euler_peer().splitlines()
    cold = f"| {peer['ours_cold_cpu_s']:.1f} s | {peer['euler_cold_cpu_s']:.1f} s |"
    assert cold in lines[2] and lines[2].endswith(f"| {peer['ratio_cold_cpu']:.2f} |")
    assert lines[4].startswith("| max \\|S·η/2 − 1\\| past the edge |")
    assert tables._short(1.0021e-3) == "1.0e-3" and tables._short(5.82e-13) == "5.8e-13"
