"""The `gradflows` command: `gradflows list`, `gradflows run NAME [options]`."""

import argparse
import importlib
import sys

from ._common import UsageError

# name -> module; each module defines DESCRIPTION, add_arguments(parser) and run(args) -> int.
EXPERIMENTS = {
    "lazy": "experiments.lazy",
    "portrait": "experiments.portrait",
    "balance": "experiments.balance",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gradflows", description="Exact gradient flows of training objectives.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="name the experiments")
    run = sub.add_parser("run", help="run an experiment")
    runs = run.add_subparsers(dest="experiment", required=True, parser_class=_Parser)
    for name, module in EXPERIMENTS.items():
        mod = importlib.import_module(module)
        p = runs.add_parser(name, help=mod.DESCRIPTION, description=mod.DESCRIPTION)
        mod.add_arguments(p)
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "list":
        for name, module in EXPERIMENTS.items():
            print(f"{name:10s} {importlib.import_module(module).DESCRIPTION}")
        return 0
    mod = importlib.import_module(EXPERIMENTS[args.experiment])
    try:
        return mod.run(args)
    except UsageError as e:
        print(f"gradflows run {args.experiment}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished results are kept in the run folder", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
