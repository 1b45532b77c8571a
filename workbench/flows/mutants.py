"""`make mutants`: mutation testing of the Python scopes of pyproject.toml (mutmut: the numerics,
the compiler's stages, the interpreter, the energy model, safeio's atomic writes, the compare
report, the search's front) and of rtl/ (a list of one-line mutants run against each module's
bench).

Python (`--scope <name>`, a scope of pyproject.toml's [tool.mutants.scopes], or `python` for all
of them): each scope is staged under build/mutants/py/<scope>/ (a copy of its packages, the
scope's `source_paths` or else [tool.mutmut]'s (models/, fpga/), the scope's tests with
tests/conftest.py and tests/helpers.py, and a pyproject.toml whose [tool.mutmut] is the
project's with the scope's files and tests), and `mutmut run` runs there, so its mutants/
directory never lands in the working tree. mutmut mutates code inside functions and runs, for
each mutant, the scope's tests that reach the mutated function (the fast tests of tests/, never
the RTL benches); a scope's `functions` (path/file.py::name) restricts the run and the counts to
those functions of its files. Per scope: mutants, killed, survived, timeout, no tests, kill
rate (killed / mutants) and every mutant not killed, as file:line and the mutation.

RTL (`--scope rtl`): every mutant of tb/rtl_mutants.toml (module, the original line, its
replacement) is applied alone to a temporary copy of the project (rtl/, tb/, models/, fpga/; the
real rtl/ is never edited), and tb/test_<module>.py runs there under pytest on the simulator of
`--sim` (icarus by default, verilator, or both); a mutant is killed when the bench fails (or
runs past its time limit). Every original line must occur exactly once in rtl/<module>.v; the
unmutated benches run first and must pass, otherwise the run stops (a kill would mean nothing).
Prints the kill table and the kill rate per simulator.

`--scope all` (the default) runs the Python scopes, then the RTL list. Tool output goes to
files under build/mutants/ (their paths are printed); the console has the progress, with an
estimate of the time left from the rate measured so far, and the results.

Exit status: 0 the run completed (whatever the kill rate; read the tables); 2 bad usage or input
found before any long work (an unknown scope, simulator or mutant id, a mutant list that is
malformed or whose original line is missing or not unique); 3 a tool failure (the unmutated
tests or benches fail, mutmut failed); 130/143 interrupted (the temporary copy is removed).
`main` returns 0 or 3 and raises BadInput for 2; the entry point scripts/mutants.py runs it under
the exit-status contract (workbench/commands/args.py `run_guarded`), which maps the rest.
"""

from __future__ import annotations

import ast
import difflib
import fnmatch
import functools
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from safeio import write_text_atomic
from workbench.commands.args import FAILURE, ArgumentParser, BadInput
from workbench.process_groups import kill_group, start_group, wait_group

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "mutants"
MUTANT_LIST = ROOT / "tb" / "rtl_mutants.toml"
SIMS = ("icarus", "verilator")
MUTANT_KEYS = ("id", "module", "kind", "original", "replacement", "description")
# what the RTL runs need from the project (the benches import tb, models and fpga)
RTL_COPY = ("rtl", "tb", "models", "fpga", "pyproject.toml")
# keys of a scope that are read here, not mutmut settings
STAGING_KEYS = ("mutate", "tests", "functions")
# tests/ files every Python scope's stage gets beside the scope's tests (when they exist)
TEST_SUPPORT = ("__init__.py", "conftest.py", "helpers.py")


class ToolFailure(Exception):
    """A baseline or a tool failed: exit status 3 (the message is the one line)."""


# -- configuration ------------------------------------------------------------------------------
def load_pyproject(root: Path = ROOT) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text())


def python_scopes(pyproject: dict) -> dict:
    """[tool.mutants.scopes]: name -> {"mutate": [globs], "tests": [files], other keys go to
    [tool.mutmut] of that scope}."""
    scopes = pyproject.get("tool", {}).get("mutants", {}).get("scopes", {})
    for name, scope in scopes.items():
        if not scope.get("mutate") or not scope.get("tests"):
            raise BadInput(f"pyproject.toml [tool.mutants.scopes.{name}] needs `mutate` and `tests`")
    return scopes


