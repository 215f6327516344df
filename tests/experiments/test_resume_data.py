"""`--resume` refuses a run folder whose finished parts were computed from other data (issue
#24, part 1): the parts are never mixed with parts of new data."""

import argparse
import json
import os

import pytest

from experiments.balance._cli import add_arguments, settings
from tests.helpers import cli

SMALL = ["--n-train", "60", "--hidden", "6,4", "--workers", "0", "--no-progress"]


def _balance_folder(tmp_path, **extra) -> str:
    """A balance run folder holding only the config.json a run of SMALL writes first."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    s = settings(parser.parse_args(SMALL))
    folder = tmp_path / "run"
    folder.mkdir()
    with open(folder / "config.json", "w") as f:
        json.dump({"experiment": "balance", "settings": s, **extra}, f)
    return str(folder)


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"data_sha256": "0" * 64}, "the data differ from the run's (SHA-256)"),
        ({}, "the run recorded no SHA-256 of the data"),
    ],
)
def test_balance_resume_with_other_data_is_refused_in_one_line(tmp_path, capsys, extra, message):
    folder = _balance_folder(tmp_path, **extra)
    assert cli("run", "balance", "--resume", folder, "--workers", "0", "--no-progress") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and folder in err, err
    assert os.listdir(folder) == ["config.json"]  # nothing computed, nothing mixed
