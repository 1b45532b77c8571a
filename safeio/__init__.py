"""Files the tools write, written so that nothing a user has is lost or half-overwritten.

* :mod:`safeio.atomic`: every result file goes to a temporary sibling, is flushed to disk and
  renamed over its target; the old file survives any failure (a full disk, Ctrl-C, a crash).
* :mod:`safeio.guard`: the output paths a tool refuses whatever the flags: the current
  directory and the directories above it, the file-system root, virtual file systems, an input
  of the run and a directory that holds one.
* :mod:`safeio.lock`: one run per output at a time; a second one is refused, not queued.
* :mod:`safeio.staged`: a result directory written as a whole, replaced (`--force`) only when
  its marker file says this tool wrote it and it holds nothing else.
* :mod:`safeio.build`: a build directory made in a temporary sibling and renamed when complete,
  so an interrupted build is simply rebuilt.

Every package may import it (it imports nothing of the project); docs/architecture.md.
"""

from safeio.atomic import (
    atomic_path,
    clear_stale_siblings,
    fsync_dir,
    json_default,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)
from safeio.build import staged_build
from safeio.guard import VIRTUAL_ROOTS, OutputPathError, check_file_target, check_reserved
from safeio.lock import OutputLock
from safeio.staged import MARKER, OutputDirectory, StagedDirectory, read_marker

__all__ = [
    "MARKER",
    "VIRTUAL_ROOTS",
    "OutputDirectory",
    "OutputLock",
    "OutputPathError",
    "StagedDirectory",
    "atomic_path",
    "check_file_target",
    "check_reserved",
    "clear_stale_siblings",
    "fsync_dir",
    "json_default",
    "read_marker",
    "staged_build",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_text_atomic",
]
