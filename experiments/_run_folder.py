"""The one run-folder policy of every experiment.

- `--out DIR` names a new folder: an existing, non-empty DIR is refused (with the command that
  continues it), so a folder never mixes two runs' files.
- `--resume DIR` continues a run: DIR must hold the `config.json` of the same experiment;
  finished work is kept and only what is missing is computed. The settings it records are
  checked by the experiment's own checks of its options (`recheck_settings`): a hand-edited
  value they refuse is refused, naming the flag.
- The folder is made only when the run starts (after every option and the data have been
  checked), and `config.json` is its first file: bad input leaves no folder behind, and an
  error before any result removes the folder it made.
- Every file is written atomically (temporary file, then rename): a folder never holds a
  half-written file, and results.json only names files that exist.
"""

import argparse
import datetime
import glob
import json
import os
import shutil
import tempfile

from ._atomic import TEMP_PREFIX
from ._options import UsageError, flag

CONFIG = "config.json"


def add_run_folder_options(parser, experiment: str, *, progress: bool = True):
    """The output group: `--out DIR` (a new folder), `--resume DIR`, `--no-progress`."""
    g = parser.add_argument_group("run folder")
    g.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help=f"new run folder (default runs/{experiment}-<time>); an existing non-empty "
        "folder is refused",
    )
    g.add_argument(
        "--resume",
        default=None,
        metavar="DIR",
        help="continue an interrupted run in DIR with its recorded settings; finished work is kept",
    )
    if progress:
        g.add_argument("--no-progress", action="store_true", help="no progress bars")
    return g


class RunFolder:
    """The run folder of one `gradflows run NAME`: where, whether resumed, what is kept.

    `kept` is a short phrase the experiment updates as work finishes ("2 of 6 α finished"), or
    an object whose `str()` says it when asked; the interrupt line reports it.
    """

    def __init__(self, experiment: str, path: str, resumed: bool):
        self.experiment = experiment
        self.path = path
        self.resumed = resumed
        self.started = resumed
        self.kept: str | None = None

    @classmethod
    def choose(cls, experiment: str, out: str | None, resume: str | None) -> "RunFolder":
        """Check `--out`/`--resume` (nothing is created yet). Raises `UsageError`."""
        for name, path in (("--out", out), ("--resume", resume)):
            if path is not None and not path.strip():  # '' was refused only when made
                raise UsageError(f"{name} is empty: give a folder path")
        if resume is not None:
            if out is not None and os.path.abspath(out) != os.path.abspath(resume):
                raise UsageError("give either --out (a new run) or --resume (an old one), not both")
            folder = cls(experiment, resume, resumed=True)
            folder.stored_config()  # refuses a folder without a readable config.json
            return folder
        if out is None:
            stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
            out = base = os.path.join("runs", f"{experiment}-{stamp}")
            k = 1
            while os.path.exists(out):
                out, k = f"{base}-{k}", k + 1
        elif os.path.exists(out) and not os.path.isdir(out):  # was "... is not empty"
            raise UsageError(f"--out {out!r} exists and is not a folder: choose a new --out")
        elif os.path.exists(out) and os.listdir(out):
            hint = (
                f"continue it with --resume {out} or choose a new --out"
                if os.path.exists(os.path.join(out, CONFIG))
                else "choose a new --out"
            )
            raise UsageError(f"--out {out!r} already exists and is not empty: {hint}")
        _check_creatable(out)
        return cls(experiment, out, resumed=False)

    def stored_config(self) -> dict:
        """The run's config.json (for `--resume`). Raises `UsageError` naming `--resume`."""
        if not os.path.isdir(self.path):
            what = "not a folder" if os.path.exists(self.path) else "no such folder"
            raise UsageError(f"--resume {self.path!r}: {what}")
        path = os.path.join(self.path, CONFIG)
        try:
            with open(path, encoding="utf-8") as f:
                config = json.load(f)
            if not isinstance(config, dict):
                raise ValueError
        except (OSError, ValueError):
            raise UsageError(
                f"--resume {self.path!r}: no readable {CONFIG} of a run of {self.experiment}"
            ) from None
        recorded = config.get("experiment", self.experiment)
        if not isinstance(recorded, str) or not recorded.isidentifier():  # not a run's name
            raise UsageError(
                f"--resume {self.path!r}: its {CONFIG} names no experiment "
                f"({recorded!r}); not the config.json of a run of {self.experiment}"
            )
        if recorded != self.experiment:
            raise UsageError(
                f"--resume {self.path!r} holds a run of {recorded}, not of {self.experiment}: "
                f"resume it with gradflows run {recorded} --resume {self.path}"
            )
        return config

    def start(self, config: dict) -> None:
        """Make the folder and write `config.json` (a new run); a resumed run keeps its own."""
        from . import _interrupt

        _interrupt.check()  # Ctrl-C before the run started: no folder at all
        if self.resumed:
            return
        try:
            os.makedirs(self.path, exist_ok=True)
        except OSError as e:
            raise UsageError(
                f"--out {self.path!r}: cannot create the folder ({e.strerror})"
            ) from None
        from ._files import write_json

        write_json(self.file(CONFIG), {"experiment": self.experiment, **config})
        self.started = True

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def holds_results(self) -> bool:
        """Whether anything besides config.json (a result, a part, a checkpoint) is kept."""
        if not os.path.isdir(self.path):
            return False
        return any(n != CONFIG and not n.startswith(TEMP_PREFIX) for n in os.listdir(self.path))

    def discard_if_unused(self) -> bool:
        """Remove the folder this run made if it holds nothing but config.json (an error before
        any result); returns whether it was removed."""
        if self.resumed or not self.started or self.holds_results():
            return False
        shutil.rmtree(self.path, ignore_errors=True)
        return True

    def remove_temporaries(self) -> None:
        """Remove the temporary files of writes cut short (ours and the flows' checkpoints')."""
        for pattern in (f"{TEMP_PREFIX}*", "tmp*.npz"):
            for path in glob.glob(os.path.join(glob.escape(self.path), pattern)):
                try:
                    os.remove(path)
                except OSError:
                    pass

    def resume_command(self) -> str:
        return f"gradflows run {self.experiment} --resume {self.path}"

    def interrupted_line(self) -> str:
        """The one honest line printed on Ctrl-C: what is kept and how to go on."""
        if not self.started:
            return "interrupted before the run folder was made: nothing to keep"
        checkpoints = glob.glob(os.path.join(glob.escape(self.path), "*.checkpoint.npz"))
        kept = []
        if self.kept:  # a phrase, or an object whose str() reads the folder now
            kept.append(str(self.kept))
        if checkpoints and "checkpoint" not in " ".join(kept):
            kept.append("a checkpoint of the solve in progress")
        what = " and ".join(kept) if kept else "its settings only (config.json), no results yet"
        return f"interrupted: {self.path} keeps {what}; resume with: {self.resume_command()}"


