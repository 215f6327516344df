"""`python -m experiments NAME [options]` is `gradflows run NAME [options]`."""

import sys

from ._cli import main

argv = sys.argv[1:]
if argv and argv[0] not in ("list", "run", "-h", "--help"):
    argv = ["run", *argv]
sys.exit(main(argv))
