"""RTL images in parallel: the images are cut into contiguous shards, each shard runs in its own
simulator process (tb/rtl_job.py on the bench wrapper rtl/accelerator_tb_wrapper.v, program
loaded once per process), and the results are merged back in image order. Every image runs
alone through the same program, so the merged results equal those of a single process.

The simulator is built once (tb.sim.build, cached under build/sim/, its log under
build/sim/logs/ where it stays after the run). Shards run as local processes, or as tasks on a
Ray cluster (`address`: "local" starts a Ray instance on this machine, anything else is handed
to ``ray.init(address=...)``; the project must be installed at the same path on every node,
where each node builds the simulator once).

What the console shows (stderr): one line for the run; one line when a build really starts,
with the time the last one took on this machine (tb.sim.build_message); then a progress bar
whose time left is measured on the shards' finished images (workbench.eta.Lanes): none until
the first image is done.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from safeio.atomic import alive
from workbench.eta import Lanes, about
from workbench.process_groups import (
    StopWatch,
    end_group_when_orphaned,
    kill_group,
)
from workbench.ray_session import signal_name

if TYPE_CHECKING:  # the worker process (`python -m`) imports no more than it needs
    import numpy as np

    from fpga.compiler import Program

TOPLEVEL = "accelerator_tb_wrapper"


class ShardError(RuntimeError):
    """The simulator could not be built, or a shard's simulation failed: the message names
    which; `log` holds the simulator's (or the build's) output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


def _log_text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def default_jobs() -> int:
    """Cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def shard_bounds(n: int, jobs: int) -> list[tuple[int, int]]:
    """Contiguous [lo, hi) slices of n images for min(jobs, n) shards, sizes differing by at
    most one, in image order."""
    k = max(1, min(jobs, n))
    cuts = [n * i // k for i in range(k + 1)]
    return [(cuts[i], cuts[i + 1]) for i in range(k)]


# simulated cycles per second of the whole 8x8 top on this kind of machine (2 cores, quiet),
# per simulator (benchmarks/sim_speed.py measures them; the speed falls about in proportion to
# the array's cells): for the shards' wall-clock limit only, a hang guard many times this
# estimate. What the console shows is measured on the run itself (workbench.eta.Lanes).
SPEED_8X8 = {"verilator": 180_000, "icarus": 600}


def estimate_s(prog: Program, sim: str, images: int, jobs: int) -> float:
    """A rough wall time of `images` images on `sim` in `jobs` shards (start-up excluded)."""
    cfg = prog.config
    speed = SPEED_8X8[sim] * 64 / (cfg.rows * cfg.cols)
    return prog.cycles_per_image() * -(-images // max(1, jobs)) / speed


def build(prog: Program, sim: str, log_file: Path | None = None) -> Path:
    """The simulator of the bench wrapper for prog's array, built if need be (the build says
    so on stderr when it really starts); its log goes to `log_file`, by default tb.sim's
    build/sim/logs/<top>.<sim>-<digest>.log, which stays after the run."""
    return _supervised_build(TOPLEVEL, sim, prog.config.hdl_parameters(), log_file)


def _supervised_build(toplevel: str, sim: str, parameters: dict, log_file: Path | None) -> Path:
    """tb.sim.build in a child Python process that leads a process group of its own
    (`python -m workbench.rtl_shards --build`), so that Verilator, make and every compiler
    they start belong to that group: Ctrl-C or SIGTERM of the compare job (or any exception
    here) ends the whole group, not only the direct child. The child ends its group too if
    this process dies first."""
    from tb import sim as tb_sim

    with tempfile.TemporaryDirectory(prefix="rtl_build_") as tmp:
        spec = {
            "toplevel": toplevel,
            "sim": sim,
            "parameters": parameters,
            "log": str(log_file) if log_file else None,
            "build_root": str(tb_sim.BUILD),  # a caller's choice of build root
            "result": str(Path(tmp) / "result.json"),
            "started": str(Path(tmp) / "started.json"),  # written when a build really starts
        }
        started = _Started(Path(spec["started"]))
        (Path(tmp) / "spec.json").write_text(json.dumps(spec))  # scratch: in a temporary directory
        with open(Path(tmp) / "worker.log", "wb") as wlog:  # log: the build worker's output
            proc = subprocess.Popen(
                [sys.executable, "-m", "workbench.rtl_shards", "--build", str(Path(tmp) / "spec.json")],
                stdin=subprocess.DEVNULL,
                stdout=wlog,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            code = _wait_unless_stopped(proc, f"the {sim} build of {toplevel}", started.check)
        finally:
            kill_group(proc)  # whatever is left of the group: make, g++, ...
        started.check()
        result = Path(spec["result"])
        done = json.loads(result.read_text()) if result.exists() else {}
        if code == 0 and "bdir" in done:
            return Path(done["bdir"])
        if done.get("error"):
            why = done["error"]
        elif code < 0:
            why = f"the build process was killed by {signal_name(-code)}"
        else:  # the child failed before it could say why: its last line
            tail = _log_text(Path(tmp) / "worker.log").strip().splitlines()
            why = tail[-1] if tail else f"the build process exited with status {code}"
        log = log_file or started.log
        raise ShardError(
            f"building the {sim} simulator of {toplevel} failed ({why})",
            _log_text(log) if log else "",
        )


class _Started:
    """The build child's word that a build really started (tb.sim.build's `announce`): its
    line is said on this process's stderr, once, as soon as it comes."""

    def __init__(self, path: Path):
        self.path, self.log = path, None

    def check(self) -> None:
        if self.log is not None or not self.path.exists():
            return
        try:
            said = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return
        self.log = Path(said["log"])
        print(said["line"], file=sys.stderr, flush=True)


