"""The comparison with the authors' JAX code (benchmarks/peer_central.py): skipped with one line
where that code is not installed, its headline rows and its docs table read from its JSON,
and the smoothed-loss measure it shares with benchmarks/central_predicted_peer.py."""

import json
import os

import numpy as np
import pytest

from benchmarks import _headline, central_predicted_peer, peer_central, tables

HERE = os.path.dirname(_headline.__file__)


def _json():
    with open(os.path.join(HERE, "peer_central.json"), encoding="utf-8") as f:
        return json.load(f)


def test_without_the_peers_code_it_says_so_and_writes_nothing(monkeypatch, capsys):
    monkeypatch.setattr(peer_central, "peer_available", lambda: "No module named 'x'")
    before = os.path.getmtime(os.path.join(HERE, "peer_central.json"))
    peer_central.main(["--steps", "3"])
    out = capsys.readouterr().out
    assert out.startswith("skipped: alex-damian/central_flows_jax is not importable")
    assert out.count("\n") == 1
    assert os.path.getmtime(os.path.join(HERE, "peer_central.json")) == before


def test_the_headline_rows_are_the_peers_cpu_time_over_ours():
    d = _json()
    rows = [c for c in _headline.claims() if c["alternative"].startswith("central_flows_jax")]
    assert [c["unit"] for c in rows] == ["CPU time, compile included", "CPU time, warm"]
    for c, key in zip(rows, ("cold", "warm")):
        ratio = d[f"peer_{key}"]["cpu_s"] / d[f"ours_{key}"]["cpu_s"]
        assert c["ratio"] == pytest.approx(ratio, rel=1e-12) and c["goal"] is None


def test_the_eos_pages_table_is_its_json():
    d = _json()
    lines = tables.peer_central().splitlines()
    cold = f"| {d['ours_cold']['cpu_s']:.1f} s | {d['peer_cold']['cpu_s']:.1f} s |"
    assert cold in lines[2] and lines[2].endswith(f"| {d['ratio_cold_cpu']:.2f} |")
    hold = [line for line in lines if line.startswith("| max \\|λ₁·η/2 − 1\\|")]
    assert hold and tables._short(d["peer_max_edge_error"]) in hold[0]


def test_the_smoothed_measure_of_a_constant_against_a_constant_loss():
    ks = np.arange(0, 1001, 10)
    e = central_predicted_peer.smoothed_errors(np.full(ks.size, 1.1), np.ones(1001), ks, 300, 50)
    assert e["after_edge"]["mean"] == pytest.approx(0.1, rel=1e-12)
    assert e["centred"]["max"] == pytest.approx(0.1, rel=1e-12)
    w = central_predicted_peer.windows(ks, 300, 1000, 50)
    assert w["after_edge"].sum() == 71 and w["centred"].sum() == 51  # 300..1000, 400..900
