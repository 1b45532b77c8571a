"""RTL images in parallel (workbench/rtl_shards.py, `--rtl-jobs`, `--address`): shards are
contiguous and in order, and a sharded run, in local processes or as Ray tasks, gives exactly
the one-process run's results (every layer's output, every instruction's cycles and activity).
The simulator is the compare job's own build for the zoo SAC model (shared with
tests/test_compare.py and tb/test_accelerator_tb_wrapper.py).

Supervision, tested for real on one image of the zoo SAC model: a simulator killed (SIGSEGV),
stopped (SIGSTOP) or past its wall-clock limit ends the compare job with exit 3 naming the shard
and the image; SIGINT and SIGTERM of the job end it with 130 and 143. Every time, no process of
the run stays alive, no temporary file stays behind and an earlier report is left as it was."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from fpga.compiler import compile_network, fitted_config
from models import zoo
from models.datasets import load_for_network
from models.onnx import load_network
from workbench import rtl_shards
from workbench.commands import compare as compare_cmd

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def test_shard_bounds_are_contiguous_balanced_and_in_order():
    for n in range(1, 12):
        for jobs in range(1, 6):
            b = rtl_shards.shard_bounds(n, jobs)
            assert len(b) == min(n, jobs)
            assert b[0][0] == 0 and b[-1][1] == n
            assert all(b[k][1] == b[k + 1][0] for k in range(len(b) - 1))
            sizes = [hi - lo for lo, hi in b]
            assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


@pytest.fixture(scope="module")
def sac_job(tmp_path_factory):
    net = load_network(zoo.path("sac_digits"))
    prog = compile_network(net, fitted_config(net, 8, 8, 64))
    x, _ = load_for_network("digits", net, split="test")
    work = tmp_path_factory.mktemp("rtl")
    serial = rtl_shards.run(prog, x[:2], "verilator", 1, work / "serial", progress=False)
    return prog, x[:2], serial, work


def assert_same(a: dict, b: dict):
    assert len(a["results"]) == len(b["results"])
    for k, (ra, rb) in enumerate(zip(a["results"], b["results"], strict=True)):
        assert ra["segments"] == rb["segments"], f"image {k}: cycles or activity differ"
        assert ra["outputs"].keys() == rb["outputs"].keys()
        for i in ra["outputs"]:
            assert np.array_equal(ra["outputs"][i], rb["outputs"][i]), f"image {k}, layer {i}"


def test_local_shards_equal_one_process(sac_job):
    prog, x, serial, work = sac_job
    assert serial["jobs"] == 1
    sharded = rtl_shards.run(prog, x, "verilator", 2, work / "two", progress=False)
    assert sharded["jobs"] == 2 and [s["images"] for s in sharded["shards"]] == [1, 1]
    assert_same(serial, sharded)


def test_ray_shards_equal_one_process(sac_job):
    pytest.importorskip("ray")
    prog, x, serial, work = sac_job
    sharded = rtl_shards.run(prog, x, "verilator", 2, work / "ray", address="local", progress=False)
    assert sharded["jobs"] == 2
    assert_same(serial, sharded)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--rtl-jobs", "0"], "--rtl-jobs must be at least 1"),
        (["--address", " "], "--address must name a Ray cluster"),
    ],
)
def test_bad_sharding_options_exit_2_with_one_line(args, message, capsys, tmp_path):
    code = compare_cmd.main(
        ["--model", str(zoo.path("sac_digits")), "--images", "1", "--out", str(tmp_path), *args]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0]


def test_failed_simulator_build_exits_3_and_keeps_the_log(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(rtl_shards, "TOPLEVEL", "no_such_top")
    out = tmp_path / "out"
    code = compare_cmd.main(
        ["--model", str(zoo.path("sac_digits")), "--images", "1", "--rtl-images", "1", "--out", str(out)]
    )
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress bar
    assert code == 3 and last.startswith(
        "sacbench compare: error: building the verilator simulator of no_such_top failed"
    )
    log = tmp_path / "out.rtl_failure.log"  # next to the report directory, not in it
    assert log.exists() and last.endswith(f"simulator log: {log}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.rtl_failure.log"]


# -- supervision ---------------------------------------------------------------------------------
def processes() -> dict:
    """pid -> (parent pid, state, command line) of every process."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline") as f:
                cmd = f.read().replace("\0", " ").strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(name)] = (int(fields[1]), fields[0], cmd)
    return table


