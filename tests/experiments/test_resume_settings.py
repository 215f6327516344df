"""`--resume` checks the settings a run's config.json records with the checks of the options:
a hand-edited value the options refuse is refused in one line naming --resume and the flag,
exit 2, nothing written (eos resumed `"t1": -3` and wrote results.json; transport failed
inside its tasks on `"max_iters": -5`; gan ran `"eta": -1`). And `gradflows run eos` refuses
an optimizer's option that the chosen --optimizer does not use (`--beta` with gd was
ignored)."""

import argparse
import importlib
import json
import os

import pytest

from experiments._run_folder import recheck_settings, resumed_settings
from experiments.eos._cli import DEFAULTS as EOS_DEFAULTS
from tests.helpers import cli, one_line

# experiment: (the package, whether config.json holds the settings under "settings")
LAYOUT = {
    "lazy": ("lazy", False),
    "balance": ("balance", True),
    "ntk": ("ntk", False),
    "portrait": ("portraits", True),
    "eos": ("eos", False),
    "gan": ("gan", True),
    "transport": ("transport", False),
}


def _parse(name: str, *argv: str):
    parser = argparse.ArgumentParser()
    importlib.import_module(f"experiments.{LAYOUT[name][0]}._cli").add_arguments(parser)
    return parser.parse_args(list(argv))


def _recorded(name: str) -> dict:
    """The settings a run of the default options records (JSON, as read back)."""
    cli_module = importlib.import_module(f"experiments.{LAYOUT[name][0]}._cli")
    s = cli_module.settings(_parse(name))
    s.pop("solve", None)  # lazy's flows.SolveSettings object: its fields are recorded
    return json.loads(json.dumps(s))


def _folder(tmp_path, name: str, **edits) -> str:
    s = {**_recorded(name), **edits}
    folder = tmp_path / "run"
    folder.mkdir()
    config = {"settings": s} if LAYOUT[name][1] else s
    (folder / "config.json").write_text(json.dumps({"experiment": name, **config}))
    return str(folder)


BAD = [
    ("lazy", {"width": 0}, "--width must be >= 1, got 0"),
    ("balance", {"t1": -1}, "--t1 must be finite and > 0, got -1"),
    ("ntk", {"depth": 0}, "--depth must lie in [1, 50], got 0"),
    ("portrait", {"t1": -1}, "--t1 must be finite and > 0, got -1"),
    ("eos", {"t1": -3}, "--t1 must be finite and > 0, got -3"),
    ("eos", {"t1": "long"}, "wrong kind (ValueError"),
    ("gan", {"eta": -1}, "--eta must be finite and > 0, got -1"),
    ("transport", {"max_iters": -5}, "--max-iters must lie in [1, 10000000], got -5"),
]


@pytest.mark.parametrize("name, edit, message", BAD, ids=[f"{b[0]}-{b[1]}" for b in BAD])
def test_resume_refuses_an_edited_setting_in_one_line(tmp_path, capsys, name, edit, message):
    folder = _folder(tmp_path, name, **edit)
    assert cli("run", name, "--resume", folder, "--workers", "0", "--no-progress") == 2
    line = one_line(capsys.readouterr().err)
    assert f"--resume {folder!r}" in line and "config.json records a setting" in line, line
    assert message in line and "Traceback" not in line, line
    assert os.listdir(folder) == ["config.json"]  # nothing computed, nothing written


# lazy records the task its data resolved, not the --task auto that resolved it
GOOD = [("balance", {}), ("ntk", {}), ("eos", {}), ("transport", {}), ("lazy", {}),
        ("lazy", {"task": "classification", "alphas": [1.0, 10.0], "n_alpha": 7})]  # fmt: skip


@pytest.mark.parametrize("name, edit", GOOD)
def test_resume_passes_the_recorded_settings_of_a_run(tmp_path, capsys, name, edit):
    """Unedited settings pass the check: the run goes on to its next one, the SHA-256 of the
    data (which this hand-made folder lacks)."""
    folder = _folder(tmp_path, name, **edit)
    assert cli("run", name, "--resume", folder, "--workers", "0", "--no-progress") == 2
    line = one_line(capsys.readouterr().err)
    assert "recorded no SHA-256" in line and "records a setting" not in line, line


@pytest.mark.parametrize("name", ["gan", "portrait"])
def test_recheck_returns_the_recorded_settings(name):
    recorded = _recorded(name)
    args = _parse(name, "--resume", "run")
    assert json.loads(json.dumps(recheck_settings(_settings(name), args, recorded, "run"))) == (
        recorded
    )