def _wait_unless_stopped(proc: subprocess.Popen, what: str, every=None) -> int:
    """proc's exit status; raises ShardError when a process of its group stays stopped (state
    T, e.g. SIGSTOP) for STOPPED_GRACE_S: a stopped compiler would otherwise hang the job.
    `every()` is called at every poll."""
    stop = StopWatch(proc.pid, STOPPED_GRACE_S)
    while True:
        try:
            return proc.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            pass
        if every is not None:
            every()
        if stop.too_long():
            raise ShardError(
                f"{what} is stopped (SIGSTOP?) and did not continue within {STOPPED_GRACE_S:.0f} s"
            )


def _build_worker(spec_path: str) -> int:
    """The child process of _supervised_build."""
    spec = json.loads(Path(spec_path).read_text())
    end_group_when_orphaned()
    from tb import sim as tb_sim

    tb_sim.BUILD = Path(spec["build_root"])

    def announce(line: str, log: Path) -> None:  # to the supervising process, which says it
        tmp = Path(spec["started"] + ".tmp")
        tmp.write_text(json.dumps({"line": line, "log": str(log)}))  # scratch: in the build's temp dir
        os.replace(tmp, spec["started"])

    try:
        bdir = tb_sim.build(
            spec["toplevel"],
            spec["sim"],
            spec["parameters"],
            waves=False,
            log_file=Path(spec["log"]) if spec["log"] else None,
            announce=announce,
        )
        done, code = {"bdir": str(bdir)}, 0
    except (SystemExit, Exception) as exc:  # the runner exits on a failed tool run
        done, code = {"error": " ".join(str(exc).split()) or type(exc).__name__}, 1
    Path(spec["result"]).write_text(json.dumps(done))  # scratch: the worker's answer, in the build's temp dir
    return code


RAM_DISK = Path("/dev/shm")
# a scratch directory is named rtl_shard.<pid of the process that made it>.<random>: "." is not
# among tempfile's random characters, so no other name (nor the older form rtl_shard_<random>,
# without the pid) takes this form
SCRATCH_PREFIX = "rtl_shard."
_SCRATCH_NAME = re.compile(r"^rtl_shard\.(\d+)\.")


def _scratch_root() -> Path:
    ram = RAM_DISK.is_dir() and os.access(RAM_DISK, os.W_OK)
    return RAM_DISK if ram else Path(tempfile.gettempdir())


def scratch_dir() -> tempfile.TemporaryDirectory:
    """Where a simulator runs: on the RAM disk when there is one. The bulk transfers rewrite
    small files for every image, which costs milliseconds per file on a disk mounted with
    `discard` and microseconds in RAM. The name holds this process's id: a run killed with
    SIGKILL cannot remove its directory (RAM it keeps until a reboot), the next run does
    (remove_stale_scratch, at the start of run and of every Ray shard)."""
    return tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}.", dir=_scratch_root())


