"""lazy_comparison: the gaps of Chizat, Oyallon & Bach 2019 scale with α at the stated rates."""

import numpy as np
import pytest

import flows
from tests.problems import lazy_tanh_pair

# All in the remainder form (α ≥ 30), so the sweep compiles one program per net; the direct
# form is checked against it below. Measured slopes over these five α: weight gap −2.0000
# (doubled), −2.0007 (centred); output gap −1.9999 (doubled), −1.0018 (centred); held-out
# output gap −1.9999, −0.9999; distance from init −1.0007 (centred). With α = 10 (direct
# form, a second program) in the fit, the centred output gap's slope was −1.011.
ALPHAS = np.array([1e2, 1e3, 1e4, 1e5, 1e6])


def _sweep(how):
    net, data, X_test = lazy_tanh_pair(how)
    ts = flows.log_times(30.0, 25)
    runs = [
        flows.lazy.lazy_comparison(net, data, a, 30.0, ts=ts, heldout=X_test, solver="tsit5")
        for a in ALPHAS
    ]
    sup = {
        k: np.array([getattr(r, k).max() for r in runs])
        for k in ("weight_gap", "output_gap", "heldout_output_gap", "distance_from_init")
    }
    return {k: np.polyfit(np.log10(ALPHAS), np.log10(v), 1)[0] for k, v in sup.items()}


@pytest.fixture(scope="module")
def doubled_slopes():
    return _sweep("doubled")


@pytest.fixture(scope="module")
def centred_slopes():
    return _sweep("centred")


def test_weight_gap_falls_as_alpha_to_minus_two(doubled_slopes, centred_slopes):
    assert abs(doubled_slopes["weight_gap"] + 2) <= 0.1
    assert abs(centred_slopes["weight_gap"] + 2) <= 0.1


def test_doubled_output_gap_falls_as_alpha_to_minus_two(doubled_slopes):
    assert abs(doubled_slopes["output_gap"] + 2) <= 0.15
    assert abs(doubled_slopes["heldout_output_gap"] + 2) <= 0.15


def test_centred_output_gap_falls_as_alpha_to_minus_one(centred_slopes):
    assert abs(centred_slopes["output_gap"] + 1) <= 0.1
    assert abs(centred_slopes["heldout_output_gap"] + 1) <= 0.1


def test_distance_from_init_falls_as_alpha_to_minus_one(centred_slopes):
    assert abs(centred_slopes["distance_from_init"] + 1) <= 0.1


@pytest.mark.parametrize("alpha", [30.0, 300.0])
def test_remainder_form_agrees_with_direct_form(alpha):
    net, data, X_test = lazy_tanh_pair("centred")
    ts = flows.log_times(10.0, 10)
    kw = dict(ts=ts, heldout=X_test, solver="tsit5", rtol=1e-12, atol=1e-14)
    direct = flows.lazy.lazy_comparison(net, data, alpha, 10.0, remainder=False, **kw)
    taylor = flows.lazy.lazy_comparison(net, data, alpha, 10.0, remainder=True, **kw)
    for key in ("weight_gap", "output_gap", "heldout_output_gap", "loss"):
        a, b = getattr(direct, key), getattr(taylor, key)
        assert np.abs(a - b).max() <= 1e-7 * np.abs(a).max(), key


def test_exprb32_solves_the_lazy_pair_whose_jacobian_is_not_symmetric():
    # The pair's Jacobian in (ū, d) is block lower-triangular, so exprb32 must build Arnoldi
    # spaces (`symmetric_jacobian = False`). The sweep's doubled problem (its Tsit5 program
    # is reused for the reference), α = 1000, t = 0.3, measured at rtol 1e-6 against Tsit5 at
    # 1e-12: relative error 4.5e-8 (weight gap), 1.4e-7 (output gap) and 1.0e-7 (held-out
    # output gap) with Arnoldi; 2.7e-3, 5.4e-2 and 1.5e-2 with Lanczos. Bound: 2e-6.
    net, data, X_test = lazy_tanh_pair("doubled")
    ts = np.geomspace(1e-2, 0.3, 10)
    kw = dict(ts=ts, heldout=X_test, atol=1e-14)
    ref = flows.lazy.lazy_comparison(net, data, 1e3, 0.3, solver="tsit5", rtol=1e-12, **kw)
    res = flows.lazy.lazy_comparison(net, data, 1e3, 0.3, solver="exprb32", rtol=1e-6, **kw)
    assert res.stats["solvers"] == ["exprb32"]
    for key in ("weight_gap", "output_gap", "heldout_output_gap"):
        a, b = getattr(res, key), getattr(ref, key)
        assert np.max(np.abs(a - b) / np.abs(b)) <= 2e-6, key
