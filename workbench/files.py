"""Writing results so that a crash or an interruption never leaves a half-written file: write
to a temporary sibling, flush it to disk, then rename over the target (atomic on POSIX)."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np


def json_default(o):
    """numpy scalars and arrays as plain JSON numbers and lists; anything else as text."""
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


def write_text_atomic(path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())        # mkstemp's 0600, as open() would have made it
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path, obj) -> Path:
    return write_text_atomic(path, json.dumps(obj, indent=2, default=json_default) + "\n")
