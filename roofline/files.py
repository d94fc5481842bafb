"""Writing a file the user named (`--out`, `--save`, `--plot`): never replacing one without `--force`, never
leaving half of one.

The content goes to a temporary file in the target's own directory (the same filesystem, so the final rename
is atomic), is flushed to disk, and then replaces the target with `os.replace`. A failure at any point, an
interrupt included, removes the temporary file and leaves the target exactly as it was: a reader sees either
the old file or the whole new one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from roofline.errors import RooflineError


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc)


def is_file(path: Path, what: str, error: type[RooflineError] = RooflineError) -> bool:
    """Path.is_file for a path the user named, with the OS's refusals (a name over 255 bytes, a path through a
    file) as `error`: '<path>: not usable as a <what> path (<reason>)'."""
    try:
        return path.is_file()
    except (OSError, ValueError) as exc:
        raise error(f"{path}: not usable as a {what} path ({_reason(exc)})") from None


def check_target(path: Path, flag: str, force: bool, parent_must_exist: bool = True) -> None:
    """Refuse, before any work is done, a target that exists (unless `force`), is a directory, or sits in a
    directory that does not exist; `flag` names the option in the message."""
    try:
        if path.is_dir():
            raise RooflineError(f"{flag} {path}: is a directory; name a file")
        if path.exists() and not force:
            raise RooflineError(f"{flag} {path}: file exists; pass --force to replace it")
        if parent_must_exist and not path.parent.is_dir():
            raise RooflineError(f"{flag} {path}: directory {path.parent} does not exist")
    except (OSError, ValueError) as exc:
        raise RooflineError(f"{flag} {path}: not usable as a file name ({_reason(exc)})") from None


def make_parent(path: Path) -> None:
    """Create `path`'s directory (and its parents) for a file roofline chooses the place of, such as the default
    calibrated directory on first use; a directory the user named is checked by `check_target` instead."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RooflineError(f"{path.parent}: cannot create ({_reason(exc)})") from None


def write_atomically(path: Path, write: Callable[[IO[bytes]], None], flag: str, force: bool) -> None:
    """Call `write` on a temporary file beside `path`, then rename it over `path` (see the module docstring)."""
    check_target(path, flag, force)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".partial", dir=path.parent)
    except OSError as exc:
        raise RooflineError(f"{flag} {path}: cannot write ({_reason(exc)})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise RooflineError(f"{flag} {path}: cannot write ({_reason(exc)})") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text_atomically(path: Path, text: str, flag: str, force: bool) -> None:
    """`write_atomically` for UTF-8 text."""
    write_atomically(path, lambda f: f.write(text.encode("utf-8")), flag, force)
