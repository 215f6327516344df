"""`experiments.table`: a user's CSV/NPZ read as stated, never reinterpreted silently."""

import json
import os

import numpy as np
import pytest

from experiments import constant_columns, table
from tests.helpers import cli, one_line, write

RNG = np.random.default_rng(0)
X = RNG.normal(size=(30, 3))
LABELS = np.where(X[:, 0] > 0, 1, 0)


def _csv(path, header, rows, encoding="utf-8"):
    lines = [",".join(header)] + [",".join(f"{v:.17g}" for v in row) for row in rows]
    return write(path, "\n".join(lines) + "\n", encoding)


def test_a_pandas_index_column_is_dropped_and_said(tmp_path):
    rows = np.column_stack([np.arange(30), X, LABELS])
    path = _csv(tmp_path / "pandas.csv", ["", "a", "b", "c", "target"], rows)
    t = table(path, n_train=20, n_test=10)
    assert t.X_train.shape == (20, 3)  # the row number is not a feature
    assert any("pandas index" in note for note in t.notes)


def test_an_unnamed_column_that_is_not_an_index_is_refused(tmp_path):
    rows = np.column_stack([X[:, 0], X, LABELS])
    path = _csv(tmp_path / "unnamed.csv", ["", "a", "b", "c", "target"], rows)
    with pytest.raises(ValueError, match="column\\(s\\) 1 have no name"):
        table(path, n_train=20, n_test=10)


def test_a_byte_order_mark_is_not_part_of_the_first_name(tmp_path):
    rows = np.column_stack([LABELS, X])
    path = _csv(tmp_path / "excel.csv", ["target", "a", "b", "c"], rows, encoding="utf-8-sig")
    assert open(path, "rb").read(3) == b"\xef\xbb\xbf"
    t = table(path, n_train=20, n_test=10)
    assert t.task == "classification" and t.X_train.shape == (20, 3)


def test_a_multiclass_target_is_refused_for_classification_and_stated_for_regression(tmp_path):
    y = np.arange(30) % 3  # 0, 1, 2
    path = _csv(tmp_path / "three.csv", ["a", "b", "c", "target"], np.column_stack([X, y]))
    with pytest.raises(ValueError, match="--task classification: .* has 3 values"):
        table(path, n_train=20, n_test=10, task="classification")
    t = table(path, n_train=20, n_test=10)  # auto
    assert t.task == "regression" and "3 integer values" in t.notes[0]
    assert set(np.unique(t.y_train)) <= {0.0, 1.0, 2.0}


@pytest.mark.slow
def test_the_cli_states_the_task_in_config_and_refuses_multiclass(tmp_path, capsys):
    y = np.arange(30) % 3
    path = _csv(tmp_path / "three.csv", ["a", "b", "c", "target"], np.column_stack([X, y]))
    argv = ["--data", path, "--n-train", "20", "--n-test", "0", "--width", "16"]
    assert cli("run", "lazy", *argv, "--task", "classification", "--out", tmp_path / "c") == 2
    assert "--task classification" in one_line(capsys.readouterr().err)
    assert not (tmp_path / "c").exists()
    out = tmp_path / "r"
    tiny = ["--t1", "0.1", "--n-times", "4", "--alphas", "10", "--no-progress", "--solver", "tsit5"]
    tiny += ["--workers", "0"]  # in this process: no Dask worker to start, import JAX, compile
    assert cli("run", "lazy", *argv, *tiny, "--out", out) == 0
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["task"] == "regression" and "task: regression" in config["data_description"]
    assert "task: regression" in capsys.readouterr().out


def test_a_column_spread_at_round_off_is_constant(tmp_path):
    # 0.3 written two ways, one unit in the last place apart: std 3.9e-17 (measured), no signal
    col = np.where(np.arange(30) % 2 == 0, 0.1 + 0.2, 0.3)
    assert 0 < col.std() < 1e-16
    rows = np.column_stack([X, col, LABELS])
    path = _csv(tmp_path / "roundoff.csv", ["a", "b", "c", "d", "target"], rows)
    t = table(path, n_train=20, n_test=10)
    assert np.all(t.X_train[:, 3] == 0) and np.all(t.X_test[:, 3] == 0)
    assert np.allclose(t.X_train[:, :3].std(axis=0), 1.0, rtol=1e-12)
    assert any("constant" in note for note in t.notes)
    assert list(constant_columns(np.column_stack([X, col]))) == [False] * 3 + [True]