def descendants(pid: int, table: dict | None = None) -> dict:
    """pid -> command line of every process below `pid` (in `table`, default a fresh one)."""
    table, found, todo = processes() if table is None else table, {}, [pid]
    while todo:
        p = todo.pop()
        for child, (parent, _state, cmd) in table.items():
            if parent == p and child not in found:
                found[child] = cmd
                todo.append(child)
    return found


def alive(pids) -> list:
    """Those of `pids` still running (a zombie is not)."""
    table = processes()
    return [p for p in pids if p in table and table[p][1] != "Z"]


def simulator_of(kids: dict, table: dict) -> int | None:
    """The simulator among a compare job's processes `kids` (its `descendants` in `table`):
    the child of a shard's worker process."""
    # a shard's worker, not the worker of a supervised build (`--build`: its children are
    # Verilator, make and the compilers)
    workers = [p for p, cmd in kids.items() if "workbench.rtl_shards" in cmd and "--build" not in cmd]
    # by its program: before the simulator a worker also runs short helpers (the cocotb runner
    # calls `verilator` itself, a perl script), and a signal to one of those finds it gone
    sims = [
        p
        for p in kids
        if table.get(p, (None,))[0] in workers
        and os.path.basename(kids[p].split(" ")[0]) in ("vvp", rtl_shards.TOPLEVEL)
    ]
    return sims[0] if sims else None


class SignalOnceRunning(threading.Thread):
    """Sends `sig` to the simulator of process `pid` once it has run a moment; records every
    process of the run it saw."""

    def __init__(self, pid: int, sig: int, target: str = "simulator"):
        super().__init__(daemon=True)
        self.pid, self.sig, self.target = pid, sig, target
        self.seen, self.sent = {}, False
        self.done = threading.Event()  # set by the test once the run has ended

    def run(self):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not self.done.is_set():
            table = processes()
            kids = descendants(self.pid, table)
            self.seen.update(kids)
            sim = simulator_of(kids, table)
            if sim is not None:
                # at once: one SAC image on Verilator lasts only ~0.3 s after the simulator
                # appears, and a signal after the run's end would find nothing to stop
                time.sleep(0.02)
                self.seen.update(descendants(self.pid))
                try:
                    os.kill(sim if self.target == "simulator" else self.pid, self.sig)
                except ProcessLookupError:  # it ended in the meantime: look again
                    continue
                self.sent = True
                return
            time.sleep(0.05)


