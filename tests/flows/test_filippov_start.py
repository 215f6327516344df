"""filippov_flow from a start on a kink, where the event that would decide it cannot fire:
settled at t = 0 as at an event (slide where both one-sided fields push into the surface,
stay or cross where they agree), refused where both push away (not unique). The one-ReLU
problem of test_filippov.py: on z1 = b1 = 0 the fields give ż1 = −a/2 (slope 1) and +a/2
(slope 0)."""

import numpy as np
import pytest

import flows
from tests.flows.test_filippov import X, Y, _hand_solution, _neuron

TS = np.linspace(0.0, 2.0, 5)


def _flow(a, b):
    return flows.nonsmooth.filippov_flow(_neuron(a, b), (X, Y), 2.0, ts=TS, rtol=1e-11,
                                         atol=1e-13)  # fmt: skip


def test_a_start_on_a_repelling_kink_is_refused_naming_the_entry():
    # a = −1: ż1 = +½ on the side z > 0, −½ on the side z < 0. Before: it went to z > 0
    # silently (then slid back at a later event), one of several Filippov solutions.
    message = r"^model: the pre-activation z_ij .* input i=0, neuron j=0 is on its kink at t=0"
    with pytest.raises(ValueError, match=message):
        _flow(-1.0, [0.0, 0.5])


@pytest.mark.parametrize("b1", [0.0, 1e-13, -1e-13])
def test_a_start_on_or_within_1e_10_of_an_attracting_kink_slides_from_t0(b1):
    traj = _flow(1.0, [b1, 0.5])
    exact, _ = _hand_solution(1.0, [0.0, 0.5], TS)
    got = np.c_[traj.params.a[:, 0], traj.params.b[:, 0]]
    assert np.abs(got - exact).max() <= 1e-8  # measured 1e-12
    assert traj.stats["sliding_at_ts"] == [1] * len(TS) and traj.stats["events"] == 0


def test_a_start_on_a_kink_where_one_field_is_tangent_stays_on_the_dead_side():
    # b = (0, −½): inputs 2 and 3 dead, input 1 on its kink with ż1 = −1 (slope 1), 0 (slope
    # 0): the side z ≤ 0 holds it, and nothing moves (the gradient is 0 there).
    traj = _flow(1.0, [0.0, -0.5])
    assert traj.stats["events"] == 0 and traj.stats["sliding_at_ts"] == [0] * len(TS)
    np.testing.assert_array_equal(traj.params.b[:, 0], np.tile([0.0, -0.5], (len(TS), 1)))