def remove_stale_scratch(where: Path | None = None) -> list[Path]:
    """Removes the scratch directories in `where` that this tool made (SCRATCH_PREFIX and a
    process id, owned by this user) for a process that has ended; returns them. Nothing else
    is touched: other names, other users' directories, those of a live process."""
    removed = []
    try:
        entries = list(Path(where or _scratch_root()).iterdir())
    except OSError:
        return removed
    for path in entries:
        m = _SCRATCH_NAME.match(path.name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        try:
            st = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or alive(int(m.group(1))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


# -- supervision: the wall-clock limit of a shard and a stopped simulator ----------------------
START_S = 300.0  # allowance for a simulator's start-up on a loaded machine
TIMEOUT_FACTOR = 10  # times the estimate (estimate_s) of the shard's images
STOPPED_GRACE_S = 10.0  # a simulator stopped (SIGSTOP) this long fails its shard
POLL_S = 0.25


def shard_timeout_s(prog: Program, sim: str, images: int) -> float:
    """The default wall-clock limit of a shard of `images` images: generous (a hang guard,
    not a speed check): START_S plus TIMEOUT_FACTOR times the estimate."""
    return START_S + TIMEOUT_FACTOR * estimate_s(prog, sim, images, 1)


_EXCEPTION_LINE = re.compile(r"(?:[\w.]+\.)?(\w*(?:Error|Exception|Timeout|Failure)): (.+)$")


def _error_line(log: str) -> str:
    """The line of a simulator log that says what went wrong: the last exception the cocotb
    test raised (the watchdog's RunTimeout names the instruction), as `Type: message`."""
    found = ""
    for line in log.splitlines():
        m = _EXCEPTION_LINE.search(line.strip())
        if m:
            found = f"{m.group(1)}: {m.group(2).strip()}"
    return found


class ShardProcess:
    """One shard's simulation, supervised. tb.sim.test runs in a child Python process that
    starts a process group of its own (this module's `__main__`), so the simulator it starts
    belongs to that group and is ended with it: on a failure, a timeout, a stop, Ctrl-C or
    SIGTERM of the compare job (:meth:`kill`, from a `finally`). The child ends the group
    itself if this process dies first."""

    def __init__(
        self,
        prog: Program,
        images: np.ndarray,
        sim: str,
        bdir: Path,
        workdir: Path,
        label: str,
        first_image: int = 0,
        timeout_s: float | None = None,
    ):
        self.sim, self.label, self.first = sim, label, first_image
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.timeout_s = shard_timeout_s(prog, sim, len(images)) if timeout_s is None else timeout_s
        self._scratch = scratch_dir()
        self.job, self.out = workdir / "rtl_job.pkl", workdir / "rtl_out.pkl"
        self.log, self.error_file = workdir / "sim.log", workdir / "worker_error.txt"
        with open(self.job, "wb") as f:  # scratch: in the shard's work dir
            pickle.dump({"program": prog, "images": images}, f)  # scratch: in the shard's work dir
        env = {
            "RTL_JOB": str(self.job),
            "RTL_OUT": str(self.out),
            "RTL_PROGRESS": str(workdir / "progress"),
            **{k: os.environ[k] for k in ("RTL_PROFILE", "RTL_WATCHDOG_CYCLES") if os.environ.get(k)},
            "COCOTB_LOG_LEVEL": "WARNING",
            # one thread for the little numpy work of a shard: N shards share the cores
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }
        spec = {
            "toplevel": TOPLEVEL,
            "sim": sim,
            "bdir": str(bdir),
            "parameters": prog.config.hdl_parameters(),
            "env": env,
            "run_dir": self._scratch.name,
            "log": str(self.log),
            "error_file": str(self.error_file),
        }
        (workdir / "worker.json").write_text(json.dumps(spec))  # scratch: in the shard's work dir
        self.t0 = time.perf_counter()
        try:
            with open(workdir / "worker.log", "wb") as wlog:  # log: the shard worker's output
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "workbench.rtl_shards", str(workdir / "worker.json")],
                    stdin=subprocess.DEVNULL,
                    stdout=wlog,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        except BaseException:
            self._scratch.cleanup()
            raise
        self._stop = StopWatch(self.proc.pid, STOPPED_GRACE_S)

    def image(self) -> int:
        """The image the shard is at (its index among all the RTL images)."""
        return self.first + int(_progress_of(self.workdir))

    def _fail(self, why: str) -> None:
        self.kill()
        raise ShardError(why, _log_text(self.log))

    def poll(self) -> bool:
        """True once the shard has finished; raises ShardError (after ending its processes)
        when it failed, ran past its wall-clock limit or stays stopped."""
        code = self.proc.poll()
        if code is not None:
            self.kill()  # anything of its group still alive
            if code == 0 and self.out.exists():
                return True
            log = _log_text(self.log)
            worker = self.error_file.read_text().strip() if self.error_file.exists() else ""
            detail = worker if "killed by" in worker else (_error_line(log) or worker)
            if code < 0:
                detail = f"its process was killed by {signal_name(-code)}"
            raise ShardError(
                f"RTL simulation ({self.sim}) of {self.label} failed at image "
                f"{self.image()}" + (f": {detail}" if detail else ""),
                log,
            )
        now = time.perf_counter()
        if now - self.t0 > self.timeout_s:
            self._fail(
                f"RTL simulation ({self.sim}) of {self.label} did not finish within "
                f"{self.timeout_s:,.0f} s (the wall-clock limit, --rtl-timeout); it was "
                f"at image {self.image()}"
            )
        if self._stop.too_long():
            self._fail(
                f"the {self.sim} simulator of {self.label} is stopped (SIGSTOP?) "
                f"at image {self.image()} and did not continue within "
                f"{STOPPED_GRACE_S:.0f} s"
            )
        return False

    def result(self) -> dict:
        with open(self.out, "rb") as f:
            res = pickle.load(f)
        res["process_s"] = time.perf_counter() - self.t0
        return res

    def kill(self) -> None:
        """Ends the shard's process group (worker and simulator, stopped ones too) and removes
        its scratch directory."""
        kill_group(self.proc)
        self._scratch.cleanup()


def supervise(shards: list, bar: Progress | None = None) -> list[dict]:
    """Waits for every ShardProcess; returns their results in order. Whatever ends the wait
    (a failed shard, Ctrl-C, SIGTERM) ends every shard's processes first."""
    try:
        pending = list(shards)
        while pending:
            time.sleep(POLL_S)
            pending = [sh for sh in pending if not sh.poll()]
            if bar is not None:
                bar.show([_progress_of(sh.workdir) for sh in shards])
        return [sh.result() for sh in shards]
    finally:
        for sh in shards:
            sh.kill()


def run_shard(
    prog: Program,
    images: np.ndarray,
    sim: str,
    bdir: Path,
    workdir: Path,
    label: str = "shard",
    timeout_s: float | None = None,
) -> dict:
    """Run `images` through `prog` in one supervised simulator process; returns rtl_job's
    output. `workdir` keeps the job, the results and the simulator's log."""
    return supervise([ShardProcess(prog, images, sim, bdir, workdir, label, timeout_s=timeout_s)])[0]


def _worker(spec_path: str) -> int:
    """The child process of a ShardProcess: runs the cocotb job on the simulator. Leader of
    its own process group; ends the group if the supervising process goes away."""
    spec = json.loads(Path(spec_path).read_text())
    end_group_when_orphaned()
    from tb.sim import failures, test

    try:
        results = test(
            spec["toplevel"],
            "rtl_job",
            spec["sim"],
            Path(spec["bdir"]),
            spec["parameters"],
            extra_env=spec["env"],
            waves=False,
            test_dir=Path(spec["run_dir"]),
            log_file=Path(spec["log"]),
        )
        tests, failed = failures(results)
        if tests >= 1 and not failed:
            return 0
        why = f"{failed} of {tests} cocotb test(s) failed"
    except SystemExit as exc:  # the runner exits with the simulator's status
        code = exc.code if isinstance(exc.code, int) else 1
        why = (
            f"the simulator was killed by {signal_name(-code)}"
            if code < 0
            else f"the simulator exited with status {code}"
        )
    except Exception as exc:  # noqa: BLE001 - reported to the supervisor in one line
        why = " ".join(str(exc).split())
        m = re.search(r"return code: (-?\d+)", why)
        if m and int(m.group(1)) < 0:
            why = f"the simulator was killed by {signal_name(-int(m.group(1)))}"
    Path(spec["error_file"]).write_text(why + "\n")  # scratch: in the shard's work dir
    return 1


def _progress_of(workdir: Path) -> float:
    """Images a shard has done, with the fraction of the image it is in."""
    try:
        return float((workdir / "progress").read_text())
    except (OSError, ValueError):
        return 0.0


def run_local(
    prog: Program,
    images: np.ndarray,
    sim: str,
    jobs: int,
    workdir: Path,
    bar: Progress | None = None,
    timeout_s: float | None = None,
    bdir: Path | None = None,
) -> list[dict]:
    """Shards as local simulator processes, all at once (min(jobs, images) of them),
    supervised together, on the simulator in `bdir` (built here when None)."""
    workdir.mkdir(parents=True, exist_ok=True)
    if bdir is None:
        bdir = build(prog, sim)
    if bar is not None:
        bar.start()
    shards = []
    try:
        for k, (lo, hi) in enumerate(shard_bounds(len(images), jobs)):
            shards.append(
                ShardProcess(
                    prog,
                    images[lo:hi],
                    sim,
                    bdir,
                    workdir / f"shard{k}",
                    f"shard {k} (images {lo}..{hi - 1})",
                    lo,
                    timeout_s,
                )
            )
    except BaseException:
        for sh in shards:
            sh.kill()
        raise
    results = supervise(shards, bar)
    if bar is not None:
        bar.show([hi - lo for lo, hi in shard_bounds(len(images), jobs)])
    return results


def _ray_shard(
    prog: Program, images: np.ndarray, sim: str, label: str, timeout_s: float | None = None
) -> dict:
    """One shard as a Ray task: builds the simulator on its node if needed (cached, locked),
    runs it supervised in a temporary directory there, returns the results."""
    remove_stale_scratch()  # of this node's earlier runs, killed
    with scratch_dir() as tmp:
        bdir = build(prog, sim)  # its log in that node's build/sim/logs/
        return run_shard(prog, images, sim, bdir, Path(tmp) / "run", label, timeout_s)


# A shard whose worker or node was lost runs again elsewhere (Ray's task retries, for system
# failures only): the images of a shard are independent of where they run, so its results are
# those of an undisturbed run. A ShardError (the simulator failed, hung or timed out) is not
# retried: it ends the job (exit 3), as it does without Ray.
SHARD_RETRIES = 3
WAIT_S = 1.0  # ray.wait's timeout: the main thread stays in Python, where signals and
#                         the session's watchdog reach it
PROG = "sacbench compare"  # the compare job's name in its one-line messages


def _final_words(signum: int | None, lost: str | None, joining: bool) -> tuple[str, int]:
    """The compare job's line and exit status for a signal or a lost cluster, for the Ray
    session's watchdog when Ray holds the main thread (workbench/ray_session.py)."""
    if signum:
        word = "interrupted" if signum == signal.SIGINT else "terminated"
        return f"{PROG}: {word} ({signal_name(signum)})", 128 + signum
    return f"{PROG}: error: RTL shards on Ray: {lost}", 3


def run_ray(
    prog: Program,
    images: np.ndarray,
    sim: str,
    jobs: int,
    address: str,
    workdir: Path,
    bar: Progress | None = None,
    timeout_s: float | None = None,
) -> tuple[list[dict], float]:
    """Shards as Ray tasks (one CPU each) on the cluster at `address` ("local": a Ray
    instance started here with `jobs` CPUs); returns the shards' results and the seconds
    spent connecting to (or starting) the cluster. Inside a RaySession: Ray's output goes to
    WORKDIR/ray.log, joining is bounded, a lost head ends the job (ShardError, exit 3) within
    about half a minute, and SIGINT, SIGTERM and SIGHUP shut Ray down before they end it."""
    try:
        import ray
    except ImportError as exc:
        raise ShardError(f"--address needs Ray (pip package ray[tune]): {exc}") from None
    from workbench.ray_session import ClusterLost, RaySession

    # the simulator is built on this machine by run(), before; other nodes build their own
    workdir.mkdir(parents=True, exist_ok=True)
    if ray.is_initialized():  # the caller's own Ray: used as it is
        return _ray_tasks(ray, prog, images, sim, jobs, bar, timeout_s), 0.0
    where = "local Ray" if address == "local" else f"the Ray cluster at {address}"
    session = RaySession(workdir / "ray.log", where, final_words=_final_words)
    try:
        with session:
            t0 = time.perf_counter()
            _join(session, address, jobs)
            connect_s = time.perf_counter() - t0
            try:
                return _ray_tasks(ray, prog, images, sim, jobs, bar, timeout_s), connect_s
            except OSError as exc:  # ConnectionError, BrokenPipeError included
                # the node this process is connected through died (its raylet's socket)
                raise ShardError(
                    f"RTL shards on Ray: lost the connection to {where} ({type(exc).__name__}: {exc})",
                    session.log_tail(),
                ) from None
    except ClusterLost as exc:
        raise ShardError(f"RTL shards on Ray: {exc}", session.log_tail()) from None


def _join(session, address: str, jobs: int) -> None:
    """ray.init in `session`: a local instance with `jobs` CPUs, or the cluster at
    `address`."""
    from workbench.ray_session import ClusterLost

    # "local" said to Ray too: without an address ray.init joins the cluster named in
    # /tmp/ray/ray_current_cluster (the last `ray start` here), even a stopped one
    kw = {"address": "local", "num_cpus": jobs} if address == "local" else {"address": address}
    try:
        session.init(**kw)
    except ClusterLost as exc:
        raise ShardError(f"cannot reach the Ray cluster at {address!r}: {exc}", session.log_tail()) from None
    except Exception as exc:  # ConnectionError and Ray's own errors: one clear line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ShardError(
            f"cannot reach the Ray cluster at {address!r}: {first}", session.log_tail()
        ) from None


