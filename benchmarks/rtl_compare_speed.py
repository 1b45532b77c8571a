#!/usr/bin/env python3
"""RTL through the compare job at simulator speed: simulated cycles per wall-clock second of the
RTL images of scripts/compare_gpu_fpga.py for both zoo models, against the raw simulator speed
measured in the same run.

For each model the compare job runs (workbench.compare.run, digits test images, one simulator
process: --rtl-jobs 1) and reports, from inside the simulator process:
  * raw: cycles / wall time from `start` to `done` of every run (the simulator alone, the
    same build and program: the anchor);
  * end to end: cycles / wall time of the whole RTL job in that process (program load, every
    image's bulk transfers, host layers, trace and tensor reads, runs);
  * with start-up: cycles / wall time of the simulator process including its start (Python,
    numpy and cocotb imports; not the build).
Target: end to end >= 80% of raw for both models. With --sim-speed (default) the
8x8 top's raw speed from benchmarks/sim_speed.py's probe is measured too, as a second anchor.

    .venv/bin/python benchmarks/rtl_compare_speed.py [--rtl-images 4] [--no-sim-speed]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from models import zoo
from safeio import write_text_atomic
from workbench.compare import CompareError, Options, run

MODELS = ("sac_digits", "bnn_digits")
TARGET = 0.80


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtl-images", type=int, default=4, help="images through the RTL per model")
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--sim", default="verilator", choices=["verilator", "icarus"])
    ap.add_argument(
        "--no-sim-speed",
        action="store_true",
        help="skip the second anchor (benchmarks/sim_speed.py's probe, 8x8 top)",
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            opts = Options(
                model=zoo.path(name),
                data="digits",
                images=args.rtl_images,
                rtl_images=args.rtl_images,
                sim=args.sim,
                rtl_jobs=1,
                out=Path(tmp) / name,
                progress=False,
            )
            try:
                report, code = run(opts)
            except CompareError as exc:
                print(f"rtl_compare_speed: error: {exc}", file=sys.stderr)
                return 2
            rtl = report["fpga"]["rtl"]
            shard = rtl["shards"][0]
            cycles = sum(rtl["cycles"])
            rows.append(
                {
                    "model": name,
                    "images": rtl["images"],
                    "cycles_per_image": rtl["cycles"][0],
                    "mismatches": report["mismatches"]["fpga"],
                    "cycles_match_model": rtl["cycles_match_model"],
                    "raw": rtl["sim_cycles_per_s"],
                    "end_to_end": rtl["end_to_end_cycles_per_s"],
                    "with_startup": cycles / shard["process_s"],
                    "load_s": shard["load_s"],
                    "load_words": shard["load_words"],
                    "bulk_load_s": shard["bulk_load_s"],
                    "bulk_read_s": shard["bulk_read_s"],
                    "job_s": shard["job_s"],
                    "sim_s": shard["sim_s"],
                    "process_s": shard["process_s"],
                    "exit": code,
                }
            )
            print(
                f"[rtl_compare_speed] {name}: {rows[-1]['end_to_end']:,.0f} of "
                f"{rows[-1]['raw']:,.0f} cycles/s",
                file=sys.stderr,
                flush=True,
            )
    anchor = None
    if not args.no_sim_speed:  # benchmarks/sim_speed.py itself, 8x8, one thread
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "sim_speed.json"
            subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).with_name("sim_speed.py")),
                    "--sim",
                    args.sim,
                    "--array",
                    "8x8",
                    "--json",
                    str(out),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            anchor = json.loads(out.read_text())[0]["cycles_per_s"]

    print(
        f"\nRTL images through compare_gpu_fpga.py on {args.sim} (bench wrapper, bulk "
        f"transfers, one simulator process), load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  {'model':<11} {'images':>6} {'cycles/img':>10} {'raw c/s':>10} {'e2e c/s':>10} "
        f"{'e2e/raw':>7} {'+startup':>10} {'mism.':>5} {'cycles=model':>12}"
    )
    ok = True
    for r in rows:
        ratio = r["end_to_end"] / r["raw"]
        ok &= ratio >= TARGET and r["mismatches"] == 0 and r["cycles_match_model"]
        print(
            f"  {r['model']:<11} {r['images']:>6} {r['cycles_per_image']:>10,} "
            f"{r['raw']:>10,.0f} {r['end_to_end']:>10,.0f} {100 * ratio:>6.1f}% "
            f"{r['with_startup']:>10,.0f} {r['mismatches']:>5} {str(r['cycles_match_model']):>12}"
        )
        print(
            f"  {'':<11} program load {r['load_words']:,} words in {r['load_s']:.2f} s; "
            f"bulk writes {r['bulk_load_s']:.2f} s, reads {r['bulk_read_s']:.2f} s; runs "
            f"{r['sim_s']:.2f} s of a {r['job_s']:.2f} s job, process {r['process_s']:.2f} s"
        )
    if anchor is not None:
        print(f"  anchor: benchmarks/sim_speed.py probe, 8x8 top, same run: {anchor:,.0f} cycles/s")
    print(
        f"target: end to end >= {TARGET:.0%} of raw for every model, zero mismatches, cycles "
        f"equal to the model: {'met' if ok else 'NOT met'}"
    )
    if args.json:
        write_text_atomic(args.json, json.dumps({"rows": rows, "sim_speed_8x8": anchor}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
