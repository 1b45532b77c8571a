"""Result directories: what a tool may replace, and how.

Every result directory a command writes holds a marker file, `.sacbench.json`, naming the
command and the entries it wrote. `--force` replaces a directory only when that marker names the
same command and the directory holds nothing else (a file the user added, such as notes.txt,
makes it the user's again); directories written before markers existed are recognised by the
command's own file names (`legacy`). A directory that is reserved (safeio.guard) is refused
whatever the flags. Every run takes the output's lock (safeio.lock) first.

* :class:`StagedDirectory`: written as a whole, into a temporary sibling renamed into place at
  the end (the compare report, the mapper's results).
* :class:`OutputDirectory`: filled as the run goes and continued by the next run with the same
  options (the search's trials): created with its marker, or taken up again when its marker
  names the same command.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

from safeio.atomic import alive, fsync_dir, fsync_path, write_json_atomic
from safeio.guard import OutputPathError, check_reserved
from safeio.lock import OutputLock

MARKER = ".sacbench.json"


def read_marker(directory) -> dict | None:
    """The marker of a result directory, or None when it has none (or not a readable one)."""
    try:
        doc = json.loads((Path(directory) / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("tool"), str) else None


def _entries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def _listing(names: list[str]) -> str:
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def written_by(
    directory: Path, tool: str, legacy: tuple = (), legacy_markers: tuple | None = None
) -> str | None:
    """None when `directory` is one `tool` wrote and holds nothing else; otherwise why not.
    `legacy`: the names of what the tool writes, the first of them its old marker: a directory
    from before markers existed is one it wrote when it holds that file and only such names;
    with a marker, those names count as the tool's too (a run killed before it could list
    them). `legacy_markers`: the names any one of which marks such a directory (default: the
    first of `legacy`)."""
    entries = _entries(directory)
    markers = legacy[:1] if legacy_markers is None else legacy_markers
    marker = read_marker(directory)
    if marker is not None:
        if marker["tool"] != tool:
            return f"was written by {marker['tool']}, not {tool}"
        own = set(marker.get("entries") or ()) | {MARKER} | set(legacy)
    elif any(m in entries for m in markers):
        own = set(legacy)
    else:
        what = f" (no {MARKER}{''.join(f' or {m}' for m in markers)})"
        return f"holds files but is not a directory {tool} wrote{what}"
    others = [e for e in entries if e not in own]
    if others:
        return (
            f"also holds {_listing(others)}, which {tool} did not write; it is not replaced "
            f"(move {'them' if len(others) > 1 else 'it'} out or choose another --out)"
        )
    return None


@contextmanager
def signals_deferred():
    """SIGINT, SIGTERM and SIGHUP wait until the block is done (then they are delivered)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending = []
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {s: signal.signal(s, lambda n, _f: pending.append(n)) for s in sigs}
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        for n in pending[:1]:
            os.kill(os.getpid(), n)


def _fsync_tree(root: Path) -> None:
    """Every file and directory under root on disk, so the rename publishes whole files."""
    for path in sorted(root.rglob("*"), reverse=True) + [root]:
        fsync_path(path)


class _Output:
    """What both kinds share: the target, its checks and its lock."""

    def __init__(
        self,
        target,
        tool: str,
        force: bool = False,
        flag: str = "--out",
        legacy: tuple = (),
        inputs=(),
        legacy_markers: tuple | None = None,
    ):
        self.shown = str(target)
        self.legacy_markers = legacy_markers
        self.target = Path(os.path.abspath(target))
        self.tool, self.force, self.flag = tool, force, flag
        self.legacy, self.inputs = tuple(legacy), tuple(inputs)
        # the lock beside the real folder: two runs naming it through different links meet
        self.lock = OutputLock(Path(os.path.realpath(self.target.parent)) / self.target.name, flag)
        self.lock.target = Path(self.shown)  # messages name it as the user did

    def _refuse(self, why: str):
        raise OutputPathError(f"{self.flag} {self.shown}: {why}")

    def _check_path(self) -> None:
        check_reserved(self.target, self.flag, self.inputs, shown=self.shown)
        t = self.target
        above = next(p for p in t.parents if p.exists() or p == Path(p.anchor))
        if above.exists() and not above.is_dir():
            self._refuse(f"{above} is a file, not a directory")
        if t.is_symlink() and not t.exists():
            self._refuse("is a broken symbolic link")
        if t.exists() and not t.is_dir():
            self._refuse("is a file, not a directory")

    def _entries_or_refuse(self) -> list[str]:
        try:
            return _entries(self.target)
        except OSError as exc:
            self._refuse(f"cannot be read ({exc.strerror})")

    def _take_lock(self) -> None:
        try:
            self.lock.acquire()
        except OSError as exc:
            self._refuse(f"cannot be created ({exc.strerror or exc})")


