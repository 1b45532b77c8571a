"""RTL images in parallel: the images are cut into contiguous shards, each shard runs in its own
simulator process (tb/rtl_job.py on the bench wrapper rtl/accelerator_tb_wrapper.v, program
loaded once per process), and the results are merged back in image order. Every image runs
alone through the same program, so the merged results equal those of a single process.

The simulator is built once (tb.sim.build, cached under build/sim/). Shards run as local
processes, or as tasks on a Ray cluster (`address`: "local" starts a Ray instance on this
machine, anything else is handed to ``ray.init(address=...)``; the project must be installed at
the same path on every node, where each node builds the simulator once).
"""
from __future__ import annotations

import os
import pickle
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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
# per simulator: for time estimates only (benchmarks/sim_speed.py measures them); the speed
# falls about in proportion to the array's cells
SPEED_8X8 = {"verilator": 180_000, "icarus": 600}


def estimate_s(prog: Program, sim: str, images: int, jobs: int) -> float:
    """A rough wall time of `images` images on `sim` in `jobs` shards (start-up excluded)."""
    cfg = prog.config
    speed = SPEED_8X8[sim] * 64 / (cfg.rows * cfg.cols)
    return prog.cycles_per_image() * -(-images // max(1, jobs)) / speed


def _built(bdir: Path, sim: str) -> bool:
    return (bdir / ("sim.vvp" if sim == "icarus" else "Vtop.mk")).exists()


def build(prog: Program, sim: str, log_file: Path | None = None) -> Path:
    from tb.sim import build as build_sim
    from tb.sim import build_dir
    cfg = prog.config
    if not _built(build_dir(TOPLEVEL, sim, cfg.hdl_parameters()), sim):
        print(f"building the {sim} model of the {cfg.rows}x{cfg.cols} accelerator (first time "
              f"for this configuration: a few minutes{'' if log_file is None else '; log: '}"
              f"{log_file or ''})", file=sys.stderr, flush=True)
    try:
        return build_sim(TOPLEVEL, sim, prog.config.hdl_parameters(), waves=False,
                         log_file=log_file)
    except (SystemExit, Exception) as exc:    # the runner exits on a failed tool run
        raise ShardError(f"building the {sim} simulator of {TOPLEVEL} failed ({exc})",
                         _log_text(log_file) if log_file else "") from None


RAM_DISK = Path("/dev/shm")


def scratch_dir() -> tempfile.TemporaryDirectory:
    """Where a simulator runs: on the RAM disk when there is one. The bulk transfers rewrite
    small files for every image, which costs milliseconds per file on a disk mounted with
    `discard` and microseconds in RAM."""
    ram = RAM_DISK.is_dir() and os.access(RAM_DISK, os.W_OK)
    return tempfile.TemporaryDirectory(prefix="rtl_shard_", dir=RAM_DISK if ram else None)


def run_shard(prog: Program, images: np.ndarray, sim: str, bdir: Path, workdir: Path,
              label: str = "shard") -> dict:
    """Run `images` through `prog` in one simulator process; returns rtl_job's output.
    `workdir` keeps the job, the results and the simulator's log."""
    workdir.mkdir(parents=True, exist_ok=True)
    with scratch_dir() as run_dir:
        return _run_shard(prog, images, sim, bdir, workdir, Path(run_dir), label)


def _run_shard(prog, images, sim, bdir, workdir: Path, run_dir: Path, label: str) -> dict:
    from tb.sim import failures, test

    job, out, log = workdir / "rtl_job.pkl", workdir / "rtl_out.pkl", workdir / "sim.log"
    with open(job, "wb") as f:
        pickle.dump({"program": prog, "images": images}, f)
    env = {"RTL_JOB": str(job), "RTL_OUT": str(out), "RTL_PROGRESS": str(workdir / "progress"),
           **({"RTL_PROFILE": os.environ["RTL_PROFILE"]} if os.environ.get("RTL_PROFILE") else {}),
           "COCOTB_LOG_LEVEL": "WARNING",
           # one thread for the little numpy work of a shard: N shards share the cores
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    try:
        results = test(TOPLEVEL, "rtl_job", sim, bdir, prog.config.hdl_parameters(),
                       extra_env=env, waves=False, test_dir=run_dir, log_file=log)
        tests, failed = failures(results)
        ok = tests >= 1 and not failed and out.exists()
    except (SystemExit, Exception):       # a failed cocotb run ends the runner this way
        ok = False
    if not ok:
        raise ShardError(f"RTL simulation ({sim}) of {label} failed", _log_text(log))
    with open(out, "rb") as f:
        res = pickle.load(f)
    res["process_s"] = time.perf_counter() - t0
    return res


def _duration(s: float) -> str:
    if s < 90:
        return f"{max(1, round(s))} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def _progress_of(workdir: Path) -> float:
    """Images a shard has done, with the fraction of the image it is in."""
    try:
        return float((workdir / "progress").read_text())
    except (OSError, ValueError):
        return 0.0


def run_local(prog: Program, images: np.ndarray, sim: str, jobs: int, workdir: Path,
              bar=None) -> list[dict]:
    """Shards as local simulator processes, at most `jobs` at once."""
    workdir.mkdir(parents=True, exist_ok=True)
    bdir = build(prog, sim, workdir / "build.log")
    bounds = shard_bounds(len(images), jobs)
    dirs = [workdir / f"shard{k}" for k in range(len(bounds))]
    done = threading.Event()

    def poll():
        while not done.wait(0.5):
            if bar is not None:
                bar.n = round(sum(_progress_of(d) for d in dirs), 2)
                bar.refresh()

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    try:
        with ThreadPoolExecutor(len(bounds)) as pool:
            futures = [pool.submit(run_shard, prog, images[lo:hi], sim, bdir, d,
                                   f"shard {k} (images {lo}..{hi - 1})")
                       for k, ((lo, hi), d) in enumerate(zip(bounds, dirs))]
            shards = [f.result() for f in futures]
    finally:
        done.set()
        watcher.join()
    if bar is not None:
        bar.n = len(images)
        bar.refresh()
    return shards


def _ray_shard(prog: Program, images: np.ndarray, sim: str, label: str) -> dict:
    """One shard as a Ray task: builds the simulator on its node if needed (cached, locked),
    runs in a temporary directory there, returns the results."""
    with scratch_dir() as tmp:
        bdir = build(prog, sim, Path(tmp) / "build.log")
        return run_shard(prog, images, sim, bdir, Path(tmp) / "run", label)


def run_ray(prog: Program, images: np.ndarray, sim: str, jobs: int, address: str,
            workdir: Path, bar=None) -> tuple[list[dict], float]:
    """Shards as Ray tasks (one CPU each) on the cluster at `address` ("local": a Ray
    instance started here with `jobs` CPUs); returns the shards' results and the seconds
    spent connecting to (or starting) the cluster."""
    try:
        import ray
    except ImportError as exc:
        raise ShardError(f"--address needs Ray (pip package ray[tune]): {exc}") from None
    workdir.mkdir(parents=True, exist_ok=True)
    build(prog, sim, workdir / "build.log")            # once here; other nodes build their own
    started = not ray.is_initialized()
    t0 = time.perf_counter()
    if started:
        kw = {"num_cpus": jobs} if address == "local" else {"address": address}
        try:
            ray.init(include_dashboard=False, log_to_driver=False,
                     configure_logging=False, **kw)
        except Exception as exc:   # ConnectionError and Ray's own errors: one clear line
            raise ShardError(f"cannot reach the Ray cluster at {address!r}: {exc}") from None
    connect_s = time.perf_counter() - t0
    try:
        task = ray.remote(num_cpus=1)(_ray_shard)
        bounds = shard_bounds(len(images), jobs)
        refs = [task.remote(prog, images[lo:hi], sim, f"shard {k} (images {lo}..{hi - 1})")
                for k, (lo, hi) in enumerate(bounds)]
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            if bar is not None:
                bar.update(sum(bounds[refs.index(r)][1] - bounds[refs.index(r)][0]
                               for r in ready))
        try:
            return ray.get(refs), connect_s
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, ShardError) else None
            raise ShardError(str(cause or exc).splitlines()[0],
                             cause.log if cause else str(exc)) from None
    finally:
        if started:
            ray.shutdown()


def run(prog: Program, images: np.ndarray, sim: str, jobs: int, workdir: Path,
        address: str | None = None, progress: bool = True) -> dict:
    """Run `images` on the RTL in shards; returns {"results": per image in order, "shards":
    per shard {images, load_s, job_s, sim_s, process_s, ...}, "wall_s": the whole run with
    process start-ups and the build check, "jobs": shards run, "connect_s": of wall_s, the
    time to reach (or start) the Ray cluster}."""
    from tqdm import tqdm

    n_shards = min(jobs, len(images))
    if progress:
        est = estimate_s(prog, sim, len(images), n_shards)
        print(f"RTL: {len(images)} image(s) of ~{prog.cycles_per_image():,} cycles each on {sim}"
              f" in {n_shards} job(s): about {_duration(est)} once the simulator runs",
              file=sys.stderr, flush=True)
    bar = tqdm(total=len(images), desc=f"RTL ({sim}, {n_shards} job{'s' * (n_shards > 1)})",
               unit="image", disable=not progress, leave=False)
    t0, connect_s = time.perf_counter(), 0.0
    try:
        if address:
            shards, connect_s = run_ray(prog, images, sim, jobs, address, workdir, bar)
        else:
            shards = run_local(prog, images, sim, jobs, workdir, bar)
    finally:
        bar.close()
    wall = time.perf_counter() - t0
    results = [r for sh in shards for r in sh["results"]]
    assert len(results) == len(images), (len(results), len(images))
    return {"results": results, "wall_s": wall, "jobs": len(shards), "connect_s": connect_s,
            "shards": [{"images": len(sh["results"]), "load_s": sh["load_s"],
                        "load_words": sh["load_words"], "job_s": sh["job_s"],
                        "sim_s": sh["sim_s"], "process_s": sh["process_s"],
                        "bulk_load_s": sh["bulk_load_s"], "bulk_read_s": sh["bulk_read_s"]}
                       for sh in shards]}
