"""`python cli.py ...` in a clone: the same command as the installed `roofline` (roofline/cli.py)."""

import sys

from roofline.cli import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