class StagedDirectory(_Output):
    """A result directory written as a whole: everything goes into a temporary sibling
    (`.NAME.tmp-PID-<random>` next to NAME), which :meth:`commit` renames into place. Until then
    the target is untouched; an exception, Ctrl-C or SIGTERM removes the sibling (`with`
    block), so an interrupted run leaves the previous directory as it was and nothing else. A
    sibling that a killed run (SIGKILL) could not remove is removed by the next run.

    A target that exists and holds files is refused unless `force`; then it must be one this
    `tool` wrote (:func:`written_by`), and is replaced as a whole: moved aside, the new one
    renamed in, the old one removed only then. `flag` names the option in messages."""

    def __init__(
        self,
        target,
        force: bool = False,
        flag: str = "--out",
        tool: str = "compare_gpu_fpga",
        legacy: tuple = (),
        inputs=(),
    ):
        super().__init__(target, tool, force, flag, legacy, inputs)
        self.path: Path | None = None
        self.committed = False

    def check(self) -> None:
        """The checks that need no writing (the writing itself is tried in __enter__)."""
        self._check_path()
        if not self.target.is_dir():
            return
        entries = self._entries_or_refuse()
        if entries and not self.force:
            self._refuse(
                f"already holds {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
                f" ({_listing(entries)}); give --force to replace it as a whole, or "
                f"another {self.flag}"
            )
        if entries:
            why = written_by(self.target, self.tool, self.legacy, self.legacy_markers)
            if why:
                self._refuse(why)

    def __enter__(self) -> StagedDirectory:
        self._check_path()  # nothing is created for a reserved path
        parent = Path(os.path.realpath(self.target.parent))
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._refuse(f"cannot be created ({exc.strerror or exc})")
        self._take_lock()
        try:
            self._clear_leftovers(parent)
            self.check()
            try:
                self.path = Path(
                    tempfile.mkdtemp(prefix=f".{self.target.name}.tmp-{os.getpid()}-", dir=parent)
                )
                umask = os.umask(0o022)
                os.umask(umask)
                os.chmod(self.path, 0o777 & ~umask)  # mkdtemp's 0700 is for secrets
            except OSError as exc:
                self._refuse(
                    f"cannot be created ({exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''})"
                )
        except BaseException:
            self.lock.release()
            raise
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
            if not m or alive(int(m.group(2))):
                continue
            if m.group(1) == "old" and not self.target.exists():
                os.rename(entry, self.target)
            else:
                shutil.rmtree(entry, ignore_errors=True)

    def commit(self) -> Path:
        """Publishes the staged directory as the target (replacing an old one as a whole)."""
        write_json_atomic(
            self.path / MARKER,
            {
                "tool": self.tool,
                "entries": _entries(self.path),
                "about": "written by this workbench; --force replaces this directory only while it "
                "holds nothing but these entries",
            },
        )
        _fsync_tree(self.path)
        target = Path(os.path.realpath(self.target.parent)) / self.target.name
        with signals_deferred():  # the renames go together
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
            fsync_dir(target.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return target

    def __exit__(self, *exc) -> None:
        try:
            if not self.committed and self.path is not None:
                shutil.rmtree(self.path, ignore_errors=True)
        finally:
            self.lock.release()


class OutputDirectory(_Output):
    """A result directory filled as the run goes (`with OutputDirectory(...) as d:`): refused
    when it is reserved, or holds files and is not one `tool` wrote; otherwise created (or taken
    up again) with its marker, and locked for the block. The marker lists what is in it when the
    block ends."""

    def __init__(
        self,
        target,
        tool: str,
        flag: str = "--out",
        legacy: tuple = (),
        inputs=(),
        create: bool = True,
        legacy_markers: tuple | None = None,
    ):
        super().__init__(target, tool, False, flag, legacy, inputs, legacy_markers)
        self.create = create

    def check(self) -> None:
        self._check_path()
        if self.target.is_dir() and self._entries_or_refuse():
            why = written_by(self.target, self.tool, self.legacy, self.legacy_markers)
            if why:
                self._refuse(why)

    def __enter__(self) -> OutputDirectory:
        self._check_path()
        if not self.create and not self.target.is_dir():
            self._refuse("does not exist")
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._refuse(f"cannot be created ({exc.strerror or exc})")
        self._take_lock()
        try:
            self.check()
            try:
                self.target.mkdir(exist_ok=True)
                self._mark()
            except OSError as exc:
                self._refuse(f"cannot be written ({exc.strerror or exc})")
        except BaseException:
            self.lock.release()
            raise
        return self

    def _mark(self) -> None:
        write_json_atomic(
            self.target / MARKER,
            {
                "tool": self.tool,
                "entries": [e for e in _entries(self.target) if e != MARKER],
                "about": "written by this workbench; the same command continues it",
            },
        )

    def __exit__(self, *exc) -> None:
        try:
            if self.target.is_dir():
                self._mark()
        except OSError:
            pass
        finally:
            self.lock.release()
