"""Build directories (simulators, compiled libraries) that are either complete or absent.

A build runs in a temporary sibling `.NAME.tmp-PID-<random>`; only when it has succeeded is a
stamp file written into it and the sibling renamed to NAME. A build that is interrupted (SIGTERM,
SIGKILL, a full disk) leaves at most that sibling, which the next build of the same directory
removes; NAME itself never holds a half-built tree (truncated precompiled headers, objects
newer than their sources but cut short), so the next run simply builds again. The stamp holds
a digest of everything the build read: a directory whose stamp differs is rebuilt, one whose
stamp matches is used as it is. Builders of the same directory take turns under its lock.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from safeio.atomic import alive
from safeio.lock import OutputLock

STAMP = ".build-complete"


def is_complete(bdir, stamp: str) -> bool:
    """Whether `bdir` holds a finished build made from the inputs `stamp` describes."""
    try:
        return (Path(bdir) / STAMP).read_text() == stamp
    except OSError:
        return False


def _clear_leftovers(bdir: Path) -> None:
    pattern = re.compile(rf"^\.{re.escape(bdir.name)}\.(tmp|old)-(\d+)-")
    for entry in bdir.parent.iterdir():
        m = pattern.match(entry.name)
        if m and not alive(int(m.group(2))):
            shutil.rmtree(entry, ignore_errors=True)


def staged_build(bdir, stamp: str, build: Callable[[Path], None]) -> Path:
    """`bdir` holding a complete build for `stamp`: as it is when it already does, otherwise made
    by `build(tmp)` in a temporary sibling and renamed into place. `build` raises on failure
    (the sibling is removed and `bdir` left as it was)."""
    bdir = Path(os.path.abspath(bdir))
    bdir.parent.mkdir(parents=True, exist_ok=True)
    with OutputLock(bdir, "build directory", wait=True):
        if is_complete(bdir, stamp):
            return bdir
        _clear_leftovers(bdir)
        tmp = Path(tempfile.mkdtemp(prefix=f".{bdir.name}.tmp-{os.getpid()}-", dir=bdir.parent))
        try:
            build(tmp)
            (tmp / STAMP).write_text(stamp)
            old = None
            if bdir.exists():
                old = bdir.with_name(tmp.name.replace(".tmp-", ".old-", 1))
                os.rename(bdir, old)
            os.rename(tmp, bdir)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return bdir
