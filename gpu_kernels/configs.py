"""The eight implementations a layer can run on: the CPU and HEP-BNN's seven GPU
configurations.

X (Data): images of the batch across blocks, one image per block.
Y (Window): windows of consecutive output pixels (row-major) across blocks, one window per block.
Z (Neuron): neurons (output channels, output words, flat outputs) across blocks, one per block.
Combinations spread every named axis across blocks at the same time.
"""

from __future__ import annotations

from gpu_kernels.errors import MappingError

CONFIGS = ("X", "Y", "Z", "XY", "XZ", "YZ", "XYZ")
CPU = "cpu"
HOST, GPU = "host", "gpu"  # where a layer's data lives (runner records, mapper costs)
IMPLS = (CPU,) + CONFIGS  # the order of HEP-BNN's Algorithm 1 (CPU first)


def check_impl(name) -> str:
    """Normalise an implementation name ("xz" -> "XZ", "CPU" -> "cpu") or raise."""
    if isinstance(name, str):
        if name.lower() == CPU:
            return CPU
        if name.upper() in CONFIGS:
            return name.upper()
    raise MappingError(f"unknown implementation {name!r}; use one of {', '.join(IMPLS)}")


def axes(config: str) -> frozenset:
    """The axes a configuration spreads across blocks: a subset of {"X", "Y", "Z"}."""
    return frozenset(check_impl(config))
