"""`make demo`: the main job on the embedded default data.

The trained digits BNN from models/zoo, then the trained digits SAC CNN, each through
scripts/compare_gpu_fpga.py: all 364 digits test images through the golden executor, the GPU
kernels (CuPy, or the CPU emulation of the same CUDA source without a GPU) and the FPGA path
(3 images on the RTL under Verilator, the rest on the cycle-exact interpreter). Prints each
summary table and where the reports are (out/demo/<model>/, replaced by every demo run); fails
if any path differs from the golden model.
"""
import sys
import time
from pathlib import Path

from models import zoo
from workbench.commands import compare
from workbench.commands.args import ArgumentParser, guarded

ROOT = Path.cwd()

RUNS = [("bnn_digits", 3), ("sac_digits", 3)]


@guarded("demo")
def main(argv=None) -> int:
    ArgumentParser(prog="demo", description=__doc__.split("\n\n")[0],
                   epilog=__doc__.split("\n\n", 1)[1]).parse_args(argv)
    t0 = time.perf_counter()
    codes, reports = [], []
    for name, rtl_images in RUNS:
        out = ROOT / "out" / "demo" / name
        print(f"\n=== {name}: {zoo.path(name)} ===", flush=True)
        codes.append(compare.main([
            "--model", str(zoo.path(name)), "--data", "digits",
            "--images", "364", "--rtl-images", str(rtl_images), "--out", str(out),
            "--save-outputs", "--force"]))
        reports.append(out / "report.md")
    print(f"\ndemo finished in {time.perf_counter() - t0:.0f} s; reports:")
    for path in reports:
        print(f"  {path}")
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
