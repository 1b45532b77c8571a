"""pytest configuration of the tests/ suite: a report header that says which optional parts can
run here (so that the ~1,350 CuPy cases skipped on a machine without a GPU are no surprise).
Helpers that are not hooks or fixtures are in tests/helpers.py."""

from __future__ import annotations

import shutil


def pytest_report_header(config):
    from gpu_kernels.devices import cuda_available

    gpu = "CuPy with a CUDA device" if cuda_available() else "no CUDA device: CuPy cases skip"
    gxx = "g++ found" if shutil.which("g++") else "no g++: emulation and CPU-kernel cases skip"
    return [f"GPU path: {gpu}; {gxx}"]