def toml_entries(path: Path, table: str, what: str, shown: str | None = None) -> list[dict]:
    """The [[table]] entries of the TOML file `path` (BadInput naming the file, `shown` or the
    path as given, when it cannot be read or holds none); `what` names the list in the message."""
    shown = str(path) if shown is None else shown
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"{shown}: cannot read the {what}: {exc}") from None
    entries = data.get(table, [])
    if not entries:
        raise BadInput(f"{shown}: no [[{table}]] entries")
    return entries


def load_rtl_mutants(path: Path = MUTANT_LIST) -> list[dict]:
    """The [[mutant]] entries of the list, checked for their keys and unique ids."""
    mutants = toml_entries(path, "mutant", "mutant list")
    seen = set()
    for i, m in enumerate(mutants):
        missing = [k for k in MUTANT_KEYS if not isinstance(m.get(k), str) or not m[k].strip()]
        if missing:
            raise BadInput(f"{path}: mutant #{i + 1} ({m.get('id', '?')}) lacks {', '.join(missing)}")
        if m["id"] in seen:
            raise BadInput(f"{path}: mutant id {m['id']!r} appears twice")
        if m["original"].strip() == m["replacement"].strip():
            raise BadInput(f"{path}: mutant {m['id']}: the replacement equals the original line")
        seen.add(m["id"])
    return mutants


def find_original(text: str, mutant: dict) -> int:
    """Index of the one line of `text` that is the mutant's original line (compared without
    leading and trailing blanks); BadInput when it is missing or not unique."""
    want = mutant["original"].strip()
    hits = [i for i, line in enumerate(text.splitlines()) if line.strip() == want]
    if len(hits) != 1:
        raise BadInput(
            f"mutant {mutant['id']}: the original line is found {len(hits)} times in "
            f"rtl/{mutant['module']}.v (must be exactly once): {want!r}"
        )
    return hits[0]


def apply_mutant(text: str, mutant: dict) -> str:
    """`text` with the mutant's original line replaced (its indentation kept)."""
    lines = text.splitlines(keepends=True)
    i = find_original(text, mutant)
    line = lines[i]
    indent = line[: len(line) - len(line.lstrip())]
    ending = line[len(line.rstrip("\r\n")) :]
    lines[i] = indent + mutant["replacement"].strip() + ending
    return "".join(lines)


def check_mutants_apply(mutants: list[dict], rtl: Path) -> None:
    """Every mutant's module exists, has a bench, and its original line is there exactly once."""
    for m in mutants:
        src = rtl / f"{m['module']}.v"
        if not src.is_file():
            raise BadInput(f"mutant {m['id']}: there is no rtl/{m['module']}.v")
        if not (rtl.parent / "tb" / f"test_{m['module']}.py").is_file():
            raise BadInput(f"mutant {m['id']}: there is no bench tb/test_{m['module']}.py")
        find_original(src.read_text(), m)


def parse_args(argv, scopes: dict):
    names = ", ".join(["all", "python", "rtl", *scopes])
    p = ArgumentParser(
        prog="mutants",
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n  make mutants SCOPE=cycle_model\n  make mutants SCOPE=rtl SIM=both\n"
        "  .venv/bin/python scripts/mutants.py --scope rtl --only cell_sign_bit,rq_valid",
    )
    p.add_argument("--scope", default="all", help=f"what to mutate, comma-separated: {names}")
    p.add_argument("--sim", default="icarus", help="simulator of the RTL mutants: icarus, verilator, both")
    p.add_argument("--only", default="", help="RTL mutant ids to run, comma-separated (default: all)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutmut's parallel workers")
    p.add_argument("--list", action="store_true", help="print the scopes and the RTL mutants, run nothing")
    p.add_argument(
        "--report-only",
        action="store_true",
        help="print the Python scopes' tables from their last run in build/mutants/py/ "
        "without running mutmut (no RTL)",
    )
    args = p.parse_args(argv)
    wanted = [s.strip() for s in args.scope.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in ("all", "python", "rtl", *scopes)]
    if not wanted or unknown:
        p.error(f"--scope: unknown scope {','.join(unknown) or repr(args.scope)}; choose from {names}")
    py = [s for s in scopes if "all" in wanted or "python" in wanted or s in wanted]
    args.python_scopes = py
    args.rtl = "all" in wanted or "rtl" in wanted
    if args.sim not in (*SIMS, "both"):
        p.error(f"--sim: unknown simulator {args.sim!r}; choose from icarus, verilator, both")
    args.sims = list(SIMS) if args.sim == "both" else [args.sim]
    if args.jobs < 1:
        p.error(f"--jobs must be at least 1, got {args.jobs}")
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    if args.only and not args.rtl:
        p.error("--only names RTL mutants: give --scope rtl (or all)")
    return args


