"""One run per output at a time: an advisory lock on a sibling file `.NAME.lock`.

The lock is `flock` on an open file, so the kernel releases it when its holder ends in any way
(SIGKILL included): a crashed run never blocks the next one. A second run that wants the same
output while the first holds it is refused at once (exit status 2), not queued: two reports
racing to one name are a mistake to point out, not to serialise. The holder removes the lock
file before it lets go; a run that opened the file just before is told by the inode check
below to open it again.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from safeio.guard import OutputPathError


def lock_path(target) -> Path:
    target = Path(os.path.abspath(target))
    return target.parent / f".{target.name or 'root'}.lock"


class OutputLock:
    """`with OutputLock(target, flag):` holds `target`'s lock for the block, or raises
    OutputPathError naming the process that holds it. `wait=True` waits for it instead (build
    directories: concurrent builders of one configuration take turns)."""

    def __init__(self, target, flag: str = "--out", wait: bool = False):
        self.target, self.flag, self.wait = Path(target), flag, wait
        self.path = lock_path(target)
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if self.wait else fcntl.LOCK_NB))
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
                os.close(fd)
                raise OutputPathError(
                    f"{self.flag} {self.target}: another run is writing it now"
                    f"{f' (process {holder})' if holder.isdigit() else ''}; wait for it to "
                    f"finish or choose another {self.flag}"
                ) from None
            except BaseException:
                os.close(fd)
                raise
            try:  # the file we locked is still the one at that name?
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                self.fd = fd
                return
            os.close(fd)  # its holder removed it as we opened it: again

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
