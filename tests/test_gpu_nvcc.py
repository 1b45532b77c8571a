"""nvcc compile check: what CuPy compiles (the same translation unit, NVRTC's options) compiles
for sm_90, every kernel fits the launch bound with its registers, and none spills."""

import shutil

import pytest

from gpu_kernels import build
from gpu_kernels.kernel_table import (
    CUPY_APPENDED_OPTIONS,
    KERNELS,
    NVRTC_OPTIONS,
    TIMING_KERNEL,
    translation_unit,
)
from gpu_kernels.launch import KERNEL_MAX_THREADS, max_threads_for_registers

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


def test_nvcc_compiles_the_text_and_options_cupy_hands_nvrtc():
    src = build.nvcc_instantiation_source()
    assert src.startswith(translation_unit())  # the very text of CupyGpu's RawModule
    assert "#include" not in translation_unit()  # headers inlined: nothing else read
    flags = build.NVCC_FLAGS
    assert flags[: len(NVRTC_OPTIONS) + len(CUPY_APPENDED_OPTIONS)] == NVRTC_OPTIONS + CUPY_APPENDED_OPTIONS
    assert f"-arch={build.NVCC_ARCH}" in flags and build.NVCC_ARCH == "sm_90"  # H200


@needs_nvcc
def test_every_kernel_compiles_for_sm90_within_its_launch_bound():
    cubin, log = build.nvcc_check()
    assert cubin.stat().st_size > 0
    res = build.ptxas_resources(log)
    assert set(res) == {s.expr for s in KERNELS.values()} | {TIMING_KERNEL}
    for name, r in res.items():
        assert r["arch"] == "sm_90", name
        assert (r["spill_stores"], r["spill_loads"], r["stack_bytes"]) == (0, 0, 0), (name, r)
        # __launch_bounds__ keeps every kernel's registers within a 768-thread block
        assert max_threads_for_registers(r["registers"]) >= KERNEL_MAX_THREADS, (name, r)


def test_ptxas_report_is_read_per_kernel():
    log = """ptxas info    : Compiling entry function '_Z11bin_conv3x3IjEviiiiiiPKT_S2_PKiPiiiiii' for 'sm_90'
ptxas info    : Function properties for _Z11bin_conv3x3IjEviiiiiiPKT_S2_PKiPiiiiii
    32 bytes stack frame, 28 bytes spill stores, 52 bytes spill loads
ptxas info    : Used 72 registers, used 0 barriers
ptxas info    : Compiling entry function '_Z12busy_wait_nsx' for 'sm_90'
ptxas info    : Function properties for _Z12busy_wait_nsx
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
"""
    if shutil.which("c++filt") is None:
        pytest.skip("c++filt (binutils) is not installed")
    res = build.ptxas_resources(log)
    assert res["bin_conv3x3<unsigned int>"] == {
        "arch": "sm_90",
        "stack_bytes": 32,
        "spill_stores": 28,
        "spill_loads": 52,
        "registers": 72,
    }
    assert res["busy_wait_ns"]["registers"] == 8
    assert max_threads_for_registers(res["bin_conv3x3<unsigned int>"]["registers"]) == 896
