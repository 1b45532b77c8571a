#!/usr/bin/env python3
"""The FPGA path of scripts/compare_gpu_fpga.py on many images: the compiled network on the
instruction-level interpreter (every image, every instruction; no RTL images), with the golden
executor on the same images in the same run as the anchor, and every layer compared.

Target: 10,000 Fashion-MNIST-size images well under the data issue's 5-minute
budget.

    .venv/bin/python benchmarks/fpga_path_speed.py [--data /usr/share/datasets/fashion-mnist] \\
        [--model tests/fixtures/hepbnn_fashion.onnx] [--images 10000]
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from fpga.execute import batch_size
from safeio import write_text_atomic
from workbench.compare import (
    CompareError,
    Options,
    load_data,
    load_model,
    mismatches,
    run_fpga,
    run_golden,
)

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 300.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=ROOT / "tests" / "fixtures" / "hepbnn_fashion.onnx")
    ap.add_argument(
        "--data", default="/usr/share/datasets/fashion-mnist", help="a dataset path or name, or random[:SEED]"
    )
    ap.add_argument("--images", type=int, default=10_000)
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    opts = Options(
        model=args.model, data=args.data, images=args.images, rtl_images=0, array=args.array, progress=False
    )
    try:
        net = load_model(opts.model)
        x, _, desc = load_data(opts, net)
    except CompareError as exc:
        print(f"fpga_path_speed: error: {exc}", file=sys.stderr)
        return 2
    print(
        f"{net.name} ({args.model.name}) on {len(x)} images of {desc}, {args.array} array, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        flush=True,
    )
    t0, c0 = time.perf_counter(), time.process_time()
    ref = run_golden(net, x)
    golden_s, golden_cpu = time.perf_counter() - t0, time.process_time() - c0
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        fpga = run_fpga(net, x, opts, Path(tmp))
        fpga_s, fpga_cpu = time.perf_counter() - t0, time.process_time() - c0
    bad = sum(m["count"] for m in mismatches(ref, fpga, len(net.layers)) if m)
    info = fpga.info
    from fpga.compiler import compile_network, fitted_config  # the batch the job used

    rows, cols = (int(v) for v in args.array.split("x"))
    batch = batch_size(compile_network(net, fitted_config(net, rows, cols, opts.cmax)))
    print(
        f"  golden executor (anchor)    {golden_s:8.1f} s ({golden_cpu:.1f} CPU s), "
        f"{1e3 * golden_s / len(x):.2f} ms/image"
    )
    print(
        f"  FPGA path (interpreter)     {fpga_s:8.1f} s ({fpga_cpu:.1f} CPU s), "
        f"{1e3 * fpga_s / len(x):.2f} ms/image; {info['instructions']} instructions, "
        f"{info['cycles_per_image']:,} cycles/image, batches of {batch} images"
    )
    print(
        f"  FPGA path / golden: {fpga_s / golden_s:.2f}x; mismatching elements against golden, "
        f"every layer: {bad}"
    )
    print(
        f"target: FPGA path on {len(x)} images well under {BUDGET_S:.0f} s: "
        f"{'met' if fpga_s < BUDGET_S / 2 else 'NOT met'} ({fpga_s:.0f} s)"
    )
    if args.json:
        write_text_atomic(
            args.json,
            json.dumps(
                {
                    "images": len(x),
                    "golden_s": golden_s,
                    "fpga_s": fpga_s,
                    "golden_cpu_s": golden_cpu,
                    "fpga_cpu_s": fpga_cpu,
                    "mismatches": bad,
                    "batch": batch,
                },
                indent=2,
            ),
        )
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
