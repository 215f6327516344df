"""A task whose record cannot be written (a non-finite number) fails with a log to read."""

import math

from experiments._sweep_parts import write_part


def test_a_part_refused_for_a_non_finite_number_leaves_the_log_its_failure_line_names(tmp_path):
    # the line "task ... failed: cannot write its part: ... (logs/<key>.log)" named a log
    # that was never written (gradflows run transport --eps 1e-300 --plan-eps 1e-300)
    out = {"stats": {"wall_s": 0.1}, "record": {"gap": math.inf}, "arrays": {}}
    result = write_part(str(tmp_path), "k1", {"eps": 1e-300}, out, attempts=1)
    assert result.failed and result.error.startswith("cannot write its part: refusing to write")
    text = (tmp_path / "logs" / "k1.log").read_text()
    assert text.startswith(result.error) and "'gap': inf" in text
    assert not (tmp_path / "part-k1.json").exists()
