#!/usr/bin/env python3
"""Simulated cycles per wall-clock second of a whole program on the accelerator top (8x8 array
by default), on Icarus Verilog and on Verilator. Target on Verilator: >= 250,000 cycles/s.

Each simulator runs the same compiled program (a random SAC network, checked against the golden
executor) a few times from `start` to `done`; the best run counts. Build time is not included.
"""
import argparse
import json
import sys
import tempfile
from pathlib import Path

from fpga.arch import ArrayConfig
from tb.sim import SIMULATORS, run

TARGET = 250_000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", default="8x8", help="ROWSxCOLS (default 8x8)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sim", choices=SIMULATORS, action="append",
                    help="simulator(s) to measure (default both)")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    cfg = ArrayConfig.parse(args.array)
    rows, cols = cfg.rows, cfg.cols
    results = {}
    for sim in args.sim or SIMULATORS:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "perf.json"
            run("accelerator", "perf_accelerator", sim, cfg.hdl_parameters(),
                extra_env={"PERF_OUT": str(out),
                           "PERF_REPEATS": str(args.repeats)})
            results[sim] = json.loads(out.read_text())
    print(f"\nwhole program on the {rows}x{cols} accelerator "
          f"({next(iter(results.values()))['cycles']} cycles, "
          f"{next(iter(results.values()))['instructions']} instructions)")
    for sim, r in results.items():
        note = f" (target >= {TARGET:,})" if sim == "verilator" else ""
        print(f"  {sim:<10} {r['cycles_per_s']:>12,.0f} cycles/s  best of {len(r['wall_s'])}: "
              f"{min(r['wall_s']):.3f} s{note}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