def _bad_files(tmp_path):
    constant = np.column_stack([np.ones((30, 2)), LABELS])
    huge = np.column_stack([X, LABELS])
    huge[4, 1] = 1e308  # its column's std overflows: (x − mean)/inf was a silent column of 0
    with_inf = np.column_stack([X, LABELS]).astype(str)
    with_inf[3, 0] = "inf"
    return [
        # rc 1 `in_size must be an integer >= 1, got 0`, after the run folder was made
        (_csv(tmp_path / "only.csv", ["target"], LABELS[:, None]), "no feature columns"),
        # both ran every alpha, then failed at the report (`reference_curve needs ...`)
        (_csv(tmp_path / "const.csv", ["a", "b", "target"], constant), "no informative feature"),
        (_csv(tmp_path / "huge.csv", ["a", "b", "c", "target"], huge), "feature column(s) 2 "),
        # was called "missing, non-numeric or NaN entries"
        (
            write(
                tmp_path / "inf.csv",
                "a,b,c,target\n" + "\n".join(",".join(r) for r in with_inf) + "\n",
            ),
            "1 infinite entries",
        ),
        # was accepted, one of the two columns silently a feature
        (_csv(tmp_path / "twice.csv", ["a", "a", "c", "target"], huge), "'a' appear more than"),
    ]


def test_files_without_an_informative_finite_feature_are_refused_naming_data(tmp_path, capsys):
    tiny = ["--n-train", "20", "--n-test", "5", "--alphas", "1,100", "--width", "8"]
    tiny += ["--t1", "0.5", "--workers", "0", "--no-progress"]
    for i, (path, says) in enumerate(_bad_files(tmp_path)):
        out = tmp_path / f"run{i}"
        assert cli("run", "lazy", "--data", path, *tiny, "--out", out) == 2, path
        line = one_line(capsys.readouterr().err)
        assert f"--data {path!r}: " in line and says in line, line
        assert not out.exists()


@pytest.mark.parametrize("which", ["X", "target"])
def test_a_complex_npz_array_is_refused_not_cut_to_its_real_part(which, tmp_path):
    # np.asarray(·, float64) dropped the imaginary part with only numpy's ComplexWarning.
    arrays = {"X": X, "target": LABELS * 2 - 1}
    arrays[which] = arrays[which] + 1j
    path = str(tmp_path / "complex.npz")
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=f"^--data '.*complex.npz': array '{which}' is complex"):
        table(path, n_train=20, n_test=10)


@pytest.mark.parametrize(
    "field, says",
    [
        (
            "abc",
            "1 missing, non-numeric or NaN entries; the first at line 5 (data row 4), "
            "column 'b': 'abc'",
        ),  # fmt: skip
        (
            "",
            "1 missing, non-numeric or NaN entries; the first at line 5 (data row 4), "
            "column 'b': ''",
        ),  # fmt: skip
        (
            "1e999",
            "1 infinite entries (inf, or a number beyond float64's range); the first at "
            "line 5 (data row 4), column 'b': '1e999'",
        ),  # fmt: skip
    ],
)
def test_a_bad_csv_field_is_named_by_its_line_row_and_column(tmp_path, field, says):
    # said "missing, non-numeric or NaN entries" naming neither the row nor the column
    rows = np.column_stack([X, LABELS]).astype(str)
    rows[3, 1] = field
    path = write(tmp_path / "bad.csv", "a,b,c,target\n" + "\n".join(",".join(r) for r in rows))
    with pytest.raises(ValueError) as info:
        table(path, n_train=20, n_test=10)
    assert str(info.value) == f"--data {path!r}: {says}"
