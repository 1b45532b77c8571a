"""One model through every path: golden executor, GPU kernels, FPGA (RTL + cycle model).

Reports agreement layer by layer, accuracy, cycles, latency and energy; writes DIR/report.json,
DIR/report.md and PNG plots. Exit status: 0 when every path equals the golden model, 1 on any
mismatch, 2 on bad arguments or inputs, 3 when the RTL simulator could not be built or a
simulation failed (its log is kept as DIR/rtl_failure.log). See README ("Your own model and
data").
"""
import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")     # before torch or the CPU kernels load

from workbench.compare import CompareError, Options, RtlFailure, run  # noqa: E402
from workbench.report import summary_lines, write_all  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="compare_gpu_fpga", description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, type=Path, help="ONNX file (BNN or SAC CNN)")
    ap.add_argument("--data", default="digits",
                    help="digits (embedded default), a dataset path (MNIST/Fashion-MNIST IDX, "
                         "CIFAR-10 batches, HEP-BNN CSV), or random[:SEED]")
    ap.add_argument("--images", type=int, default=100, help="images through golden/GPU/FPGA model")
    ap.add_argument("--rtl-images", type=int, default=2, help="of those, how many through the RTL")
    ap.add_argument("--rtl-jobs", type=int, default=None, metavar="N",
                    help="simulator processes the RTL images are sharded over (default: the "
                         "number of cores); results are merged in image order")
    ap.add_argument("--address", default=None, metavar="ADDR",
                    help="run the RTL shards as tasks on the Ray cluster at ADDR (host:port or "
                         "auto); 'local' starts a Ray instance on this machine")
    ap.add_argument("--sim", default="verilator", choices=["verilator", "icarus"])
    ap.add_argument("--array", default="8x8", help="SAC array ROWSxCOLS")
    ap.add_argument("--clock-mhz", type=float, default=170.0, help="FPGA clock (seed: 170 MHz)")
    ap.add_argument("--batch", type=int, default=64, help="GPU batch size")
    ap.add_argument("--out", type=Path, default=Path("out/compare"))
    ap.add_argument("--save-outputs", action="store_true",
                    help="write DIR/outputs/{golden,gpu,fpga}.npy (final scores)")
    ap.add_argument("--inject-fault", choices=["gpu", "fpga"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    opts = Options(model=args.model, data=args.data, images=args.images,
                   rtl_images=args.rtl_images, sim=args.sim, array=args.array,
                   clock_mhz=args.clock_mhz, batch=args.batch, out=args.out,
                   save_outputs=args.save_outputs, inject_fault=args.inject_fault,
                   rtl_jobs=args.rtl_jobs, address=args.address)
    try:
        report, code = run(opts)
    except CompareError as exc:
        print(f"compare_gpu_fpga: error: {exc}", file=sys.stderr)
        return 3 if isinstance(exc, RtlFailure) else 2
    print("\n".join(summary_lines(report)))
    files = write_all(report, args.out)
    print(f"\nreport: {files[1]} (and {', '.join(p.name for p in files if p != files[1])} in "
          f"{args.out})")
    if code:
        print("MISMATCH: a path differs from the golden model (see the table above)",
              file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