def fmt_time(seconds: float) -> str:
    if seconds != seconds:
        return "time unknown"
    seconds = int(round(seconds))
    return f"{seconds} s" if seconds < 90 else f"{seconds // 60} min {seconds % 60:02d} s"


def rel(path: Path) -> str:
    """`path` relative to the project root where it lies inside it (for messages), else as given."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# -- Python: mutmut -----------------------------------------------------------------------------
def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} as TOML")


def staged_pyproject(pyproject: dict, scope: dict) -> str:
    """The staged scope's pyproject.toml: the project's pytest options and its [tool.mutmut]
    with the scope's files (`only_mutate`) and tests, plus any mutmut key of the scope."""
    mutmut = dict(pyproject.get("tool", {}).get("mutmut", {}))
    mutmut["only_mutate"] = list(scope["mutate"])
    mutmut["pytest_add_cli_args_test_selection"] = list(scope["tests"])
    mutmut.update({k: v for k, v in scope.items() if k not in STAGING_KEYS})
    out = ["# written by workbench/flows/mutants.py for one scope of `make mutants`"]
    for table, values in (
        ("tool.pytest.ini_options", pyproject["tool"]["pytest"]["ini_options"]),
        ("tool.mutmut", mutmut),
    ):
        out.append(f"\n[{table}]")
        out += [f"{k} = {toml_value(v)}" for k, v in values.items() if k != "testpaths"]
    return "\n".join(out) + "\n"


def mutant_globs(scope: dict) -> list[str]:
    """mutmut name patterns of the scope's `functions` ("path/file.py::function",
    "path/file.py::Class.method" or "path/file.py::*"; every function of `mutate` when the
    key is absent, an empty list then). mutmut mutates whole files; these restrict what is run
    and counted to the functions a scope is about (a file that is mostly orchestration has its
    checking and formatting functions tested, the rest left to the end-to-end tests)."""
    globs = []
    for item in scope.get("functions", []):
        path, sep, func = item.partition("::")
        if not sep or not path.endswith(".py") or not func:
            raise BadInput(f"functions: {item!r} is not path/file.py::function")
        module = path.removesuffix(".py").replace("/", ".")
        if func == "*":
            globs.append(f"{module}.*")
        elif "." in func:
            cls, _, method = func.partition(".")
            globs.append(f"{module}.xǁ{cls}ǁ{method}__mutmut_*")
        else:
            globs.append(f"{module}.x_{func}__mutmut_*")
    return globs


def scope_source_paths(pyproject: dict, scope: dict) -> list[str]:
    """The packages copied into a scope's stage: the scope's `source_paths` (a mutmut key, so
    it also reaches the staged [tool.mutmut]) or else the project's. They must hold the mutated
    files; the project's other packages are imported from the working tree."""
    default = pyproject.get("tool", {}).get("mutmut", {}).get("source_paths", ["models", "fpga"])
    return list(scope.get("source_paths", default))


