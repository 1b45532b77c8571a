"""Writing results so that a crash or an interruption never leaves a half-written file: write
to a temporary sibling, flush it to disk, then rename over the target (atomic on POSIX)."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import tempfile
import threading
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


class OutputPathError(ValueError):
    """An output path that cannot or must not be written (exit status 2): one line."""


VIRTUAL_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))


def _fsync_tree(root: Path) -> None:
    """Every file and directory under root on disk, so the rename publishes whole files."""
    for path in sorted(root.rglob("*"), reverse=True) + [root]:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _signals_deferred():
    """SIGINT and SIGTERM wait until the block is done (then they are delivered again)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending = []
    sigs = (signal.SIGINT, signal.SIGTERM)
    before = {s: signal.signal(s, lambda n, _f: pending.append(n)) for s in sigs}
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        for n in pending[:1]:
            os.kill(os.getpid(), n)


class StagedDirectory:
    """A result directory written as a whole: everything goes into a temporary sibling
    (`.NAME.tmp-PID-<random>` next to NAME), which :meth:`commit` renames into place. Until then
    the target is untouched; an exception, Ctrl-C or SIGTERM removes the sibling (`with`
    block), so an interrupted run leaves the previous directory as it was and nothing else. A
    sibling that a killed run (SIGKILL) could not remove is removed by the next run.

    A target that exists and holds files is refused unless `force`; then it must hold a
    `marker` file (a directory this tool wrote), and is replaced as a whole: moved aside, the
    new one renamed in, the old one removed only then. `flag` names the option in messages."""

    def __init__(self, target, force: bool = False, flag: str = "--out",
                 marker: str = "report.json"):
        self.shown = str(target)
        self.target = Path(os.path.abspath(target))
        self.force, self.flag, self.marker = force, flag, marker
        self.path: Path | None = None
        self.committed = False

    def _refuse(self, why: str):
        raise OutputPathError(f"{self.flag} {self.shown}: {why}")

    def check(self) -> None:
        """The checks that need no writing (the writing itself is tried in __enter__)."""
        t = self.target
        real = Path(os.path.realpath(t))
        if any(real == r or r in real.parents for r in VIRTUAL_ROOTS):
            self._refuse(f"is under {next(r for r in VIRTUAL_ROOTS if real == r or r in real.parents)}"
                         f", a virtual file system; choose a directory on disk")
        above = next(p for p in t.parents if p.exists() or p == Path(p.anchor))
        if above.exists() and not above.is_dir():
            self._refuse(f"{above} is a file, not a directory")
        if t.is_symlink() and not t.exists():
            self._refuse("is a broken symbolic link")
        if t.exists() and not t.is_dir():
            self._refuse("is a file, not a directory")
        cwd = Path(os.path.realpath(os.getcwd()))
        if real == cwd or real in cwd.parents or real == Path(real.anchor):
            self._refuse("holds the current directory; choose a directory of its own")
        if t.is_dir():
            try:
                entries = sorted(p.name for p in t.iterdir())
            except OSError as exc:
                self._refuse(f"cannot be read ({exc.strerror})")
            if entries and not self.force:
                self._refuse(f"already holds {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} "
                             f"({', '.join(entries[:3])}{', ...' if len(entries) > 3 else ''}); "
                             f"give --force to replace it as a whole, or another {self.flag}")
            if entries and self.marker not in entries:
                self._refuse(f"holds files but no {self.marker}, so it is not a directory this "
                             f"command wrote; it is not replaced (remove it yourself or choose "
                             f"another {self.flag})")

    def __enter__(self) -> "StagedDirectory":
        parent = Path(os.path.realpath(self.target.parent))
        if parent.is_dir() and not any(r == parent or r in parent.parents
                                       for r in VIRTUAL_ROOTS):
            self._clear_leftovers(parent)
        self.check()
        try:
            parent.mkdir(parents=True, exist_ok=True)
            self.path = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.tmp-{os.getpid()}-",
                                              dir=parent))
            umask = os.umask(0o022)
            os.umask(umask)
            os.chmod(self.path, 0o777 & ~umask)          # mkdtemp's 0700 is for secrets
        except OSError as exc:
            self._refuse(f"cannot be created ({exc.strerror or exc}"
                         f"{f': {exc.filename}' if exc.filename else ''})")
        return self

    def _clear_leftovers(self, parent: Path) -> None:
        """Siblings that a run killed outright (SIGKILL, power loss) left: its staged directory
        is removed; a previous directory it had moved aside is put back if nothing took its
        place. Only those of processes that no longer exist (their pid is in the name)."""
        pattern = re.compile(rf"^\.{re.escape(self.target.name)}\.(tmp|old)-(\d+)-")
        try:
            entries = sorted(parent.iterdir())
        except OSError:
            return
        for entry in entries:
            m = pattern.match(entry.name)
            if not m or _alive(int(m.group(2))):
                continue
            if m.group(1) == "old" and not self.target.exists():
                os.rename(entry, self.target)
            else:
                shutil.rmtree(entry, ignore_errors=True)

    def commit(self) -> Path:
        """Publishes the staged directory as the target (replacing an old one as a whole)."""
        _fsync_tree(self.path)
        target = Path(os.path.realpath(self.target.parent)) / self.target.name
        with _signals_deferred():                     # the renames go together
            old = None
            if target.is_dir():
                old = target.with_name(self.path.name.replace(".tmp-", ".old-", 1))
                os.rename(target, old)
            try:
                os.rename(self.path, target)
            except BaseException:
                if old is not None:
                    os.rename(old, target)
                raise
            self.committed = True
            fd = os.open(target.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return target

    def __exit__(self, *exc) -> None:
        if not self.committed and self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
