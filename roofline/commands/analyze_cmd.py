"""`roofline analyze`: placeholder until its module lands (being written now)."""


def add_parser(subparsers) -> None:  # noqa: ANN001
    """Not yet wired."""