def stage_scope(name: str, scope: dict, pyproject: dict) -> Path:
    stage = OUT / "py" / name
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for src in scope_source_paths(pyproject, scope):
        if not (ROOT / src).is_dir():
            raise BadInput(f"pyproject.toml [tool.mutants.scopes.{name}]: there is no package {src}/")
        shutil.copytree(ROOT / src, stage / src, ignore=ignore)
    (stage / "tests").mkdir()
    support = [f for f in TEST_SUPPORT if (ROOT / "tests" / f).is_file()]
    for f in (*support, *[Path(t).name for t in scope["tests"]]):
        if not (ROOT / "tests" / f).is_file():
            raise BadInput(f"pyproject.toml [tool.mutants.scopes.{name}]: there is no tests/{f}")
        shutil.copy2(ROOT / "tests" / f, stage / "tests" / f)  # scratch: mutmut's staging copy
    (stage / "pyproject.toml").write_text(staged_pyproject(pyproject, scope))  # scratch: staging
    return stage


PROGRESS = re.compile(r"(\d+)/(\d+)\s+\S+\s+(\d+)")


def run_mutmut(name: str, stage: Path, jobs: int, globs: list[str] = ()) -> float:
    """`mutmut run` in the stage (only the mutants matching `globs` when given); progress lines
    on the console; returns the seconds taken."""
    log = OUT / f"{name}.log"
    mutmut = Path(sys.executable).parent / "mutmut"
    print(f"[mutants] {name}: mutmut run in {rel(stage)} (log: {rel(log)})", flush=True)
    t0 = time.time()
    # one thread per worker: the workers are the parallelism (and torch's OpenMP pool does not
    # survive a fork)
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    cmd = [str(mutmut), "run", "--max-children", str(jobs), *globs]
    proc = start_group(cmd, log, cwd=stage, env=env)
    try:
        last_print, first_seen = t0, None
        while proc.poll() is None:
            time.sleep(1)
            if time.time() - last_print < 15:
                continue
            last_print = time.time()
            tail = log.read_text(errors="replace")[-4000:]
            hits = PROGRESS.findall(tail)
            if not hits:
                print(
                    f"[mutants] {name}: generating mutants and mapping tests to functions "
                    f"({fmt_time(time.time() - t0)})",
                    flush=True,
                )
                continue
            done, total = int(hits[-1][0]), int(hits[-1][1])
            if first_seen is None:
                first_seen = (time.time(), done)
                print(f"[mutants] {name}: {done}/{total} mutants tested", flush=True)
                continue
            rate = (done - first_seen[1]) / max(time.time() - first_seen[0], 1e-9)
            # mutmut tests the mutants with the quickest tests first: the rest tend to be slower
            left = (
                f"~{fmt_time((total - done) / rate)} or more left at the rate so far"
                if rate > 0
                else "time left unknown yet"
            )
            print(f"[mutants] {name}: {done}/{total} mutants tested, {left}", flush=True)
    except BaseException:
        kill_group(proc, signal.SIGTERM)
        raise
    elapsed = time.time() - t0
    if proc.returncode != 0:
        text = log.read_text(errors="replace")
        why = (
            "the scope's tests fail without mutants"
            if "Failed to run clean test" in text
            else f"mutmut ended with status {proc.returncode}"
        )
        raise ToolFailure(f"{name}: {why} (log: {rel(log)})")
    return elapsed


