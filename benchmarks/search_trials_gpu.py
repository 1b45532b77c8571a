#!/usr/bin/env python3
"""A search's trials on a machine without Ray (the lent GPU machine has PyTorch but no Ray):
the trials and the baselines' final trainings that `scripts/search.py` would give Ray Tune,
built from the same arguments, each run in its own process (`run_trial`, `run_final`),
WORKERS at a time. They write DIR/trials/<trial>/result.json and DIR/models/, as under Ray;
the search,
started afterwards with the same arguments where Ray is (`--device` and the thread count may
differ: they are how a trial ran, not what it is), finds them finished and writes the front,
the plot and `--verify`'s comparison. Where the project is not installed (the GPU machine's
own Python), run it from the repository root with PYTHONPATH=. as below.

    PYTHONPATH=. python3 benchmarks/search_trials_gpu.py --workers 12 [--deadline-s 540] -- \\
        --family bnn --cost cycles --data fashion --budgets 2080000 --seeds 6 --device cuda \\
        ... --out DIR

Prints one line per trial epoch and per finished trial, then each trial's validation and test
accuracy and cost; trials still running at --deadline-s are stopped (their folders hold no
result.json but their checkpoints: the next run continues them). Exit status: 0 every trial
finished; 2 bad arguments; 3 a trial failed or was stopped.
"""

import argparse
import multiprocessing as mp
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict
from pathlib import Path

from workbench.commands.search import build_parser, options_from_args
from workbench.search.errors import SearchError
from workbench.search.evaluation import read_final
from workbench.search.options import check_options, plan_of
from workbench.search.plan import final_jobs
from workbench.search.results import check_finished, read_result


def _run(config: dict) -> dict:
    """One trial in a worker process (spawned: CUDA does not survive a fork)."""
    from workbench.search.trial import TrialConfig, run_trial

    cfg = TrialConfig(**config)
    t0 = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t0:6.0f} s] {cfg.name}: {msg}", flush=True)

    res = run_trial(cfg, log=log)
    return {
        "name": cfg.name,
        "val": res["accuracy"]["val"],
        "test": res["accuracy"]["test"],
        "cost": res["costs"].get(cfg.cost),
        "arch": res["arch_text"],
        "seconds": res["seconds"]["total"],
    }


def _run_job(job: dict) -> dict:
    """One final training of a baseline's architecture in a worker process."""
    from workbench.search.evaluation import FinalJob, run_final

    t0 = time.perf_counter()
    res = run_final(FinalJob(**job))
    return {
        "name": job["name"],
        "val": res["val_correct"] / res["val_total"],
        "test": res["test_correct"] / res["test_total"],
        "cost": None,
        "arch": res["arch_text"],
        "seconds": time.perf_counter() - t0,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=4, help="trials at once")
    ap.add_argument(
        "--deadline-s", type=float, default=None, help="stop the trials still running after this many seconds"
    )
    ap.add_argument("search", nargs=argparse.REMAINDER, help="-- then scripts/search.py's arguments")
    args = ap.parse_args()
    argv = args.search[1:] if args.search[:1] == ["--"] else args.search
    sargs = build_parser().parse_args(argv)
    if args.workers < 1:
        print("search_trials_gpu: error: --workers must be at least 1", file=sys.stderr)
        return 2
    try:
        opts = options_from_args(sargs, argv)
        check_options(opts)
        configs = opts.trial_configs()
        check_finished(configs)
        plan = plan_of(opts, configs)
    except SearchError as exc:
        print(f"search_trials_gpu: error: {exc}", file=sys.stderr)
        return 2
    todo = [c for c in configs if read_result(Path(c.out)) is None]
    jobs = [
        j for j in final_jobs(configs, plan, Path(opts.out).resolve() / "models") if read_final(j.out) is None
    ]
    print(
        f"[trials] {len(configs)} trial(s), {len(configs) - len(todo)} already done in "
        f"{opts.out}; {len(jobs)} baseline training(s) to do; "
        f"{min(args.workers, max(1, len(todo) + len(jobs)))} at a time on "
        f"{opts.trial.get('device', 'cpu')}",
        flush=True,
    )
    t0 = time.perf_counter()
    done, failed = [], []
    pool = ProcessPoolExecutor(max_workers=args.workers, mp_context=mp.get_context("spawn"))
    futures = {pool.submit(_run, asdict(c)): c.name for c in todo}
    futures.update({pool.submit(_run_job, asdict(j)): j.name for j in jobs})
    pending = set(futures)

    def collect(f) -> None:
        try:
            r = f.result()
        except Exception as exc:  # noqa: BLE001 - reported, counted, the rest go on
            failed.append(futures[f])
            print(f"[trials] {futures[f]} FAILED: {type(exc).__name__}: {exc}", flush=True)
            return
        done.append(r)
        cost = "" if r["cost"] is None else f", {opts.cost} {r['cost']:,.6g}"
        print(
            f"[trials {time.perf_counter() - t0:6.0f} s] {r['name']} done: {r['arch']}, "
            f"val {100 * r['val']:.2f}%, test {100 * r['test']:.2f}%{cost} "
            f"({r['seconds']:.0f} s)",
            flush=True,
        )

    while pending:
        left = None if args.deadline_s is None else args.deadline_s - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            break
        finished, pending = wait(pending, timeout=left, return_when=FIRST_COMPLETED)
        for f in finished:
            collect(f)
    for f in [f for f in pending if f.done()]:  # ended while the deadline came
        pending.discard(f)
        collect(f)
    stopped = sorted(futures[f] for f in pending)
    if stopped:
        running = sum(f.running() for f in pending)
        print(
            f"[trials] deadline: stopping {len(stopped)} unfinished trial(s) ({running} "
            f"running, the rest not started): {', '.join(stopped)}",
            flush=True,
        )
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.kill()
    pool.shutdown(wait=not stopped, cancel_futures=True)
    print(
        f"[trials] {len(done)} finished, {len(failed)} failed, {len(stopped)} stopped in "
        f"{time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    if stopped or failed:
        print(
            "[trials] the same command continues the unfinished ones; the front of the "
            "finished ones: scripts/search.py ARGS --collect-only",
            flush=True,
        )
    return 3 if failed or stopped else 0


if __name__ == "__main__":
    sys.exit(main())
