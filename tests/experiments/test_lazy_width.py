"""`gradflows run lazy --width`: one limit, stated as it is, and a long run says so early
(issue #24, part 3)."""

import pytest

import flows
from experiments.lazy._inputs import MAX_PARAMETERS, max_width, n_parameters
from tests.helpers import cli

TINY = ["--n-train", "12", "--n-test", "0", "--t1", "0.5", "--n-times", "4", "--workers", "0"]


@pytest.mark.parametrize("width", ["100000", "100000000"])
def test_every_width_over_the_limit_is_refused_by_one_rule_stating_it(width, tmp_path, capsys):
    # Was "--width must lie in [1, 100000]" for 10⁸, and then a second limit for 10⁵.
    assert cli("run", "lazy", "--width", width, "--out", tmp_path / "x", *TINY) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"--width {width} --depth 1:" in err and "over the limit of 1e+07" in err
    assert "--width at most 76923 at --depth 1 on this data" in err  # digits: d = 64


@pytest.mark.parametrize("in_size, depth", [(64, 1), (64, 3), (5, 2)])
def test_the_width_stated_is_the_largest_under_the_limit(in_size, depth):
    w = max_width(in_size, depth)
    assert n_parameters(in_size, w, depth) <= MAX_PARAMETERS < n_parameters(in_size, w + 1, depth)


def test_a_no_progress_run_says_what_it_computes_before_the_constants(
    tmp_path, capsys, monkeypatch
):
    def stop(*args, **kwargs):
        raise RuntimeError("stopped before the constants")

    monkeypatch.setattr(flows.lazy, "lazy_constants", stop)
    argv = ["--width", "8", "--out", tmp_path / "x", "--no-progress", *TINY]
    assert cli("run", "lazy", *argv) == 1
    out = capsys.readouterr().out
    assert out.startswith("lazy: 1,040 parameters, 12 training points; computing the constants")
    assert str(tmp_path / "x") not in out  # the folder is named only once it exists (below)
    assert not (tmp_path / "x").exists()


def test_the_run_folder_is_announced_only_once_it_exists(tmp_path, monkeypatch):
    # The first line used to end "run folder DIR" before the constants, and DIR was made
    # only after them (or never, when the horizon or the step count was refused).
    from experiments.lazy import _pipeline

    folder, said = tmp_path / "x", []

    class Write:
        @staticmethod
        def write(text, *args, **kwargs):
            said.append((text, folder.is_dir() and (folder / "config.json").is_file()))

    def stop(*args, **kwargs):
        raise RuntimeError("stopped before the flows")

    monkeypatch.setattr(_pipeline, "tqdm", Write)
    monkeypatch.setattr(_pipeline, "_alpha_sweep", stop)
    argv = ["--width", "8", "--out", folder, "--no-progress", "--alphas", "10", *TINY]
    assert cli("run", "lazy", *argv) == 1
    (line, existed) = next((text, e) for text, e in said if str(folder) in text)
    assert line == f"lazy: t1 = 0.5; run folder {folder} (made); tasks: in-process (--workers 0)"
    assert existed
