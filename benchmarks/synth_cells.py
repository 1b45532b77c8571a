#!/usr/bin/env python3
"""`make synth`: LUT and flip-flop counts of sac_cell and mac_cell from yosys synth_xilinx
(7-series LUT fabric only: no DSPs, no I/O buffers, no clock buffers), their ratios, and the
seed paper's ratios (Vivado, its Table 1) beside them.

Both cells have the same ports, timing and throughput (4 interleaved 32-bit bit-serial lanes,
a new 8-bit input every 8 cycles, zero skipping), so the comparison is like for like.
"""
import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAPER = {"lut_ratio": 4.85, "ff_ratio": 3.54}


def synth(module: str) -> dict:
    script = (f"read_verilog {ROOT / 'rtl' / (module + '.v')}; "
              f"synth_xilinx -top {module} -family xc7 -nodsp -noiopad -noclkbuf -flatten; stat")
    out = subprocess.run(["yosys", "-p", script], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"yosys failed on {module}:\n{out.stdout[-3000:]}{out.stderr}")
    report = out.stdout[out.stdout.rindex(f"=== {module} ==="):]     # the final `stat`
    cells = {m.group(1): int(m.group(2))
             for m in re.finditer(r"^\s+(\w+)\s+(\d+)\s*$", report, re.M)}
    luts = sum(v for k, v in cells.items() if re.fullmatch(r"LUT\d", k))
    ffs = sum(v for k, v in cells.items() if re.fullmatch(r"FD\w*", k))
    muxes = sum(v for k, v in cells.items() if k.startswith("MUXF"))
    carry = sum(v for k, v in cells.items() if k.startswith("CARRY"))
    return {"luts": luts, "ffs": ffs, "muxf": muxes, "carry4": carry, "cells": cells}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    sac, mac = synth("sac_cell"), synth("mac_cell")
    lut_ratio = mac["luts"] / sac["luts"]
    ff_ratio = mac["ffs"] / sac["ffs"]
    print(f"{'cell':<10}{'LUTs':>6}{'FFs':>6}{'MUXF7/8':>9}{'CARRY4':>8}")
    for name, r in (("sac_cell", sac), ("mac_cell", mac)):
        print(f"{name:<10}{r['luts']:>6}{r['ffs']:>6}{r['muxf']:>9}{r['carry4']:>8}")
    print(f"MAC/SAC LUT ratio {lut_ratio:.2f}x (paper {PAPER['lut_ratio']}x), "
          f"FF ratio {ff_ratio:.2f}x (paper {PAPER['ff_ratio']}x)")
    if args.json:
        args.json.write_text(json.dumps({"sac_cell": sac, "mac_cell": mac, "lut_ratio": lut_ratio,
                                         "ff_ratio": ff_ratio, "paper": PAPER}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
