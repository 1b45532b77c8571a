#!/usr/bin/env python3
"""RTL images in parallel: images per second of the compare job's RTL stage
(workbench.rtl_shards: images cut into shards, one simulator process each, built once, merged in
image order) for 1, 2, ... jobs, and over a Ray cluster, in the same run; every sharded run's
results (every layer's output, every instruction's cycles and activity) must equal the
one-process run's.

images/s counts the whole stage as a user waits for it: the build check, process start-ups,
program loads, every image; --images should be several times the number of jobs.

    .venv/bin/python benchmarks/rtl_parallel.py [--model sac_digits] [--images 8] \\
        [--jobs 1 2] [--address local]
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from fpga.compiler import compile_network, fitted_config
from models import zoo
from models.datasets import load_for_network
from models.onnx import load_network
from safeio import write_text_atomic
from workbench import rtl_shards


def same_results(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b, strict=True):
        if ra["segments"] != rb["segments"] or ra["outputs"].keys() != rb["outputs"].keys():
            return False
        if not all(np.array_equal(ra["outputs"][i], rb["outputs"][i]) for i in ra["outputs"]):
            return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="sac_digits", help="a zoo model name or an ONNX file")
    ap.add_argument("--images", type=int, default=8)
    ap.add_argument("--jobs", nargs="+", type=int, default=[1, 2])
    ap.add_argument(
        "--address", default=None, help="also run the shards as Ray tasks ('local': a Ray instance here)"
    )
    ap.add_argument("--sim", default="verilator", choices=["verilator", "icarus"])
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.images < 1 or any(j < 1 for j in args.jobs):
        print("rtl_parallel: error: --images and --jobs must be at least 1", file=sys.stderr)
        return 2
    path = zoo.path(args.model) if args.model in zoo.names() else Path(args.model)
    net = load_network(path)
    rows_, cols_ = (int(v) for v in args.array.lower().split("x"))
    prog = compile_network(net, fitted_config(net, rows_, cols_, 64))
    x, _ = load_for_network("digits", net, split="test")
    x = x[: args.images]
    print(
        f"{path.name}: {len(prog.words)} instructions, {len(x)} digits test images on "
        f"{args.sim}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    runs = [(j, None) for j in args.jobs] + ([(max(args.jobs), args.address)] if args.address else [])
    rows, ref = [], None
    with tempfile.TemporaryDirectory() as tmp:
        rtl_shards.build(prog, args.sim, Path(tmp) / "build.log")  # once, not timed
        for k, (jobs, address) in enumerate(runs):
            res = rtl_shards.run(prog, x, args.sim, jobs, Path(tmp) / f"run{k}", address, progress=False)
            same = True if ref is None else same_results(ref, res["results"])
            ref = ref or res["results"]
            rows.append(
                {
                    "jobs": res["jobs"],
                    "address": address,
                    "wall_s": res["wall_s"],
                    "connect_s": res["connect_s"],
                    "images_per_s": len(x) / res["wall_s"],
                    "identical": same,
                    "shards": res["shards"],
                }
            )
            print(
                f"[rtl_parallel] {res['jobs']} job(s){' on Ray ' + address if address else ''}"
                f": {rows[-1]['images_per_s']:.2f} images/s",
                file=sys.stderr,
                flush=True,
            )
    base = rows[0]["images_per_s"]
    print(
        f"\n  {'jobs':>4} {'where':<12} {'wall s':>7} {'images/s':>9} {'speed-up':>8} "
        f"{'identical to 1 job':>18}  per shard: images, process s (of which job s)"
    )
    for r in rows:
        where = f"Ray {r['address']}" if r["address"] else "processes"
        shards = ", ".join(f"{s['images']}: {s['process_s']:.1f} ({s['job_s']:.1f})" for s in r["shards"])
        print(
            f"  {r['jobs']:>4} {where:<12} {r['wall_s']:>7.2f} {r['images_per_s']:>9.2f} "
            f"{r['images_per_s'] / base:>7.2f}x {str(r['identical']):>18}  {shards}"
            + (f"; Ray start {r['connect_s']:.1f} s" if r["address"] else "")
        )
    if args.json:
        write_text_atomic(args.json, json.dumps(rows, indent=2))
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
