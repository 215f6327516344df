"""The `gradflows` command: `gradflows list`, `gradflows run NAME [options]`."""

import argparse
import importlib
import os
import sys

from . import _interrupt
from ._options import UsageError, protect_negative_values

# name -> package; each defines DESCRIPTION, add_arguments(parser) and run(args) -> int (or
# main(args), where `run` is a Python API), and imports cheaply (no JAX, diffrax or
# matplotlib until it is called).
EXPERIMENTS = {
    "lazy": "experiments.lazy",
    "portrait": "experiments.portraits",
    "balance": "experiments.balance",
    "ntk": "experiments.ntk",
    "eos": "experiments.eos",
    "gan": "experiments.gan",
    "transport": "experiments.transport",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv=None) -> int:
    """Entry point of `gradflows`. Only the experiment that is run gets imported. Ctrl-C is
    handled from the start (`experiments._interrupt`): exit 130, never a traceback."""
    with _interrupt.handling():
        try:
            return _main(argv)
        except (KeyboardInterrupt, _interrupt.Interrupted):  # before a run started
            print(f"\n{_interrupt.line()}", file=sys.stderr)
            return 130


def _main(argv) -> int:
    top = _Parser(prog="gradflows", description="Exact gradient flows of training objectives.")
    sub = top.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="name the experiments")
    run = sub.add_parser("run", help="run an experiment: gradflows run NAME --help")
    run.add_argument(
        "experiment", nargs="?", choices=list(EXPERIMENTS), metavar="NAME",
        help=f"the experiment: {', '.join(EXPERIMENTS)}",
    )  # fmt: skip
    run.add_argument("options", nargs=argparse.REMAINDER, help="the experiment's options")
    args = top.parse_args(argv)
    if args.command == "run" and args.experiment is None:  # argparse named `options` too
        run.error(
            f"name the experiment to run, one of {', '.join(EXPERIMENTS)}: gradflows run NAME "
            "(gradflows run NAME --help for its options)"
        )
    if args.command == "list":
        for name, module in EXPERIMENTS.items():
            print(f"{name:10s} {importlib.import_module(module).DESCRIPTION}")
        return 0
    mod = importlib.import_module(EXPERIMENTS[args.experiment])
    parser = _Parser(prog=f"gradflows run {args.experiment}", description=mod.DESCRIPTION)
    mod.add_arguments(parser)
    options = parser.parse_args(protect_negative_values(args.options))
    _interrupt.check()
    return _run(args.experiment, mod, options)


def _run(name, mod, options) -> int:
    try:
        return getattr(mod, "main", mod.run)(options)
    except UsageError as e:
        _discard()
        print(f"gradflows run {name}: error: {e}", file=sys.stderr)
        return 2
    except (_interrupt.Interrupted, KeyboardInterrupt):
        print(f"\n{_interrupt.line()}", file=sys.stderr)
        return 130
    except Exception as e:  # a computation that failed: one line; GRADFLOWS_DEBUG=1 re-raises
        _discard()
        if os.environ.get("GRADFLOWS_DEBUG"):
            raise
        message = " ".join(str(e).split()) or type(e).__name__
        print(f"gradflows run {name}: failed: {message}", file=sys.stderr)
        return 1


def _discard() -> None:
    """An error before any result: remove the folder the run made (it holds only config.json)."""
    run = _interrupt.current_run()
    if run is not None:
        run.discard_if_unused()


if __name__ == "__main__":
    sys.exit(main())