def _ray_tasks(
    ray, prog: Program, images: np.ndarray, sim: str, jobs: int, bar, timeout_s: float | None
) -> list[dict]:
    """The shards as Ray tasks, waited for in steps of WAIT_S; their results in order."""
    task = ray.remote(num_cpus=1, max_retries=SHARD_RETRIES, retry_exceptions=False)(_ray_shard)
    bounds = shard_bounds(len(images), jobs)
    labels = [f"shard {k} (images {lo}..{hi - 1})" for k, (lo, hi) in enumerate(bounds)]
    refs = [
        task.remote(prog, images[lo:hi], sim, label, timeout_s)
        for label, (lo, hi) in zip(labels, bounds, strict=True)
    ]
    # each result as it comes: a failed shard ends the job at once (an interruption or a
    # failure needs no cancelling: the tasks of a driver that disconnects are ended)
    if bar is not None:
        bar.start()
    results, pending = {}, list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1, timeout=WAIT_S)
        for ref in ready:
            k = refs.index(ref)
            results[k] = _shard_result(ray, ref, labels[k])
        if bar is not None:  # whole shards: their images are done when the task is
            bar.show([hi - lo if k in results else 0 for k, (lo, hi) in enumerate(bounds)])
    return [results[k] for k in range(len(refs))]


