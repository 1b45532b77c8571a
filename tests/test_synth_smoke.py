"""Quick synthesis smoke test: `benchmarks/synth.py --cells-only` synthesizes sac_cell and
mac_cell (one multiplier per lane, as the paper's, and one shared) with yosys synth_xilinx
(seconds; `make synth` does the arrays, the whole top and place and route). The cells must
synthesize, the SAC cell must stay within the per-cell budget on its own (at most 30
LUTs, 40 FFs; in the array it shares its weight decoding) and cost less than either MAC cell of
the same throughput, and the MAC cells must be the structures they are named for."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.flows import synth

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys not installed (make setup)")
def test_cells_synthesize_within_budget(tmp_path):
    out = subprocess.run(
        [sys.executable, "benchmarks/synth.py", "--cells-only", "--json", str(tmp_path / "cells.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "MAC/SAC: LUTs" in out.stdout
    res = json.loads((tmp_path / "cells.json").read_text())["cells"]
    sac, mac, shared = res["sac_cell"], res["mac_cell"], res["mac_cell_shared"]
    assert sac["srl"] == 1, "the delay line should be one SRL16E"
    assert sac["luts"] <= 30 and sac["ffs"] <= 40, sac
    for m in (mac, shared):
        assert m["luts"] > sac["luts"] and m["ffs"] > sac["ffs"], (m, sac)
    # a 9-bit adder is 3 CARRY4: four of them with one multiplier per lane, one when shared
    assert (mac["carry4"], shared["carry4"]) == (12, 3), (mac, shared)


@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys not installed (make setup)")
def test_every_synthesis_source_is_read_by_yosys():
    """`make synth` reads every rtl/ file but the simulation-only ones: yosys must parse them
    (a bench-only file among them once stopped the whole-top synthesis at its $readmemh)."""
    files = synth.sources().split()
    assert files and not any(Path(f).name in synth.SIMULATION_ONLY for f in files)
    out = subprocess.run(
        ["yosys", "-q", "-p", f"read_verilog {' '.join(files)}; hierarchy -top accelerator_axi"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys not installed (make setup)")
def test_rest_of_the_top_reads_the_array_as_a_black_box():
    """`make synth` measures the accelerator at the paper's size without its array: the array
    must be a black box (no cells of its own), everything else elaborated at the given size."""
    out = subprocess.run(
        [
            "yosys",
            "-p",
            f"{synth.read_without_array()}; chparam -set ROWS 16 "
            "-set COLS 16 -set CMAX 128 accelerator; hierarchy -top accelerator; "
            "tee -o /dev/stdout stat",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr
    stat = out.stdout[out.stdout.rindex("Printing statistics") :]
    modules = re.findall(r"^=== (.+) ===$", stat, re.M)
    assert any(m.endswith("accelerator") for m in modules) and any(
        m.endswith("channel_shift") for m in modules
    ), modules
    assert not any("systolic_array" in m or "sac_cell" in m for m in modules), modules
    assert re.search(r"^\s+systolic_array\s+1$", stat, re.M), "the array instance is missing"


def test_make_synth_starts_the_longest_runs_first():
    """The pool of `make synth` starts the rest at 128x64 and the tops' place and route first
    (each 20-45 min), the larger first, and the seconds-long cell runs last."""
    keys = [
        ("cells", "sac_cell"),
        ("arrays", "8x8"),
        ("arrays", "32x16"),
        ("tops", "8x8"),
        ("ecp5", "array 16x16"),
        ("ecp5", "top 8x8"),
        ("ecp5", "top 16x16"),
        ("rest", "128x64 CMAX 512"),
        ("tops", "16x16"),
    ]
    assert synth.longest_first(keys) == [
        ("rest", "128x64 CMAX 512"),
        ("ecp5", "top 16x16"),
        ("ecp5", "top 8x8"),
        ("tops", "16x16"),
        ("tops", "8x8"),
        ("ecp5", "array 16x16"),
        ("arrays", "32x16"),
        ("arrays", "8x8"),
        ("cells", "sac_cell"),
    ]
