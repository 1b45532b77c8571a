"""A search: its trials and the baselines' trainings as Ray Tune trials (ray_backend.py), in its
own output folder taken for the run, gathered into one report under the protocol (front.py,
protocol.py); interrupted or left by a lost cluster, it keeps what has finished and says how to
resume. The options and checks are in options.py, what has finished in results.py.

The console: progress (what is done, each trial's epochs, ray_backend.py's lines) goes to
stderr while the trials run; stdout is left to the command's results (commands/search.py),
--collect-only's listing of what has finished and what has not included (that is what the
flag asks for).
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from safeio import OutputDirectory, OutputPathError
from workbench.ray_session import ClusterLost, RaySession, signal_name
from workbench.search import front
from workbench.search.errors import SearchError, TrialFailed
from workbench.search.evaluation import read_final
from workbench.search.options import SearchOptions, check_address, check_options, plan_of
from workbench.search.plan import final_jobs
from workbench.search.results import (
    check_finished,
    collect,
    kept_line,
    lost_line,
    read_result,
    write_pareto,
    zoo_reference,
)

__all__ = ["SearchError", "SearchOptions", "TrialFailed", "check_options", "interruption", "run_search"]


def interruption(exc: BaseException) -> tuple[int, str] | None:
    """(signal, the line to say) when `exc` ended the trials on SIGINT, SIGTERM or SIGHUP:
    Ray is shut down, the finished trials are kept and the unfinished ones keep their
    checkpoints (exit 128 + the signal). The exception keeps its own type (KeyboardInterrupt,
    the guard's Terminated), so that every caller's handling of it still holds; the search
    command says the line instead of the guard's."""
    return getattr(exc, "search_interruption", None)


# what a search directory holds (pareto.json first: the marker of directories written before
# they carried safeio's marker file)
SEARCH_FILES = ("pareto.json", "pareto.png", "front", "trials", "ray", "baseline.json", "verify", "models")


def search_directory(opts: SearchOptions) -> OutputDirectory:
    """--out as the search's own directory, locked for the run: refused (SearchError) when it is
    a file, a reserved path (safeio.guard) or a directory that holds anything but an earlier
    search's files."""
    out = OutputDirectory(
        opts.out,
        "sacbench search",
        legacy=SEARCH_FILES,
        legacy_markers=("pareto.json", "trials"),
        inputs=(opts.data, opts.trial.get("costs", {}).get("gpu_profile")),
    )
    try:
        out.check()
    except OutputPathError as exc:
        raise SearchError(str(exc)) from None
    if opts.collect_only and not Path(opts.out).is_dir():
        raise SearchError(
            f"--collect-only: no trial of these options has finished in {Path(opts.out) / 'trials'}"
        )
    return out


def run_search(opts: SearchOptions) -> dict:
    """Run every trial through Ray Tune, then write pareto.json, pareto.png and front/, in
    --out taken for the run (one search per --out at a time)."""
    directory = search_directory(opts)
    if opts.address and not opts.collect_only:  # collecting needs no Ray
        check_address(opts.address)
    check_options(opts)
    try:
        directory.__enter__()
    except OutputPathError as exc:
        raise SearchError(str(exc)) from None
    try:
        return _run_search(opts)
    finally:
        directory.__exit__(None, None, None)


def _run_trials(
    opts: SearchOptions, todo: list, configs: list, t0: float, ray_tmp: str
) -> list[tuple[str, object]]:
    """The unfinished trials and final trainings (`todo`: TrialConfig and FinalJob) through Ray
    Tune; returns (name, error) of those that failed. A signal ends it with its own exception,
    marked (interruption()), a lost head with TrialFailed, both once Ray is shut down
    (workbench/ray_session.py)."""
    session = RaySession(
        Path(ray_tmp) / "driver.log",
        f"the Ray cluster at {opts.address}" if opts.address else "local Ray",
        final_words=lambda *why: _final_words(opts, *why),
    )
    try:
        from workbench.search.ray_backend import fit, init_ray  # imports Ray: when it runs

        with session:
            init_ray(opts, session, ray_tmp)
            # what the trials print here (ray_backend.py's lines) is progress: to stderr, the
            # session's (its stderr reaches the console from the main thread; fd 2 is Ray's log)
            with contextlib.redirect_stdout(sys.stderr):
                errors = fit(opts, todo, configs, t0)
    except ClusterLost as exc:
        raise TrialFailed(lost_line(opts, str(exc))) from None
    except BaseException as exc:
        if session.received is not None:
            exc.search_interruption = (session.received, _interrupted(opts, session.received))
        raise
    if session.received is not None:  # a signal that Ray caught and did not pass on
        signum = session.received
        exc = KeyboardInterrupt() if signum == signal.SIGINT else SystemExit(128 + signum)
        exc.search_interruption = (signum, _interrupted(opts, signum))
        raise exc
    return errors


def _interrupted(opts: SearchOptions, signum: int) -> str:
    word = "interrupted" if signum == signal.SIGINT else "terminated"
    return (
        f"{word} ({signal_name(signum)}); {kept_line(opts)}; run the same command again to "
        f"resume (unfinished trials continue from their checkpoints)"
    )


def _final_words(opts: SearchOptions, signum: int | None, lost: str | None, joining: bool) -> tuple[str, int]:
    """The command's line and exit status for a signal or a lost cluster, as main() prints
    and returns them: also used by the session's watchdog when Ray holds the main thread
    (workbench/ray_session.py)."""
    if signum:
        return f"sacbench search: {_interrupted(opts, signum)}", 128 + signum
    if joining and opts.address:  # as _init_ray says it: bad input
        return (f"sacbench search: error: --address {opts.address}: cannot join the Ray cluster ({lost})", 2)
    return f"sacbench search: error: {lost_line(opts, lost)}", 3


def resume_line(out: Path) -> str:
    """What a stopped search keeps (results.py reads back what has finished; trial.py and the
    final trainings resume from their checkpoints), and when the time left shows."""
    return (
        f"[search] if it stops, the same command resumes from what has finished in {out}: "
        f"finished trials and trainings are read back, an unfinished super network or final "
        f"training continues after its last epoch; the time left of "
        f"each phase shows once its first epoch has finished"
    )


def _run_search(opts: SearchOptions) -> dict:
    configs = opts.trial_configs()
    check_finished(configs)
    out = Path(opts.out)
    plan = plan_of(opts, configs)
    jobs = final_jobs(configs, plan, out.resolve() / "models") if plan else []
    todo = [c for c in configs if read_result(Path(c.out)) is None]
    todo_jobs = [j for j in jobs if read_final(j.out) is None]
    t0 = time.perf_counter()
    done = f"{len(configs)} trial(s) ({len(configs) - len(todo)} already done in {out})" + (
        f", {len(jobs)} baseline training(s) ({len(jobs) - len(todo_jobs)} done: "
        f"{', '.join(sorted({p['role'] for p in plan}))}, {configs[0].final_seeds} "
        f"seed(s) each)"
        if jobs
        else ""
    )
    if opts.collect_only:
        if len(todo) == len(configs):
            raise SearchError(f"--collect-only: no trial of these options has finished in {out / 'trials'}")
        print(  # the result --collect-only asks for: on stdout
            f"{done}; --collect-only: {len(todo)} not finished and not trained"
            + (": " + ", ".join(c.name for c in todo) if todo else ""),
            flush=True,
        )
        todo, todo_jobs, ray_tmp = [], [], None
    else:
        out.mkdir(parents=True, exist_ok=True)
        ray_tmp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
        print(
            f"[search] {done}; Ray's logs in {ray_tmp}, trial logs in {out / 'ray'}",
            file=sys.stderr,
            flush=True,
        )
        print(resume_line(out), file=sys.stderr, flush=True)
    try:
        errors = _run_trials(opts, todo + todo_jobs, configs, t0, ray_tmp) if todo or todo_jobs else []
    except BaseException as exc:
        # bad input or an interruption: the temporary files go (a failure, exit 3, keeps
        # its logs there)
        if isinstance(exc, SearchError) or interruption(exc):
            shutil.rmtree(ray_tmp, ignore_errors=True)
        raise
    results = collect(opts)
    if errors or not results:
        if results:
            write_pareto(opts)
        name, err = errors[0] if errors else ("every trial", "no result")
        first = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        logs = out / "trials" / name if name in {c.name for c in configs} else out / "ray"
        raise TrialFailed(
            f"{len(errors)} of {len(configs) + len(jobs)} trial(s) and "
            f"training(s) failed; {name}: {first} (logs: {logs}, {ray_tmp})"
        )
    if ray_tmp:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    doc = front.build(opts, results, plan)
    if plan:
        doc["rank_agreement"] = front.rank_agreement(opts, doc)
    else:
        doc["zoo"] = zoo_reference(opts)  # the fabric's fixed ResNet, trained once
    front.write(opts, doc)
    front.plot(doc, out / "pareto.png")
    front.publish(opts, doc)
    print(f"[search] done in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return doc
