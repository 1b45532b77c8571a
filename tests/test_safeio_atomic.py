"""safeio/atomic.py by its contract: a write goes to a temporary sibling (same folder, same
suffix, named `.<stem>.tmp-<pid>-...`), is flushed to disk and renamed over the target with the
mode open() would have given; any failure leaves the old file and no temporary one; siblings
left by dead processes are removed by the next write of the same target and nothing else is;
JSON is indented, ends in a newline and takes numpy values. (tests/test_no_data_loss.py covers
the same package against the commands: full disks, SIGKILL, --force.)"""

import fcntl
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from safeio import atomic
from safeio.atomic import (
    alive,
    atomic_path,
    clear_stale_siblings,
    fsync_path,
    json_default,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)

DEAD = 2**22 + 1  # above the largest pid Linux allows: no process has it


@pytest.fixture
def umask():
    """Sets a umask for the test and restores the previous one."""
    old = os.umask(0o022)
    os.umask(old)
    yield lambda m: os.umask(m)
    os.umask(old)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# -- json_default -------------------------------------------------------------------------------
def test_json_default_turns_numpy_values_into_plain_numbers_and_lists():
    i, f, a = json_default(np.int64(7)), json_default(np.float32(0.5)), json_default(np.arange(3))
    assert (type(i), i) == (int, 7)
    assert (type(f), f) == (float, 0.5)
    assert (type(a), a) == (list, [0, 1, 2])
    assert json_default(Path("a/b")) == "a/b"
    assert json_default({1}) == "{1}"


# -- processes and the disk ---------------------------------------------------------------------
def test_umask_reads_the_mask_and_leaves_it_set(umask):
    umask(0o027)
    assert atomic._umask() == 0o027
    assert atomic._umask() == 0o027


def test_alive_knows_live_and_impossible_pids(monkeypatch):
    assert alive(os.getpid()) is True
    assert alive(DEAD) is False
    assert alive(2**80) is False  # no pid can be this large (OverflowError)

    def denied(pid, sig):
        raise PermissionError(pid)

    monkeypatch.setattr(atomic.os, "kill", denied)
    assert alive(12345) is True  # a process we may not signal exists