def mutmut_results(stage: Path) -> dict:
    """mutant key -> status (mutmut's own names: killed, survived, timeout, no tests, ...)."""
    from mutmut.stats import status_by_exit_code

    results = {}
    for meta in sorted((stage / "mutants").rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        for key, code in data.get("exit_code_by_key", {}).items():
            results[key] = status_by_exit_code[code]
    return results


@functools.cache
def _functions_of(path: Path) -> tuple[list[str], dict]:
    """The lines of a Python file and its functions by name (the mutated copies are megabytes:
    parsed once)."""
    src = path.read_text()
    funcs: dict = {}
    for n in ast.walk(ast.parse(src)):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            funcs.setdefault(n.name, n)
    return src.splitlines(), funcs


def _segment(lines: list[str], node) -> list[str]:
    return lines[node.lineno - 1 : node.end_lineno]


def describe_mutant(stage: Path, key: str) -> tuple[str, str]:
    """(file:line, 'old -> new') of a mutant key such as fpga.cycle_model.x_f__mutmut_3 or
    fpga.compiler.xǁClassǁmethod__mutmut_3, from the mutated copy and the original file."""
    module, _, mangled = key.rpartition(".")
    path = Path(*module.split(".")).with_suffix(".py")
    base = mangled.rsplit("__mutmut_", 1)[0]
    lines, funcs = _functions_of(stage / "mutants" / path)
    orig, mut = funcs.get(f"{base}__mutmut_orig"), funcs.get(mangled)
    if orig is None or mut is None:
        return str(path), "(mutated function not found)"
    # the two copies differ in their names and in the mutation (which may be in the signature)
    func = base[2:] if base.startswith("x_") else base.rsplit("ǁ", 1)[-1]
    a = [x.replace(f"{base}__mutmut_orig", func, 1) for x in _segment(lines, orig)]
    b = [x.replace(mangled, func, 1) for x in _segment(lines, mut)]
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    removed, added, first = [], [], None
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        if first is None:
            first = i1
        removed += [x.strip() for x in a[i1:i2]]
        added += [x.strip() for x in b[j1:j2]]
    # the original function in the real file (the class name is part of the mangled name)
    line = "?"
    original_file = ROOT / path
    if original_file.is_file() and first is not None:
        node = _functions_of(original_file)[1].get(func)
        if node is not None:
            line = str(node.lineno + first)
    change = f"{' / '.join(removed) or '(nothing)'}  ->  {' / '.join(added) or '(removed)'}"
    return f"{path}:{line}", change


def run_python_scope(name: str, scope: dict, pyproject: dict, jobs: int, report_only: bool) -> dict:
    stage = OUT / "py" / name
    globs = mutant_globs(scope)
    if report_only:
        if not (stage / "mutants").is_dir():
            raise BadInput(f"--report-only: {name} has no earlier run in {rel(stage)}")
        elapsed = (
            json.loads((stage / "elapsed.json").read_text())["seconds"]
            if (stage / "elapsed.json").is_file()
            else float("nan")
        )
    else:
        stage = stage_scope(name, scope, pyproject)
        elapsed = run_mutmut(name, stage, jobs, globs)
        write_text_atomic(stage / "elapsed.json", json.dumps({"seconds": round(elapsed, 1)}) + "\n")
    results = mutmut_results(stage)
    if globs:  # the scope's functions only (mutmut ran nothing else)
        results = {k: v for k, v in results.items() if any(fnmatch.fnmatchcase(k, g) for g in globs)}
    if not results:
        raise ToolFailure(f"{name}: mutmut reported no mutants (log: {rel(OUT / f'{name}.log')})")
    counts: dict = {}
    for status in results.values():
        counts[status] = counts.get(status, 0) + 1
    total = len(results)
    killed = counts.get("killed", 0)
    only = f"; functions {', '.join(scope['functions'])}" if scope.get("functions") else ""
    print(f"\n== {name}: {', '.join(scope['mutate'])}{only}  (tests: {', '.join(scope['tests'])})")
    other = total - sum(counts.get(s, 0) for s in ("killed", "survived", "timeout", "no tests"))
    print(
        f"   mutants {total}, killed {killed}, survived {counts.get('survived', 0)}, "
        f"timeout {counts.get('timeout', 0)}, no tests {counts.get('no tests', 0)}"
        + (f", other {other}" if other else "")
        + f"; kill rate {100 * killed / total:.1f} % ({fmt_time(elapsed)})"
    )
    not_killed = sorted(k for k, s in results.items() if s not in ("killed", "timeout"))
    survivors = []
    for key in not_killed:
        where, change = describe_mutant(stage, key)
        survivors.append({"key": key, "status": results[key], "where": where, "change": change})
    if survivors:
        print("   not killed:")
        for s in sorted(
            survivors,
            key=lambda s: (
                s["where"].split(":")[0],
                int(s["where"].rpartition(":")[2]) if s["where"].rpartition(":")[2].isdigit() else 0,
            ),
        ):
            print(f"     {s['where']:<28} {s['status']:<9} {s['change']}   [{s['key'].rpartition('.')[2]}]")
    print(flush=True)
    return {
        "scope": name,
        "mutants": total,
        "killed": killed,
        "counts": counts,
        "kill_rate": killed / total,
        "seconds": round(elapsed, 1),
        "not_killed": survivors,
    }


# -- RTL ----------------------------------------------------------------------------------------
def copy_project(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "sim_build")
    for name in RTL_COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)  # scratch: the RTL mutants' copy


