"""The `gradflows` command: cheap listing, one run-folder policy, one way to read options."""

import argparse
import importlib
import json
import os
import subprocess
import sys

import pytest

from experiments import _cli
from tests.helpers import ROOT, cli, one_line

# Options that make each experiment tiny (used where an experiment must get past validation).
TINY = {
    "lazy": ["--width", "4", "--n-train", "6", "--n-test", "0", "--t1", "0.1", "--n-times", "4",
             "--alphas", "10", "--no-progress", "--workers", "0", "--solver", "tsit5"],
    "balance": ["--parts", "gd", "--n-train", "20", "--hidden", "3,2", "--etas", "0.2,0.1",
                "--gd-t1", "2", "--n-save", "4", "--workers", "0"],
    "portrait": ["--figures", "seed", "--grid", "5"],
    "ntk": ["--widths", "2,4", "--seeds", "2", "--depth", "1", "--n", "4", "--cond-depth", "2",
            "--no-progress"],
    "eos": ["--data", "digits", "--activation", "tanh", "--output-scale", "0.1",
            "--n-train", "20", "--width", "4", "--etas", "0.8", "--t1", "8", "--flows",
            "gradient", "--uv-points", "4", "--uv-steps", "10", "--no-progress", "--workers", "0"],
    "gan": ["--dirac", "gan", "--mixture", "gan", "--mixture-t1", "1", "--saves", "2",
            "--width", "2", "--samples", "8", "--t1", "2", "--no-progress", "--workers", "0"],
    "transport": ["--n", "6", "--eps", "1", "--plan-eps", "1", "--flow-n", "3", "--t1", "0.2",
                  "--no-progress", "--workers", "0"],
}  # fmt: skip


def test_list_and_help_import_neither_jax_nor_numpy_nor_dask():
    code = (
        "import sys, time; t = time.perf_counter(); from experiments import _cli\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()): _cli.main(['list'])\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: _cli.main(['--help'])\n"
        "    except SystemExit: pass\n"
        "heavy = sorted(m for m in ('diffrax', 'matplotlib', 'jax', 'equinox', 'numpy', 'dask',\n"
        "                           'distributed') if m in sys.modules)\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_list_names_every_experiment(capsys):
    assert cli("list") == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == list(_cli.EXPERIMENTS)


@pytest.mark.parametrize("name", list(TINY))
def test_every_experiment_refuses_an_existing_run_folder(name, tmp_path, capsys):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"experiment": name}))
    (folder / "results.json").write_text("{}")
    assert cli("run", name, *TINY[name], "--out", folder) == 2
    err = one_line(capsys.readouterr().err)
    assert "--out" in err and f"--resume {folder}" in err
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "results.json"]


@pytest.mark.parametrize("name", list(TINY))
def test_resume_refuses_a_folder_without_a_run(name, tmp_path, capsys):
    assert cli("run", name, "--resume", tmp_path) == 2
    assert f"no readable config.json of a run of {name}" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("name", list(TINY))
@pytest.mark.parametrize("extra", [{}, {"settings": {"seed": 0}}, {"seed": 0, "settings": 3}])
def test_resume_of_a_hand_made_config_names_the_file_and_what_it_lacks(
    name, extra, tmp_path, capsys
):
    # eos used to fail as "object of too small depth for desired array", balance and
    # portrait as "failed: 'settings'"
    (tmp_path / "config.json").write_text(json.dumps({"experiment": name, **extra}))
    assert cli("run", name, "--resume", tmp_path) == 2
    err = capsys.readouterr().err
    prefix = f"gradflows run {name}: error: --resume {str(tmp_path)!r}: "
    assert err.startswith(prefix + f"{tmp_path / 'config.json'} records no ")
    assert err.endswith(" (hand-made, truncated or from an older gradflows): start a new run\n")
    assert err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]


@pytest.mark.parametrize("name", list(TINY))
def test_resume_of_a_missing_folder_says_no_such_folder(name, tmp_path, capsys):
    missing = str(tmp_path / "nowhere")
    assert cli("run", name, "--resume", missing) == 2
    assert (
        capsys.readouterr().err
        == f"gradflows run {name}: error: --resume {missing!r}: no such folder\n"
    )
    assert not os.path.exists(missing)


@pytest.mark.parametrize(
    "name, argv, says",
    [
        ("lazy", ["--rtol", "1e-15"], "--rtol must lie in [1e-14, 1)"),
        ("lazy", ["--atol", "-1"], "--atol must be >= 0"),
        ("lazy", ["--max-steps", "0"], "--max-steps must be >= 1"),
        ("portrait", ["--rtol", "1e-15"], "--rtol must lie in [1e-14, 1)"),
        ("balance", ["--rtols", "1e-15,1e-8"], "--rtols must lie in [1e-14, 1)"),
        ("balance", ["--homogeneous-max-steps", "0"], "--homogeneous-max-steps must be >= 1"),
    ],
)
def test_solver_settings_are_checked_by_the_library_rule_before_anything(
    name, argv, says, tmp_path, capsys
):
    assert cli("run", name, *argv, "--out", tmp_path / "x") == 2
    assert says in one_line(capsys.readouterr().err)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("name", ["lazy", "portrait"])
