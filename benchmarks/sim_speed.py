#!/usr/bin/env python3
"""Simulated cycles per wall-clock second of a whole program on the accelerator top, on Icarus
Verilog and on Verilator, for one or more array sizes and (Verilator) thread counts.

Each simulator runs the same compiled program (a random SAC network with two filter tiles per
layer, checked against the golden executor) a few times from `start` to `done` with no Python
per clock edge (tb/perf_accelerator.py); the best run counts. Build time is not included but is
printed (each array size and thread count is its own build; a cached build takes seconds).

    .venv/bin/python benchmarks/sim_speed.py                       # 8x8, both simulators
    .venv/bin/python benchmarks/sim_speed.py --sim verilator --array 8x8 16x16 32x32 \\
        --threads 1 2                                              # the table of docs/verification.md

Simulator speed falls with the number of cells; the last line extrapolates the largest array
measured to a 128x64 one (cycles/s times the ratio of cells), the cost of simulating a
full-size instance.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from fpga.arch import ArrayConfig
from safeio import write_text_atomic
from tb.sim import SIMULATORS, build, test

TARGET = 250_000  # Verilator, 8x8, one thread (the FPGA issue's target)
BIG = (128, 64)  # the size the extrapolation is for


def measure(cfg: ArrayConfig, sim: str, threads: int, repeats: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        bdir = build(
            "accelerator",
            sim,
            cfg.hdl_parameters(),
            waves=False,
            threads=threads,
            log_file=Path(tmp) / "build.log",
        )
        build_s = time.perf_counter() - t0
        out = Path(tmp) / "perf.json"
        test(
            "accelerator",
            "perf_accelerator",
            sim,
            bdir,
            cfg.hdl_parameters(),
            extra_env={"PERF_OUT": str(out), "PERF_REPEATS": str(repeats), "COCOTB_LOG_LEVEL": "WARNING"},
            waves=False,
            test_dir=Path(tmp),
            log_file=Path(tmp) / "sim.log",
        )
        if not out.exists():
            tail = (Path(tmp) / "sim.log").read_text(errors="replace").splitlines()[-15:]
            raise SystemExit(f"sim_speed: the {sim} run failed:\n" + "\n".join(tail))
        result = json.loads(out.read_text())
    result["build_s"] = build_s
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", nargs="+", default=["8x8"], help="ROWSxCOLS ... (default 8x8)")
    ap.add_argument(
        "--threads",
        nargs="+",
        type=int,
        default=[1],
        help="Verilator model threads (--threads N of the build), default 1",
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--sim", choices=SIMULATORS, action="append", help="simulator(s) to measure (default both)"
    )
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    try:
        cfgs = [ArrayConfig.parse(a) for a in args.array]
    except ValueError as exc:
        print(f"sim_speed: error: --array: {exc}", file=sys.stderr)
        return 2
    if any(t < 1 for t in args.threads):
        print("sim_speed: error: --threads must be at least 1", file=sys.stderr)
        return 2
    rows = []
    for cfg in cfgs:
        for sim in args.sim or SIMULATORS:
            for threads in args.threads if sim == "verilator" else [1]:
                r = measure(cfg, sim, threads, args.repeats)
                rows.append({"array": f"{cfg.rows}x{cfg.cols}", "sim": sim, "threads": threads, **r})
                print(
                    f"[sim_speed] {cfg.rows}x{cfg.cols} {sim} threads {threads}: "
                    f"{r['cycles_per_s']:,.0f} cycles/s (build {r['build_s']:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    print(
        f"\nwhole program on the accelerator top, best of {args.repeats} runs from start to "
        f"done (no Python per clock edge)"
    )
    print(
        f"  {'array':<7} {'simulator':<10} {'threads':>7} {'cycles':>8} {'cycles/s':>12} "
        f"{'wall s':>7}  cells x cycles/s"
    )
    for r in rows:
        note = (
            f" (target >= {TARGET:,})"
            if (r["sim"], r["array"], r["threads"]) == ("verilator", "8x8", 1)
            else ""
        )
        print(
            f"  {r['array']:<7} {r['sim']:<10} {r['threads']:>7} {r['cycles']:>8} "
            f"{r['cycles_per_s']:>12,.0f} {min(r['wall_s']):>7.3f}  "
            f"{r['cells'] * r['cycles_per_s']:.2e}{note}"
        )
    verilator = [r for r in rows if r["sim"] == "verilator"]
    if verilator:
        big = max(verilator, key=lambda r: (r["cells"], r["cycles_per_s"]))
        best = max((r for r in verilator if r["cells"] == big["cells"]), key=lambda r: r["cycles_per_s"])
        est = best["cycles_per_s"] * best["cells"] / (BIG[0] * BIG[1])
        print(
            f"  extrapolated {BIG[0]}x{BIG[1]} on Verilator (from {best['array']}, "
            f"{best['threads']} thread(s), cycles/s x cells constant): ~{est:,.0f} cycles/s"
        )
    if args.json:
        write_text_atomic(args.json, json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
