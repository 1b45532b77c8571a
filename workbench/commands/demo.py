"""`make demo`: the main job on the embedded default data (`make demo-fashion`: on Fashion-MNIST).

The trained digits BNN from models/zoo, then the trained digits SAC CNN, each through
scripts/compare_gpu_fpga.py: all 364 digits test images through the golden executor, the GPU
kernels (CuPy, or the CPU emulation of the same CUDA source without a GPU) and the FPGA path
(3 images on the RTL under Verilator, the rest on the cycle-exact interpreter). Prints each
summary table and where the reports are (out/demo/<model>/, replaced by every demo run); fails
if any path differs from the golden model.

With --fashion: the Fashion-MNIST zoo models (bnn_fashion, sac_fashion) on all 10,000 test
images of the real Fashion-MNIST (Debian package dataset-fashion-mnist), 8 of them on the RTL.
"""

import sys
import time
from pathlib import Path

from models import zoo
from workbench.commands import compare
from workbench.commands.args import ArgumentParser, guarded

ROOT = Path.cwd()

# (model, --data, --images, --rtl-images)
RUNS = [("bnn_digits", "digits", 364, 3), ("sac_digits", "digits", 364, 3)]
FASHION_RUNS = [("bnn_fashion", "fashion", 10000, 8), ("sac_fashion", "fashion", 10000, 8)]


PROG = "sacbench demo"


@guarded(PROG)
def main(argv=None) -> int:
    ap = ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument(
        "--fashion",
        action="store_true",
        help="the Fashion-MNIST models on the 10,000 real test images instead",
    )
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    codes, reports = [], []
    for name, data, images, rtl_images in FASHION_RUNS if args.fashion else RUNS:
        out = ROOT / "out" / "demo" / name
        print(f"\n=== {name}: {zoo.path(name)} ===", flush=True)
        t1 = time.perf_counter()
        codes.append(
            compare.main(
                [
                    "--model",
                    str(zoo.path(name)),
                    "--data",
                    data,
                    "--images",
                    str(images),
                    "--rtl-images",
                    str(rtl_images),
                    "--out",
                    str(out),
                    "--save-outputs",
                    "--force",
                ]
            )
        )
        if args.fashion:
            print(f"{name}: compare took {time.perf_counter() - t1:.0f} s", flush=True)
        reports.append(out / "report.md")
    print(f"\ndemo finished in {time.perf_counter() - t0:.0f} s; reports:")
    for path in reports:
        print(f"  {path}")
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