def test_alive_sends_the_null_signal(monkeypatch):
    sent = []
    monkeypatch.setattr(atomic.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    assert alive(4242) is True
    assert sent == [(4242, 0)]


def test_fsync_path_syncs_that_file_read_only_and_closes_it(tmp_path, monkeypatch):
    f = tmp_path / "x.bin"
    f.write_bytes(b"abc")
    seen = []

    def fsync(fd):
        seen.append((fd, os.fstat(fd).st_ino))
        seen.append(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    fsync_path(f)
    fsync_path(tmp_path)  # a directory: its entries
    (fd, ino), mode, (dfd, dino), dmode = seen
    assert (ino, dino) == (f.stat().st_ino, tmp_path.stat().st_ino)
    assert mode == dmode == os.O_RDONLY
    for closed in (fd, dfd):
        with pytest.raises(OSError):
            os.fstat(closed)


def test_fsync_path_closes_the_file_when_fsync_fails(tmp_path, monkeypatch):
    fds = []

    def failing(fd):
        fds.append(fd)
        raise OSError("disk gone")

    monkeypatch.setattr(atomic.os, "fsync", failing)
    with pytest.raises(OSError, match="disk gone"):
        fsync_path(tmp_path)
    with pytest.raises(OSError):
        os.fstat(fds[0])


# -- stale siblings -----------------------------------------------------------------------------
def test_only_a_dead_processs_sibling_of_that_target_is_removed(tmp_path):
    target = tmp_path / "result.json"
    keep = [
        f".result.tmp-{os.getpid()}-abc.json",  # a live writer's
        f".result.tmp-{DEAD}-abc.txt",  # another suffix
        f".other.tmp-{DEAD}-abc.json",  # another target's
        ".result.tmp-x1-abc.json",  # no pid
        f"result.tmp-{DEAD}-abc.json",  # not hidden
        f"x.result.tmp-{DEAD}-abc.json",  # not at the start
        f".result.tmp-{DEAD}-abc.jsonx",  # not at the end
        "result.json",
    ]
    for n in keep:
        (tmp_path / n).write_text("x")
    (tmp_path / f".result.tmp-{DEAD + 2}-dir.json").mkdir()  # a directory is never removed
    (tmp_path / f".result.tmp-{DEAD}-abc.json").write_text("half")
    (tmp_path / f".result.tmp-{DEAD + 1}-.json").write_text("half")
    clear_stale_siblings(target)
    assert names(tmp_path) == sorted([*keep, f".result.tmp-{DEAD + 2}-dir.json"])


def test_a_leftover_another_writer_removes_first_is_no_error(tmp_path, monkeypatch):
    # two writers of one target clear the same leftover at once: the second finds it gone
    stale = tmp_path / f".r.tmp-{DEAD}-abc.txt"
    stale.write_text("half")

    def other_writer_first(pid):
        stale.unlink()
        return False

    monkeypatch.setattr(atomic, "alive", other_writer_first)
    write_text_atomic(tmp_path / "r.txt", "new")
    assert names(tmp_path) == ["r.txt"]


def test_stale_siblings_of_a_target_in_a_missing_folder_are_no_error(tmp_path):
    clear_stale_siblings(tmp_path / "nowhere" / "result.json")
    clear_stale_siblings(str(tmp_path / "result.json"))


# -- atomic_path --------------------------------------------------------------------------------
def test_the_temporary_file_is_a_hidden_sibling_with_the_pid_and_the_suffix(tmp_path):
    target = tmp_path / "plot.png"
    with atomic_path(str(target)) as tmp:
        assert isinstance(tmp, Path) and tmp.parent == tmp_path
        assert tmp.name.startswith(f".plot.tmp-{os.getpid()}-") and tmp.suffix == ".png"
        assert tmp.exists() and not target.exists()
        tmp.write_bytes(b"new")
    assert target.read_bytes() == b"new"
    assert names(tmp_path) == ["plot.png"]


def test_atomic_path_makes_the_missing_folders(tmp_path):
    target = tmp_path / "a" / "b" / "r.txt"
    write_text_atomic(target, "1")
    write_text_atomic(target, "2")  # the folders exist now
    assert target.read_text() == "2"


def test_the_target_gets_the_mode_open_would_give(tmp_path, umask):
    for mask, mode in ((0o022, 0o644), (0o027, 0o640), (0o002, 0o664)):
        umask(mask)
        target = tmp_path / f"r{mask:o}.txt"
        write_text_atomic(target, "x")
        assert stat.S_IMODE(target.stat().st_mode) == mode


def test_the_new_file_replaces_the_old_one_after_the_flush(tmp_path, monkeypatch):
    target = tmp_path / "r.txt"
    target.write_text("old")
    synced = []

    def fsync_path(p):
        synced.append((Path(p), Path(p).is_dir() or Path(p).read_text(), target.read_text()))

    monkeypatch.setattr(atomic, "fsync_path", fsync_path)
    monkeypatch.setattr(atomic, "fsync_dir", fsync_path)
    write_text_atomic(target, "new")
    (tmp, content, before), (folder, _, after) = synced
    assert tmp.parent == tmp_path and tmp.name.startswith(".r.tmp-")
    assert (content, before) == ("new", "old")  # the data is on disk before the rename
    assert (folder, after) == (tmp_path, "new")  # the rename is on disk after it


@pytest.mark.parametrize("fault", [KeyboardInterrupt, SystemExit, ValueError])
def test_a_failed_block_leaves_the_old_file_and_no_temporary_one(tmp_path, fault):
    target = tmp_path / "r.txt"
    target.write_text("old")
    with pytest.raises(fault), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise fault()
    assert target.read_text() == "old" and names(tmp_path) == ["r.txt"]


def test_a_block_that_writes_nothing_is_an_error_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "r.txt"
    target.write_text("old")
    nothing = r"nothing was written to .*\.r\.tmp-.* for .*r\.txt"
    with pytest.raises(FileNotFoundError, match=nothing), atomic_path(target) as tmp:
        tmp.unlink()
    assert target.read_text() == "old" and names(tmp_path) == ["r.txt"]


def test_a_block_that_removes_its_file_and_fails_raises_its_own_error(tmp_path):
    with pytest.raises(ValueError, match="mine"), atomic_path(tmp_path / "r.txt") as tmp:
        tmp.unlink()
        raise ValueError("mine")
    assert names(tmp_path) == []


def test_a_failed_rename_leaves_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "r.txt"
    target.write_text("old")

    def no_replace(a, b):
        raise OSError("read-only")

    monkeypatch.setattr(atomic.os, "replace", no_replace)
    with pytest.raises(OSError, match="read-only"):
        write_text_atomic(target, "new")
    assert target.read_text() == "old" and names(tmp_path) == ["r.txt"]


def test_a_write_removes_a_dead_writers_leftover(tmp_path):
    stale = tmp_path / f".r.tmp-{DEAD}-abc.txt"
    stale.write_text("half")
    write_text_atomic(tmp_path / "r.txt", "new")
    assert names(tmp_path) == ["r.txt"]


# -- the write functions ------------------------------------------------------------------------
def test_write_bytes_atomic_writes_the_bytes_and_returns_the_path(tmp_path):
    target = str(tmp_path / "b.bin")
    out = write_bytes_atomic(target, b"\x00\xff\n")
    assert out == Path(target) and isinstance(out, Path)
    assert Path(target).read_bytes() == b"\x00\xff\n"


def test_write_text_atomic_writes_utf8_and_returns_the_path(tmp_path):
    out = write_text_atomic(tmp_path / "t.txt", "µs ≤ 2\n")
    assert out == tmp_path / "t.txt"
    assert out.read_bytes() == "µs ≤ 2\n".encode()


def test_write_json_atomic_indents_by_two_ends_in_a_newline_and_takes_numpy(tmp_path):
    obj = {"a": np.int32(1), "b": [np.float64(0.25)], "c": np.array([1, 2])}
    out = write_json_atomic(tmp_path / "r.json", obj)
    assert out == tmp_path / "r.json"
    text = out.read_text()
    assert text == json.dumps({"a": 1, "b": [0.25], "c": [1, 2]}, indent=2) + "\n"


def test_write_json_atomic_passes_its_options_to_json_dumps(tmp_path):
    out = write_json_atomic(tmp_path / "r.json", {"b": 1, "a": 2}, indent=None, sort_keys=True)
    assert out.read_text() == '{"a": 2, "b": 1}\n'
    with pytest.raises(ValueError):
        write_json_atomic(tmp_path / "n.json", {"x": float("nan")}, allow_nan=False)
    assert names(tmp_path) == ["r.json"]
    write_json_atomic(tmp_path / "d.json", {"p": Path("x")}, default=lambda o: "custom")
    assert json.loads((tmp_path / "d.json").read_text()) == {"p": "custom"}