def run_bench(copy: Path, module: str, sim: str, log: Path, limit: float) -> tuple[str, float]:
    """tb/test_<module>.py on `sim` in the copy: ('pass' | 'fail' | 'timeout', seconds)."""
    env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    env.pop("TB_SEED", None)
    env.pop("COCOTB_RANDOM_SEED", None)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-k",
        sim,
        f"tb/test_{module}.py",
    ]
    t0 = time.time()
    rc = wait_group(start_group(cmd, log, cwd=copy, env=env), limit)
    if rc is None:
        return "timeout", time.time() - t0
    if rc == 5:
        raise ToolFailure(f"tb/test_{module}.py -k {sim} selected no tests (log: {rel(log)})")
    return ("pass" if rc == 0 else "fail"), time.time() - t0


def first_failure(log: Path) -> str:
    text = log.read_text(errors="replace")
    if re.search(r"%Error|syntax error|\.v:\d+: error|Elaboration failed", text):
        return "build error"
    m = re.search(r"^FAILED (\S+)", text, flags=re.M)
    return m.group(1).rpartition("::")[2] if m else ""


def run_rtl(mutants: list[dict], sims: list[str]) -> dict:
    out = OUT / "rtl"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    copy = Path(tempfile.mkdtemp(prefix="sacbnn-mutants-"))
    results = []
    try:
        copy_project(copy)
        print(
            f"[mutants] rtl: {len(mutants)} mutants x {', '.join(sims)} in a temporary copy "
            f"{copy} (logs: {rel(out)}/)",
            flush=True,
        )
        modules = sorted({m["module"] for m in mutants})
        baseline = {}
        for sim in sims:
            for module in modules:
                log = out / f"baseline-{module}-{sim}.log"
                status, secs = run_bench(copy, module, sim, log, limit=1800)
                print(
                    f"[mutants] rtl: unmutated tb/test_{module}.py on {sim}: {status} ({fmt_time(secs)})",
                    flush=True,
                )
                if status != "pass":
                    raise ToolFailure(
                        f"the unmutated bench tb/test_{module}.py {status}s on {sim}, "
                        f"so a kill would mean nothing (log: {rel(log)})"
                    )
                baseline[module, sim] = secs
        runs = [(m, sim) for sim in sims for m in mutants]
        estimate = sum(baseline[m["module"], sim] for m, sim in runs)
        print(
            f"[mutants] rtl: {len(runs)} mutant runs; estimate ~{fmt_time(estimate)} (each at most "
            f"as long as its unmutated bench plus rebuilds; a kill stops at the first failure)",
            flush=True,
        )
        t_start = time.time()
        for n, (m, sim) in enumerate(runs, 1):
            src = copy / "rtl" / f"{m['module']}.v"
            original = src.read_text()
            limit = max(120.0, 5 * baseline[m["module"], sim] + 60)
            log = out / f"{m['id']}-{sim}.log"
            try:
                src.write_text(apply_mutant(original, m))  # scratch: the RTL mutants' copy
                status, secs = run_bench(copy, m["module"], sim, log, limit)
            finally:
                src.write_text(original)  # scratch: the RTL mutants' copy
            result = {"fail": "killed", "timeout": "killed (timeout)", "pass": "SURVIVED"}[status]
            how = first_failure(log) if status == "fail" else ""
            results.append(
                {
                    **m,
                    "sim": sim,
                    "result": result,
                    "seconds": round(secs, 1),
                    "killed": status != "pass",
                    "by": how,
                }
            )
            done_time = time.time() - t_start
            left = sum(baseline[mm["module"], s] for mm, s in runs[n:])
            left = min(left, done_time / n * (len(runs) - n)) if n else left
            print(
                f"[mutants] rtl [{n}/{len(runs)}] {m['id']} ({m['module']}, {sim}): {result}"
                f"{f' by {how}' if how else ''} in {fmt_time(secs)}; ~{fmt_time(left)} left",
                flush=True,
            )
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    print("\n== rtl: one-line mutants of rtl/ (tb/rtl_mutants.toml), each against its module's bench")
    print(
        f"   {'mutant':<20} {'module':<20} {'sim':<9} {'kind':<18} {'result':<17} {'s':>5}  "
        f"first failing test"
    )
    for r in results:
        print(
            f"   {r['id']:<20} {r['module']:<20} {r['sim']:<9} {r['kind']:<18} {r['result']:<17} "
            f"{r['seconds']:>5.0f}  {r['by']}"
        )
    summary = {}
    for sim in sims:
        rs = [r for r in results if r["sim"] == sim]
        k = sum(r["killed"] for r in rs)
        summary[sim] = {"mutants": len(rs), "killed": k, "kill_rate": k / len(rs)}
        print(f"   {sim}: killed {k}/{len(rs)}, kill rate {100 * k / len(rs):.1f} %")
    surv = [r for r in results if not r["killed"]]
    for r in surv:
        print(f"   survived: {r['id']} ({r['sim']}) rtl/{r['module']}.v: {r['description']}")
    print(flush=True)
    return {"mutants": results, "per_sim": summary}