def test_the_solver_options_default_to_the_library_settings(name):
    # The CLI writes no defaults of its own: not given, a tolerance is None, and the one
    # flows.SolveSettings built from the options holds the library's defaults.
    import flows
    from experiments._options import SOLVERS

    assert set(SOLVERS) <= set(flows.SOLVERS)
    parser = argparse.ArgumentParser()
    importlib.import_module(_cli.EXPERIMENTS[name]).add_arguments(parser)
    args = parser.parse_args([])
    assert args.rtol is None and args.atol is None and getattr(args, "max_steps", None) is None
    library = flows.SolveSettings()
    if name == "lazy":
        from experiments.lazy._cli import LAZY_CHUNKS, settings

        solve = settings(args)["solve"]
        # exprk4 for smooth activations (the default gelu), tsit5 for kinked ones; exprk4's
        # α in LAZY_CHUNKS chunks (fewer step ends at chunk ends than the library's 20)
        assert solve == library.replace(solver="exprk4", chunks=LAZY_CHUNKS)
        relu = settings(parser.parse_args(["--activation", "relu"]))["solve"]
        assert relu == library.replace(solver="tsit5")
        given = settings(parser.parse_args(["--rtol", "1e-7", "--max-steps", "9"]))
        assert given["solve"] == solve.replace(rtol=1e-7, max_steps=9)
        assert (given["rtol"], given["atol"]) == (1e-7, library.atol)  # recorded resolved
    else:
        from experiments.portraits._cli import settings

        s = settings(args)
        assert (s["rtol"], s["atol"]) == (library.rtol, library.atol)


@pytest.mark.parametrize(
    "name, argv, says",
    [
        ("lazy", ["--alphas", "-1,10"], "--alphas must be > 0, got -1"),
        ("lazy", ["--alphas", "1", "-3"], "--alphas must be > 0, got -3"),
        ("lazy", ["--alphas", "1,x"], "--alphas: 'x' is not a number"),
        ("portrait", ["--alphas", "0.1,1,-10"], "--alphas must be > 0, got -10"),
        ("portrait", ["--scales", "0.1", "x"], "--scales: 'x' is not a number"),
        ("portrait", ["--w0", "1,2,3"], "--w0 takes 2 values"),
        ("balance", ["--etas", "0.1,-1"], "--etas must be > 0, got -1"),
        ("balance", ["--etas", "0.1", "-1"], "--etas must be > 0, got -1"),
        ("lazy", ["--classes", "3"], "--classes takes 2 values"),
        ("balance", ["--classes", "3,3"], "--classes must be two different digits"),
        ("lazy", ["--n-train", "1"], "--n-train must lie in [2, "),
        ("balance", ["--n-train", "5000"], "--n-train (5000, >= 2) plus --n-test (0)"),
        ("ntk", ["--widths", "8,-16"], "--widths must lie in [1, 100000], got -16"),
        ("ntk", ["--widths", "8", "x"], "--widths: 'x' is not a whole number"),
        ("lazy", ["--alphas", "1,,10"], "--alphas: an empty entry in '1,,10'"),
        ("balance", ["--etas", "0.1,"], "--etas: an empty entry in '0.1,'"),
        ("lazy", ["--alphas", "1,1"], "--alphas: each value once, got 1,1"),
        ("balance", ["--rtols", "1e-8,1e-8"], "--rtols: each value once"),
        ("balance", ["--parts", "gd,gd"], "--parts: each value once"),
        ("portrait", ["--scales", "0.1,0.1"], "--scales: each value once"),
        ("portrait", ["--figures", "seed,seed"], "--figures: each value once"),
        ("ntk", ["--widths", "16,16"], "--widths: each value once"),
    ],
)
def test_list_options_parse_alike_and_errors_name_the_flag(name, argv, says, tmp_path, capsys):
    assert cli("run", name, *argv, "--out", tmp_path / "x") == 2
    assert says in one_line(capsys.readouterr().err)
    assert not (tmp_path / "x").exists()


def test_list_options_accept_commas_and_spaces_alike(tmp_path):
    from experiments import portraits

    def parsed(*argv):
        import argparse

        parser = argparse.ArgumentParser()
        portraits.add_arguments(parser)
        from experiments._options import protect_negative_values

        return portraits._cli.settings(parser.parse_args(protect_negative_values(list(argv))))

    assert (
        parsed("--alphas", "0.1,1,10")["alphas"] == parsed("--alphas", "0.1", "1", "10")["alphas"]
    )
    assert parsed("--w0", "-0.5,1")["w0"] == parsed("--w0", "-0.5", "1")["w0"] == [-0.5, 1.0]


@pytest.mark.parametrize("name", list(TINY))
def test_out_naming_a_file_says_it_is_not_a_folder(name, tmp_path, capsys):
    # /dev/null or a file was "already exists and is not empty"
    path = tmp_path / "a-file"
    path.write_text("kept")
    assert cli("run", name, *TINY[name], "--out", path) == 2
    assert capsys.readouterr().err == (
        f"gradflows run {name}: error: --out {str(path)!r} exists and is not a folder: "
        "choose a new --out\n"
    )
    assert path.read_text() == "kept"


