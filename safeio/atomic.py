"""Atomic file writes: a temporary sibling, flushed to disk, renamed over the target.

The rename is atomic on POSIX file systems, so a reader (or the user after a crash) sees the old
file or the new one, never a part of either. Until the rename the target is untouched: a full
disk, an exception, Ctrl-C or SIGTERM while writing leave the previous file as it was and remove
the temporary one. A temporary sibling that a killed process (SIGKILL, power loss) could not
remove carries that process's id in its name; the next write of the same target removes it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from pathlib import Path


def json_default(o):
    """numpy scalars and arrays as plain JSON numbers and lists; anything else as text."""
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def alive(pid: int) -> bool:
    """Whether a process with this id exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:  # a number no pid can be
        return False
    return True


def fsync_path(path) -> None:
    """A file's data, or a directory's entries (a rename in it), on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


fsync_dir = fsync_path


def _sibling_prefix(path: Path) -> str:
    return f".{path.stem}.tmp-"


def clear_stale_siblings(path) -> None:
    """Removes temporary siblings of `path` left by processes that no longer exist."""
    path = Path(path)
    pattern = re.compile(rf"^{re.escape(_sibling_prefix(path))}(\d+)-.*{re.escape(path.suffix)}$")
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return
    for entry in entries:
        m = pattern.match(entry.name)
        if m and entry.is_file() and not alive(int(m.group(1))):
            entry.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary sibling of `path` (same folder, same suffix, so that tools that read
    the format from the name, such as matplotlib's savefig, do the right thing) for writing by
    name: onnx.save, torch.save, savefig, or open(..., "wb"). When the block ends normally the
    file is flushed to disk and renamed over `path`; when it raises, the temporary file is
    removed and `path` is as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clear_stale_siblings(path)
    fd, tmp = tempfile.mkstemp(
        prefix=f"{_sibling_prefix(path)}{os.getpid()}-", suffix=path.suffix, dir=path.parent
    )
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"nothing was written to {tmp} for {path}")
        fsync_path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600, as open() would have made it
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path, data: bytes) -> Path:
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
    return Path(path)


def write_text_atomic(path, text: str) -> Path:
    return write_bytes_atomic(path, text.encode())


def write_json_atomic(path, obj, **dumps) -> Path:
    """`obj` as indented JSON (numpy values as numbers) plus a newline; `dumps` go to
    json.dumps (e.g. allow_nan=False)."""
    dumps = {"indent": 2, "default": json_default, **dumps}
    return write_text_atomic(path, json.dumps(obj, **dumps) + "\n")