def _shard_result(ray, ref, label: str) -> dict:
    """One shard's results; its failure as a ShardError in one line (the simulator's, or
    Ray's once the task's retries are spent)."""
    try:
        return ray.get(ref, timeout=60)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(exc.cause, ShardError) else None
        if cause is not None:
            raise ShardError(str(cause).splitlines()[0], cause.log) from None
        first = str(exc.cause or exc).strip().splitlines()
        raise ShardError(f"the Ray task of {label} failed: {first[0] if first else exc}", str(exc)) from None
    except ray.exceptions.RayError as exc:
        first = str(exc).strip().splitlines()
        raise ShardError(
            f"the Ray task of {label} failed ({type(exc).__name__}, "
            f"{SHARD_RETRIES} retries spent): {first[0] if first else ''}",
            str(exc),
        ) from None


class Progress:
    """The RTL progress bar (stderr): images done, a fraction for the ones running, and the
    time left measured on the shards' finished images (workbench.eta.Lanes): no estimate
    until the first image is done, whatever the simulator or a build took before."""

    WAITING = "time left: after the first image"

    def __init__(self, sizes: list[int], desc: str, enabled: bool = True, clock=time.perf_counter):
        from tqdm import tqdm

        self.sizes, self.clock = list(sizes), clock
        self.lanes = Lanes(self.sizes, clock())
        self.bar = tqdm(
            total=sum(self.sizes),
            desc=desc,
            unit="image",
            disable=not enabled,
            leave=False,
            file=_CurrentStderr(),
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]",
            postfix=self.WAITING,
        )

    def start(self) -> None:
        """The shards start now: their time per image is measured from here."""
        self.lanes = Lanes(self.sizes, self.clock())

    def postfix(self) -> str:
        left = self.lanes.left_s(self.clock())
        if left is None:
            return self.WAITING
        return "" if self.lanes.finished() >= sum(self.sizes) else f"{about(left)} left"

    def show(self, done: list[float]) -> None:
        """`done[i]`: the images shard i has done (a fraction for the one it is in)."""
        self.lanes.update(self.clock(), done)
        n = round(sum(min(d, s) for d, s in zip(done, self.sizes, strict=True)), 2)
        self.bar.n = int(n) if n == int(n) else n  # "2/4", not "2.0/4"
        self.bar.set_postfix_str(self.postfix(), refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


class _CurrentStderr:
    """The progress bar's stream: whatever sys.stderr is when it writes (a Ray session moves
    file descriptor 2 into its log and gives the console a stream of its own)."""

    def write(self, text):
        return sys.stderr.write(text)

    def flush(self):
        sys.stderr.flush()

    def __getattr__(self, name):
        return getattr(sys.stderr, name)


def run(
    prog: Program,
    images: np.ndarray,
    sim: str,
    jobs: int,
    workdir: Path,
    address: str | None = None,
    progress: bool = True,
    timeout_s: float | None = None,
) -> dict:
    """Run `images` on the RTL in shards; returns {"results": per image in order, "shards":
    per shard {images, load_s, job_s, sim_s, process_s, ...}, "wall_s": the whole run with
    process start-ups and the build check, "jobs": shards run, "connect_s": of wall_s, the
    time to reach (or start) the Ray cluster}."""
    remove_stale_scratch()  # of earlier runs, killed (SIGKILL) on this machine
    n_shards = min(jobs, len(images))
    if progress:
        print(
            f"RTL: {len(images)} image(s) of ~{prog.cycles_per_image():,} cycles each on {sim}"
            f" in {n_shards} job(s)",
            file=sys.stderr,
            flush=True,
        )
    t0, connect_s = time.perf_counter(), 0.0
    bdir = build(prog, sim)  # here, before the bar: a build says so on its own line
    bar = Progress(
        [hi - lo for lo, hi in shard_bounds(len(images), jobs)],
        f"RTL ({sim}, {n_shards} job{'s' * (n_shards > 1)})",
        progress,
    )
    try:
        if address:
            shards, connect_s = run_ray(prog, images, sim, jobs, address, workdir, bar, timeout_s)
        else:
            shards = run_local(prog, images, sim, jobs, workdir, bar, timeout_s, bdir)
    finally:
        bar.close()
    wall = time.perf_counter() - t0
    results = [r for sh in shards for r in sh["results"]]
    assert len(results) == len(images), (len(results), len(images))
    return {
        "results": results,
        "wall_s": wall,
        "jobs": len(shards),
        "connect_s": connect_s,
        "shards": [
            {
                "images": len(sh["results"]),
                "load_s": sh["load_s"],
                "load_words": sh["load_words"],
                "job_s": sh["job_s"],
                "sim_s": sh["sim_s"],
                "process_s": sh["process_s"],
                "bulk_load_s": sh["bulk_load_s"],
                "bulk_read_s": sh["bulk_read_s"],
            }
            for sh in shards
        ],
    }


if __name__ == "__main__":  # the worker of a ShardProcess, or of a supervised build
    sys.exit(_build_worker(sys.argv[2]) if sys.argv[1] == "--build" else _worker(sys.argv[1]))