def old_report(tmp_path):
    """An earlier report directory that a failed or interrupted run must leave as it is."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text('{"old": true}\n')
    return out


def assert_left_as_before(tmp_path, out, failure_log: bool):
    assert json.loads((out / "report.json").read_text()) == {"old": True}
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["out", "out.rtl_failure.log"][: 1 + failure_log], left  # no temp siblings


SAC_ONE_IMAGE = [
    "--model",
    str(zoo.path("sac_digits")),
    "--images",
    "1",
    "--rtl-images",
    "1",
    "--rtl-jobs",
    "1",
    "--force",
]


@pytest.mark.parametrize(
    "sig, words",
    [
        (signal.SIGSEGV, r"failed at image (\d+): the simulator was killed by SIGSEGV"),
        (signal.SIGSTOP, r"is stopped \(SIGSTOP\?\) at image (\d+)"),
    ],
)
def test_killed_or_stopped_simulator_exits_3_naming_shard_and_image(
    sig, words, monkeypatch, capsys, tmp_path
):
    monkeypatch.setattr(rtl_shards, "STOPPED_GRACE_S", 1.0)
    out = old_report(tmp_path)
    watcher = SignalOnceRunning(os.getpid(), sig)
    watcher.start()
    # 16 images keep the simulator alive for seconds, so that the watcher finds it even on a
    # loaded machine (one image can be over before a slow poll sees it)
    try:
        code = compare_cmd.main([*SAC_ONE_IMAGE, "--images", "16", "--rtl-images", "16", "--out", str(out)])
    finally:
        watcher.done.set()
        watcher.join()
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert watcher.sent and code == 3, last
    m = re.search(words, last)
    assert "shard 0 (images 0..15)" in last and m and int(m.group(1)) < 16, last
    assert not alive(watcher.seen), watcher.seen
    assert_left_as_before(tmp_path, out, failure_log=True)


def test_wall_clock_limit_exits_3_naming_shard_and_image(capsys, tmp_path):
    out = old_report(tmp_path)
    before = set(descendants(os.getpid()))
    # 16 images (~0.2 s each after a ~1 s start): the 1 s limit lands mid-run on any machine
    # (with one image, a quiet machine could finish the image just before the limit)
    code = compare_cmd.main(
        [*SAC_ONE_IMAGE, "--images", "16", "--rtl-images", "16", "--rtl-timeout", "1", "--out", str(out)]
    )
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 3 and "shard 0 (images 0..15) did not finish within 1 s" in last, last
    m = re.search(r"--rtl-timeout\); it was at image (\d+)", last)
    assert m and int(m.group(1)) < 16, last
    assert set(descendants(os.getpid())) <= before  # the simulator was ended
    assert_left_as_before(tmp_path, out, failure_log=True)


def test_cycle_watchdog_exits_3_naming_image_and_instruction(monkeypatch, capsys, tmp_path):
    """The cycle watchdog inside the simulator, through the whole compare job: a budget of 50
    cycles (RTL_WATCHDOG_CYCLES) stops the first run long before its end."""
    monkeypatch.setenv("RTL_WATCHDOG_CYCLES", "50")
    out = old_report(tmp_path)
    code = compare_cmd.main([*SAC_ONE_IMAGE, "--out", str(out)])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 3, last
    assert "did not finish within 50 cycles (the watchdog); the decoder is at instruction " in last
    assert last.startswith(
        "sacbench compare: error: RTL simulation (verilator) of shard 0 "
        "(images 0..0) failed at image 0: RunTimeout: the run from pc 0 "
    ), last
    assert_left_as_before(tmp_path, out, failure_log=True)


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1.5"])
def test_bad_watchdog_cap_exits_2_before_any_work(value, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("RTL_WATCHDOG_CYCLES", value)
    out = old_report(tmp_path)
    code = compare_cmd.main([*SAC_ONE_IMAGE, "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "RTL_WATCHDOG_CYCLES (environment) must be a positive whole number" in err[0]
    assert_left_as_before(tmp_path, out, failure_log=False)


def _default_sigint():
    """A job started from a background shell (CI scripts, nohup) inherits SIGINT ignored, and
    Python then keeps ignoring it, as a background job should; the test wants Ctrl-C's case."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(
    "sig, code, words",
    [
        (signal.SIGTERM, 143, "sacbench compare: terminated (SIGTERM)"),
        (signal.SIGINT, 130, "sacbench compare: interrupted (SIGINT)"),
    ],
)
def test_sigint_and_sigterm_end_the_simulators_and_leave_no_files(sig, code, words, tmp_path):
    out = old_report(tmp_path)
    # 16 RTL images (~0.2 s each on a quiet machine): the signal lands mid-run, not after it
    job = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "scripts" / "compare_gpu_fpga.py"),
            *SAC_ONE_IMAGE,
            "--images",
            "16",
            "--rtl-images",
            "16",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        preexec_fn=_default_sigint,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    watcher = SignalOnceRunning(job.pid, sig, target="job")
    watcher.start()
    try:
        _, err = job.communicate(timeout=300)
    finally:
        watcher.done.set()
        watcher.join()
    assert watcher.sent and job.returncode == code, err
    assert err.strip().splitlines()[-1] == words
    assert "Traceback" not in err
    assert not alive(watcher.seen), watcher.seen
    assert_left_as_before(tmp_path, out, failure_log=False)