# -- main ---------------------------------------------------------------------------------------
def main(argv=None) -> int:
    pyproject = load_pyproject()
    scopes = python_scopes(pyproject)
    args = parse_args(argv, scopes)
    rtl_mutants = []
    if args.rtl or args.list or args.only:
        rtl_mutants = load_rtl_mutants()
        ids = {m["id"] for m in rtl_mutants}
        unknown = [i for i in args.only if i not in ids]
        if unknown:
            raise BadInput(f"--only: unknown mutant id {', '.join(unknown)} (see --list)")
        if args.only:
            rtl_mutants = [m for m in rtl_mutants if m["id"] in args.only]
        check_mutants_apply(rtl_mutants, ROOT / "rtl")
    if args.list:
        for name, scope in scopes.items():
            only = f" (functions {', '.join(scope['functions'])})" if scope.get("functions") else ""
            print(
                f"python {name}: mutate {', '.join(scope['mutate'])}{only}; tests {', '.join(scope['tests'])}"
            )
        for m in rtl_mutants:
            print(f"rtl {m['id']}: rtl/{m['module']}.v ({m['kind']}) {m['description']}")
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "python": [], "rtl": None}
    t0 = time.time()
    try:
        for name in args.python_scopes:
            report["python"].append(
                run_python_scope(name, scopes[name], pyproject, args.jobs, args.report_only)
            )
        if args.rtl and not args.report_only:
            report["rtl"] = run_rtl(rtl_mutants, args.sims)
    except ToolFailure as exc:
        print(f"mutants: error: {exc}", file=sys.stderr)
        return FAILURE
    finally:
        if not args.report_only:
            write_text_atomic(OUT / "summary.json", json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print("== summary")
    for r in report["python"]:
        print(
            f"   python {r['scope']:<12} kill rate {100 * r['kill_rate']:5.1f} % "
            f"({r['killed']}/{r['mutants']}, {len(r['not_killed'])} not killed, {fmt_time(r['seconds'])})"
        )
    if report["rtl"]:
        for sim, s in report["rtl"]["per_sim"].items():
            print(f"   rtl {sim:<15} kill rate {100 * s['kill_rate']:5.1f} % ({s['killed']}/{s['mutants']})")
    print(f"   took {fmt_time(time.time() - t0)}; results: {rel(OUT / 'summary.json')}")
    return 0