def _check_creatable(out: str) -> None:
    """Refuse now, naming `--out`, a folder that could not be made when the run starts (after
    the data and, for lazy, the constants of Σ: an unwritable --out used to fail only then).
    Probed by a temporary folder in the nearest existing parent, removed at once."""
    parent = os.path.abspath(out)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise UsageError(f"--out {out!r}: {parent!r} is a file, not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(dir=parent, prefix=".gradflows-probe-"))
    except OSError as e:
        raise UsageError(
            f"--out {out!r}: cannot create a folder in {parent!r} ({e.strerror or e})"
        ) from None


def check_recorded(config, folder: str, keys, where: str = "") -> None:
    """Refuse a resumed run whose `config` (its config.json, or the `where` entry of it) is
    not a dict holding every one of `keys`: a hand-made or truncated file used to fail deep
    inside the run ("object of too small depth", a bare KeyError). Raises `UsageError`
    naming the file and the missing entries."""
    missing = [key for key in keys if key not in config] if isinstance(config, dict) else keys
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        shown = ", ".join(missing[:5]) + more
        raise UsageError(
            f"--resume {folder!r}: {os.path.join(folder, CONFIG)} records no {shown}"
            f"{f' in its {where}' if where else ''} "
            "(hand-made, truncated or from an older gradflows): start a new run"
        )


def resumed_settings(config: dict, folder: str, args, s: dict, defaults: dict) -> dict:
    """The settings recorded in a resumed run's `config` (one per key of `defaults`, the
    options' defaults); an option given now (not at its default) must agree with them.
    A setting whose default is None (an option added later: the library's value) may be
    missing; any other missing one is refused (`check_recorded`). Raises `UsageError`
    naming the flag that differs, or the file and the missing settings."""
    check_recorded(config, folder, [key for key in defaults if defaults[key] is not None])
    stored = {key: config.get(key, defaults[key]) for key in defaults}
    for key in defaults:  # None: an option not given (its default is filled in later)
        given = getattr(args, key)
        if given is not None and given != defaults[key] and s[key] != stored[key]:
            if key not in config:
                recorded = "was not recorded by the run (written before the option existed)"
            elif stored[key] is None:  # said "differs from the run's None"
                recorded = "was not given to the run (unset there)"
            else:
                recorded = f"differs from the run's {stored[key]}"
            raise UsageError(
                f"--resume {folder!r}: {flag(key)} {s[key]} {recorded}; drop the option or "
                "start a new run"
            )
    return stored


def recheck_settings(settings, args, recorded: dict, folder: str):
    """Check the settings `recorded` in a resumed run's config.json with the experiment's own
    `settings(args)`, the checks of its options: it is called on `args` with each recorded
    value in place of its option's (entries that name no option are left out). A hand-edited
    config.json (`"t1": -3`) used to be run as recorded, or to fail inside a task. Returns
    what `settings` returns. Raises `UsageError` naming `--resume`, the file and the flag."""
    path = os.path.join(folder, CONFIG)
    given = {key: value for key, value in recorded.items() if hasattr(args, key)}
    try:
        return settings(argparse.Namespace(**{**vars(args), **given}))
    except UsageError as e:
        problem = " ".join(str(e).split())
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:
        problem = f"a setting of the wrong kind ({type(e).__name__}: {' '.join(str(e).split())})"
    raise UsageError(
        f"--resume {folder!r}: {path} records a setting the options refuse ({problem}); "
        "start a new run"
    )


def open_run(name: str, out, resume, args, s: dict, defaults: dict, settings=None, adapt=None):
    """`(folder, stored, s)`: the `RunFolder` of experiment `name` (`RunFolder.choose`), its
    stored config.json on `--resume` (None for a new run), and the settings: `s`, or on
    `--resume` those the run recorded (`resumed_settings`), checked by the experiment's
    `settings` (`recheck_settings`; on `adapt(recorded)` where recorded values do not read
    back as options). Raises `UsageError`."""
    folder = RunFolder.choose(name, out, resume)
    stored = folder.stored_config() if folder.resumed else None
    if stored is not None:
        s = resumed_settings(stored, folder.path, args, s, defaults)
        if settings is not None:
            recheck_settings(settings, args, adapt(dict(s)) if adapt else s, folder.path)
    return folder, stored, s


def open_recorded_run(name: str, args, settings, keys, add_arguments) -> tuple["RunFolder", dict]:
    """`(folder, s)` of an experiment that records its settings whole, as config.json's
    "settings": a new run's `settings(args)`, or on `--resume` the recorded settings, each of
    `keys` required (`check_recorded`), checked by `settings` (`recheck_settings`), and an
    option given now that would change them refused (`refuse_changed_options`;
    `add_arguments` builds the experiment's parser, for the options' defaults).
    Raises `UsageError`."""
    folder = RunFolder.choose(name, args.out, args.resume)
    if not folder.resumed:
        return folder, settings(args)
    config = folder.stored_config()
    check_recorded(config, folder.path, ["settings"])
    check_recorded(config["settings"], folder.path, list(keys), where="settings")
    recheck_settings(settings, args, config["settings"], folder.path)
    refuse_changed_options(settings, args, config["settings"], folder.path, add_arguments)
    return folder, config["settings"]


def refuse_changed_options(settings, args, recorded: dict, folder: str, add_arguments) -> None:
    """On `--resume` of an experiment that records its settings whole: refuse an option
    given now (not at its default) that would change the recorded settings. gan, portrait
    and balance ran `--resume DIR --t1 3` with the run's t1 and no word. Each such option is
    put in place of its recorded value and `settings` compared; an option that does not
    change them (`--workers`, `--no-progress`) passes. Raises `UsageError` naming the flag."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    defaults = vars(parser.parse_args([]))
    run = {**vars(args), **{key: value for key, value in recorded.items() if hasattr(args, key)}}
    kept = settings(argparse.Namespace(**run))
    for key, value in vars(args).items():
        if key not in defaults or value == defaults[key] or value == run[key]:
            continue
        try:
            changed = settings(argparse.Namespace(**{**run, key: value})) != kept
        except UsageError as e:  # the value itself is refused: say so, on --resume
            raise UsageError(f"--resume {folder!r}: {e}") from None
        if changed:
            was = run[key]
            was = ",".join(map(str, was)) if isinstance(was, list) else was
            now = ",".join(map(str, value)) if isinstance(value, list) else value
            raise UsageError(
                f"--resume {folder!r}: {flag(key)} {now} differs from the run's {was}; drop "
                "the option or start a new run"
            )


def check_resumed_digest(config: dict | None, folder: str, key: str, digest: str, what: str):
    """On `--resume` (`config` the stored config.json, None for a new run): refuse, naming
    the folder, unless the run recorded `digest` under `key` (a SHA-256 of `what`: the data
    the finished parts were computed from). A run that recorded none is refused as well:
    its parts cannot be told apart from another data set's, and are never mixed with new
    ones. Raises `UsageError`."""
    if config is None or config.get(key) == digest:
        return
    if key not in config:
        raise UsageError(
            f"--resume {folder!r}: the run recorded no SHA-256 of {what} (an older gradflows "
            "made it), so its parts cannot be matched to the data now; start a new run"
        )
    raise UsageError(
        f"--resume {folder!r}: {what} differ from the run's (SHA-256); its finished parts "
        "were computed from other data and are not mixed with new ones: start a new run"
    )