@pytest.mark.parametrize("recorded", [3, None, "lazy; rm -rf"])
def test_resume_of_a_config_naming_no_experiment_is_refused_as_such(recorded, tmp_path, capsys):
    # {"experiment": 3} said "holds a 3 run ...: gradflows run 3 --resume DIR"
    (tmp_path / "config.json").write_text(json.dumps({"experiment": recorded}))
    assert cli("run", "lazy", "--resume", tmp_path) == 2
    assert capsys.readouterr().err == (
        f"gradflows run lazy: error: --resume {str(tmp_path)!r}: its config.json names no "
        f"experiment ({recorded!r}); not the config.json of a run of lazy\n"
    )


def test_run_without_an_experiment_names_them_not_argparse_internals(capsys):
    # said "the following arguments are required: experiment, options"
    with pytest.raises(SystemExit) as info:
        _cli.main(["run"])
    assert info.value.code == 2
    assert capsys.readouterr().err == (
        "gradflows run: error: name the experiment to run, one of lazy, portrait, balance, ntk, "
        "eos, gan, transport: gradflows run NAME (gradflows run NAME --help for its options)\n"
    )


def test_resume_of_another_experiments_run_names_both_and_the_command(tmp_path, capsys):
    # said "holds a eos run, not a lazy run"
    (tmp_path / "config.json").write_text(json.dumps({"experiment": "eos", "eta": 0.1}))
    assert cli("run", "lazy", "--resume", tmp_path) == 2
    assert capsys.readouterr().err == (
        f"gradflows run lazy: error: --resume {str(tmp_path)!r} holds a run of eos, not of "
        f"lazy: resume it with gradflows run eos --resume {tmp_path}\n"
    )


@pytest.mark.parametrize("name", list(TINY))
def test_an_out_that_cannot_be_made_is_refused_before_any_work(name, tmp_path, capsys):
    # was found only when the folder was made: for lazy after the data and Σ's constants
    # (7.7 s on the default digits for --out /proc/x)
    (tmp_path / "file").write_text("")
    out = str(tmp_path / "file" / "run")
    assert cli("run", name, "--out", out) == 2
    assert capsys.readouterr().err == (
        f"gradflows run {name}: error: --out {out!r}: {str(tmp_path / 'file')!r} is a file, "
        "not a folder\n"
    )
    # '' was refused only when the folder was made, after lazy's Σ constants, in two lines
    for given in ("--out", "--resume"):
        assert cli("run", name, given, "") == 2
        assert capsys.readouterr().err == (
            f"gradflows run {name}: error: {given} is empty: give a folder path\n"
        )
    out = "/proc/gradflows-run"  # a folder nobody can make a folder in, not even root
    assert cli("run", name, "--out", out) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gradflows run {name}: error: --out {out!r}: cannot create a folder")
    assert err.count("\n") == 1


def test_resume_names_an_option_the_old_run_did_not_record():
    """A run folder written before an option existed has no value for it: resuming with that
    option given is refused with a message that says so (not "differs from the run's None")."""
    from experiments._options import UsageError
    from experiments._run_folder import resumed_settings

    defaults = {"seed": 0, "n_alpha": None}
    args = argparse.Namespace(seed=0, n_alpha=13)
    with pytest.raises(UsageError, match="--n-alpha 13 was not recorded by the run"):
        resumed_settings({"seed": 0}, "old", args, {"seed": 0, "n_alpha": 13}, defaults)
    args = argparse.Namespace(seed=1, n_alpha=None)
    with pytest.raises(UsageError, match="--seed 1 differs from the run's 0"):
        resumed_settings({"seed": 0}, "old", args, {"seed": 1, "n_alpha": None}, defaults)
    # recorded unset (the run gave --alphas): said "--n-alpha 3 differs from the run's None"
    args = argparse.Namespace(seed=0, n_alpha=3)
    with pytest.raises(UsageError, match=r"--n-alpha 3 was not given to the run \(unset there\)"):
        resumed_settings(
            {"seed": 0, "n_alpha": None}, "old", args, {"seed": 0, "n_alpha": 3}, defaults
        )


def test_a_bad_solver_flag_lists_names_not_python_objects(capsys):
    # said "... or a flows.Auto/flows.Kvaerno5", which no flag can take
    from experiments._options import UsageError, solve_settings

    with pytest.raises(UsageError) as info:
        solve_settings({"solver": "--drift-solvers"}, solver="foo")
    assert str(info.value).startswith("--drift-solvers must be one of ('auto', 'tsit5'")
    assert str(info.value).endswith("'exprk4', 'rkc'), got 'foo'")


@pytest.mark.parametrize("name", list(TINY))
def test_run_help_says_what_options_do_not_when_they_changed(name, capsys):
    # --n-alpha said "13: half-decades, the default before 2026-12-03"
    assert cli("run", name, "--help") == 0
    text = capsys.readouterr().out
    assert "--resume" in text and "before 20" not in text and "2026" not in text