# a compare job that builds its simulator from scratch, in a build root of its own
_FRESH_BUILD_JOB = """
import sys
from pathlib import Path
import tb.sim
tb.sim.BUILD = Path(sys.argv[1])
from workbench.commands import compare
sys.exit(compare.main(sys.argv[2:]))
"""


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_during_the_first_build_ends_make_and_the_compilers(sig, code, tmp_path):
    """The first Verilator build runs in a process group of its own, which the job ends as a
    whole: the compilers make started do not go on building after the job has exited. (ccache
    off, so that the compilers run long enough to be caught.)"""
    out = old_report(tmp_path)
    job = subprocess.Popen(
        [sys.executable, "-c", _FRESH_BUILD_JOB, str(tmp_path / "build"), *SAC_ONE_IMAGE, "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "CCACHE_DISABLE": "1"},
        preexec_fn=_default_sigint,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen, deadline = {}, time.monotonic() + 240
    while time.monotonic() < deadline and job.poll() is None:
        seen.update(descendants(job.pid))
        if any("cc1plus" in cmd for cmd in seen.values()):
            job.send_signal(sig)
            break
        time.sleep(0.05)
    _, err = job.communicate(timeout=60)
    compilers = [p for p, cmd in seen.items() if "cc1plus" in cmd]
    assert compilers and job.returncode == code, (err, seen)
    assert "Traceback" not in err
    time.sleep(0.2)  # the job has exited: its build must be gone by now
    assert not alive(seen), {p: seen[p] for p in alive(seen)}
    assert json.loads((out / "report.json").read_text()) == {"old": True}
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build", "out"]  # no temp siblings


def test_a_stopped_compiler_in_the_first_build_exits_3(tmp_path):
    """A compiler of the first build stopped (SIGSTOP) does not hang the job: after
    STOPPED_GRACE_S the build's group is ended, exit 3 in one line, nothing left running."""
    out = old_report(tmp_path)
    job = subprocess.Popen(
        [sys.executable, "-c", _FRESH_BUILD_JOB, str(tmp_path / "build"), *SAC_ONE_IMAGE, "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "CCACHE_DISABLE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen, deadline = {}, time.monotonic() + 240
    while time.monotonic() < deadline and job.poll() is None:
        running = descendants(job.pid)
        seen.update(running)
        compilers = [p for p, cmd in running.items() if "cc1plus" in cmd]
        if compilers:
            try:
                os.kill(compilers[0], signal.SIGSTOP)
                break
            except ProcessLookupError:  # that file's compile ended meanwhile: the next one
                pass
        time.sleep(0.05)
    _, err = job.communicate(timeout=120)
    assert job.returncode == 3, err
    last = err.strip().splitlines()[-1]
    assert "the verilator build of accelerator_tb_wrapper is stopped (SIGSTOP?)" in last, last
    time.sleep(0.2)
    assert not alive(seen), {p: seen[p] for p in alive(seen)}
    assert json.loads((out / "report.json").read_text()) == {"old": True}


# -- scratch directories on the RAM disk ----------------------------------------------------------
def _dead_pid() -> int:
    """The id of a process that has ended (reused only after the kernel's whole pid range)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_scratch_of_an_ended_process_is_removed_and_nothing_else(tmp_path):
    """rtl_shard.<pid>.* of a process that has ended is removed; this tool's directories of
    live processes, its older unnamed ones, other names, files and links are left."""
    dead = _dead_pid()
    stale = tmp_path / f"rtl_shard.{dead}.k2j3h4g5"
    kept = [
        tmp_path / f"rtl_shard.{os.getpid()}.abcdefgh",  # this process's
        tmp_path / f"rtl_shard.{os.getppid()}.abcdefgh",  # a live process's
        tmp_path / "rtl_shard_k2j3h4g5",  # the old name: whose?
        tmp_path / f"rtl_shardx{dead}.abcdefgh",
        tmp_path / f"other.{dead}.abcdefgh",
    ]
    for d in [stale, *kept]:
        d.mkdir()
        (d / "sim.log").write_text("x")
    (tmp_path / f"rtl_shard.{dead}.afile").write_text("a file")
    (tmp_path / f"rtl_shard.{dead}.alink").symlink_to(kept[0])
    assert rtl_shards.remove_stale_scratch(tmp_path) == [stale]
    assert not stale.exists() and all((d / "sim.log").exists() for d in kept)
    assert (tmp_path / f"rtl_shard.{dead}.afile").is_file()
    assert (tmp_path / f"rtl_shard.{dead}.alink").is_symlink()


def test_scratch_of_a_killed_compare_is_removed_by_the_next_run(tmp_path):
    """SIGKILL of a compare job while its simulator runs leaves its scratch directory on the
    RAM disk (nothing of the job can run any more); the next run's first simulator removes
    it. The directory's name holds the job's process id."""
    if not (rtl_shards.RAM_DISK.is_dir() and os.access(rtl_shards.RAM_DISK, os.W_OK)):
        pytest.skip("no writable RAM disk")
    job = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "scripts" / "compare_gpu_fpga.py"),
            *SAC_ONE_IMAGE,
            "--images",
            "16",
            "--rtl-images",
            "16",
            "--out",
            str(tmp_path / "out"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    watcher = SignalOnceRunning(job.pid, signal.SIGKILL, target="job")
    watcher.start()
    job.wait(timeout=300)
    watcher.done.set()
    watcher.join()
    assert watcher.sent and job.returncode == -signal.SIGKILL
    left = list(rtl_shards.RAM_DISK.glob(f"rtl_shard.{job.pid}.*"))
    assert left, "the killed job's scratch directory is not there to be found"
    deadline = time.monotonic() + 10  # its shard worker ends itself (orphaned)
    while alive(watcher.seen) and time.monotonic() < deadline:
        time.sleep(0.1)
    code = compare_cmd.main([*SAC_ONE_IMAGE, "--out", str(tmp_path / "again")])
    assert code == 0
    assert not any(p.exists() for p in left), left
