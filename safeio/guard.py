"""Output paths a tool refuses whatever the flags say (`--force` included).

A result directory is written as a whole and may be replaced as a whole; so it must never be a
directory the user keeps other things in by nature: the current directory or one above it, the
root, a virtual file system (/proc, /sys, /dev), an input of the run, or a directory that holds
an input (the model it reads, its data). A result file must not be an input either.
"""

from __future__ import annotations

import os
from pathlib import Path

VIRTUAL_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))


class OutputPathError(ValueError):
    """An output path that cannot or must not be written (exit status 2): one line."""


def _real(path) -> Path:
    return Path(os.path.realpath(path))


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def input_paths(inputs) -> list[tuple[str, Path]]:
    """(how the user named it, real path) of each input that is a path on disk (a data set name
    such as `digits` is not)."""
    out = []
    for name in inputs or ():
        if name is None:
            continue
        p = Path(str(name))
        if p.exists():
            out.append((str(name), _real(p)))
    return out


def check_reserved(
    target, flag: str = "--out", inputs=(), kind: str = "directory", shown: str | None = None
) -> None:
    """Raises OutputPathError when `target` is a path no tool may write or replace (see the
    module's text). `inputs`: the run's input paths (names that are no path are skipped);
    `shown`: the path as the user gave it (for the message)."""
    shown = str(target) if shown is None else shown
    real = _real(target)
    root = next((r for r in VIRTUAL_ROOTS if _under(real, r)), None)
    if root is not None:
        raise OutputPathError(
            f"{flag} {shown}: is under {root}, a virtual file system; choose a {kind} on disk"
        )
    if real == Path(real.anchor):
        raise OutputPathError(f"{flag} {shown}: is the root directory; choose a {kind} of its own")
    cwd = _real(os.getcwd())
    if real == cwd or real in cwd.parents:
        raise OutputPathError(f"{flag} {shown}: holds the current directory; choose a {kind} of its own")
    home = os.environ.get("HOME")
    if home and kind == "directory" and _real(home) == real:
        raise OutputPathError(f"{flag} {shown}: is the home directory; choose a directory of its own")
    for name, path in input_paths(inputs):
        if path == real:
            raise OutputPathError(f"{flag} {shown}: is an input of this run ({name}); choose another {kind}")
        if real in path.parents:
            raise OutputPathError(
                f"{flag} {shown}: holds an input of this run ({name}); choose another {kind}"
            )


def check_file_target(target, flag: str = "--out", inputs=()) -> None:
    """An output file: not reserved (check_reserved), not a directory, in a folder that is one
    (or can be made)."""
    check_reserved(target, flag, inputs, kind="file")
    t = Path(target)
    if t.is_dir():
        raise OutputPathError(f"{flag} {target}: is a directory, not a file")
    above = next(p for p in t.absolute().parents if p.exists() or p == Path(p.anchor))
    if not above.is_dir():
        raise OutputPathError(f"{flag} {target}: {above} is a file, not a directory")
