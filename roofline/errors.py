"""One exception hierarchy for everything a user can get wrong.

The CLI catches `RooflineError` at its boundary and prints the message as one line with exit status 2.
Anything else escaping is a bug in roofline, not a user error, and is allowed to show its traceback.
"""

import re


class RooflineError(Exception):
    """A problem the user can fix; the message says what was expected and how to fix it."""


class UsageError(RooflineError):
    """Command-line arguments that do not parse: a missing or unknown option, a value of the wrong type."""


class UnknownName(RooflineError):
    """A hardware profile, model, op or precision name that does not exist."""


class ProfileError(RooflineError):
    """A hardware profile file that cannot be read or does not match the schema."""


class ShapeError(RooflineError):
    """Shapes that cannot be combined (negative output size, channels not divisible by groups...)."""


class DoesNotFit(RooflineError):
    """A batch whose memory footprint exceeds the device's capacity."""


class MissingDependency(RooflineError):
    """An optional dependency (torch, matplotlib, pynvml) is needed for this command."""


class FabricError(RooflineError):
    """A job that the named node cannot hold (too many GPUs, nodes without NICs, a link its profile lacks)."""


class CalibrationMismatch(RooflineError):
    """A calibration taken on other hardware or another software environment."""


MAX_MESSAGE_CHARS = 1000
"""Longest error line printed: a message echoes what the user typed, which may be a 100 kB argument."""
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def one_line(message: str) -> str:
    """`message` as one printable line: line breaks and other whitespace runs become one space, remaining
    control characters their escapes, and the whole at most MAX_MESSAGE_CHARS long."""
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1], " ".join(message.split()))
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 3] + "..."


def did_you_mean(name: str, candidates: list[str], limit: int = 3) -> str:
    """Suffix for an unknown-name message: ' (did you mean: a, b?)' or ''."""
    import difflib

    close = difflib.get_close_matches(name.lower(), [c.lower() for c in candidates], n=limit, cutoff=0.5)
    if not close:
        return ""
    by_lower = {c.lower(): c for c in candidates}
    return f" (did you mean: {', '.join(by_lower[c] for c in close)}?)"
