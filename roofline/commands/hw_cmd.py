"""`roofline hw`: placeholder until its module lands (being written now)."""


def add_parser(subparsers) -> None:
    """Not yet wired."""