def _settings(name):
    return importlib.import_module(f"experiments.{LAYOUT[name][0]}._cli").settings


UNUSED = [
    (["--beta", "0.5"], "--beta is not used by --optimizer gd"),
    (["--optimizer", "rmsprop", "--beta1", "0.5"], "--beta1 is not used by --optimizer rmsprop"),
    (["--optimizer", "adam", "--beta", "0.5"], "--beta is not used by --optimizer adam"),
    (["--optimizer", "rmsprop", "--beta", "0.9"], "--beta is not used by --optimizer rmsprop"),
    (["--optimizer", "momentum", "--eps", "1e-6"], "--eps is not used by --optimizer momentum"),
    (["--beta2", "0.9"], "--beta2 is not used by --optimizer gd"),
    # refused only by RMSProp's central flow, inside each task after the rest had run
    (["--optimizer", "rmsprop", "--beta2", "0"], "--beta2 must lie in (0, 1) for --optimizer"),
    # was "--beta2 must lie in [0, 1), got 1.0", and then 0 was refused as outside (0, 1)
    (["--optimizer", "rmsprop", "--beta2", "1"], "--beta2 must lie in (0, 1) for --optimizer"),
]


@pytest.mark.parametrize("argv, message", UNUSED, ids=[" ".join(u[0]) for u in UNUSED])
def test_eos_refuses_an_option_the_optimizer_does_not_use(tmp_path, capsys, argv, message):
    out = tmp_path / "run"
    assert cli("run", "eos", "--out", out, *argv, "--workers", "0", "--no-progress") == 2
    line = one_line(capsys.readouterr().err)
    assert message in line and "Traceback" not in line, line
    assert not out.exists()


def test_eos_optimizer_options_keep_their_defaults_and_values():
    settings = _settings("eos")
    s = settings(_parse("eos"))
    assert [s[k] for k in ("beta", "beta1", "beta2", "eps")] == [0.9, 0.9, None, 1e-8]
    assert settings(_parse("eos", "--optimizer", "momentum", "--beta", "0.5"))["beta"] == 0.5
    s = settings(_parse("eos", "--optimizer", "adam", "--beta1", "0.8", "--eps", "1e-6"))
    assert (s["beta1"], s["eps"], s["beta"]) == (0.8, 1e-6, 0.9)
    # resuming a momentum run at β = 0.95 without --beta keeps it (not given: no conflict)
    args = _parse("eos", "--resume", "run")
    stored = {**s, "optimizer": "momentum", "beta": 0.95}
    kept = resumed_settings(stored, "run", args, settings(args), EOS_DEFAULTS)
    assert kept["beta"] == 0.95


# gan, portrait and balance record their settings whole; an option given with --resume was
# ignored (the run went on with its recorded value, and no word): now refused in one line
CHANGED = [
    ("gan", ["--t1", "3"], "--t1 3.0 differs from the run's 30.0"),
    ("gan", ["--eta", "-1"], "--eta must be finite and > 0, got -1"),
    ("portrait", ["--alphas", "5"], "--alphas 5 differs from the run's 0.1,1.0,10.0"),
    ("balance", ["--hidden", "4,4"], "--hidden 4,4 differs from the run's 16,8"),
]


@pytest.mark.parametrize("name, argv, message", CHANGED, ids=[c[0] + c[1][0] for c in CHANGED])
def test_resume_refuses_an_option_that_changes_the_recorded_settings(
    tmp_path, capsys, name, argv, message
):
    folder = _folder(tmp_path, name)
    code = cli("run", name, "--resume", folder, *argv, "--workers", "0", "--no-progress")
    line = one_line(capsys.readouterr().err)
    assert code == 2 and f"--resume {folder!r}: {message}" in line, line
    assert os.listdir(folder) == ["config.json"]  # nothing computed, nothing written


@pytest.mark.parametrize("name", ["gan", "portrait", "balance"])
def test_resume_passes_options_that_keep_the_recorded_settings(tmp_path, name):
    """The run's own value given again (here t1 = 5, not the default), the run-folder and
    sweep options: no refusal."""
    from experiments._run_folder import refuse_changed_options

    module = importlib.import_module(f"experiments.{LAYOUT[name][0]}._cli")
    recorded = {**_recorded(name), "t1": 5.0}
    if name == "balance":  # recorded per problem; --solver is the logistic one's
        recorded["solver"] = recorded["solver"]["logistic"]
    args = _parse(name, "--resume", "run", "--t1", "5", "--workers", "0", "--no-progress")
    refuse_changed_options(module.settings, args, recorded, "run", module.add_arguments)
