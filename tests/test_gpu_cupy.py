"""The kernels on a real GPU through CuPy (RawModule): whole networks, the emulation's launch
plans, the compiled kernels' limits and the launch timing, and the exactness matrix of
tests/test_gpu_kernels.py imported with its `backend` fixture fixed to cupy, so that this file
alone (what scripts/gpu_check.sh runs) checks the matrix on the GPU too, and every fused
kernel on its cases (gpu_kernels.layer_cases.check_fused_case) and in whole networks; where
both files are collected, tests/conftest.py runs each of those cases once, in
tests/test_gpu_kernels.py.
Marked `gpu`; skipped where CuPy or a CUDA device is missing (run by scripts/gpu_check.sh on a
GPU machine, whose Python has numpy, CuPy and pytest only: tests that also need the g++ builds
skip when those cannot be built there)."""

import numpy as np
import pytest

from gpu_kernels import CONFIGS, BuildError, Runner, cuda_available, run_network
from gpu_kernels.devices import get_gpu
from gpu_kernels.launch import DEFAULT_THREADS, KERNEL_MAX_THREADS
from gpu_kernels.layer_cases import (
    FUSED_FAMILIES,
    FUSED_THREADS,
    case_seed,
    check_fused_case,
    fused_case_label,
    fused_family_cases,
    make_case,
)
from models import golden
from models.random_networks import cifar10_bnn, fashion_bnn, random_images
from tests.helpers import assert_same
from tests.test_gpu_kernels import (
    failures_of,
    report,
    test_kernel_equals_golden,
    test_padding_bits_never_count,
    test_step_warp_kernel_equals_golden,
)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cuda_available(), reason="needs CuPy and a CUDA device"),
]


def needs_build(what: str) -> None:
    """Skip unless the g++ build `what` ("cpu" implementation or "emulation") works here."""
    try:
        if what == "cpu":
            from gpu_kernels.cpu_impl import cpu_impl

            cpu_impl()
        else:
            get_gpu("emulation")
    except BuildError as exc:
        pytest.skip(f"the {what} build is not available here: {str(exc)[:200]}")


MIXED = ["cpu", "XYZ", "Y", "Z", "XY", "XZ", "YZ", "cpu", "X", "XYZ"]
# the matrix (imported above), here on CuPy only
MATRIX_TESTS = (test_kernel_equals_golden, test_padding_bits_never_count, test_step_warp_kernel_equals_golden)


@pytest.fixture(params=["cupy"])
def backend(request) -> str:
    return request.param


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("mapping", [MIXED, "X", "XYZ", "Y"], ids=["mixed", "X", "XYZ", "Y"])
def test_fashion_network_on_gpu(mapping, bits):
    if "cpu" in mapping:
        needs_build("cpu")
    net = fashion_bnn(31)
    x = random_images(32, 37, net.input_shape)
    ref = golden.run(net, x)
    res = run_network(net, x, mapping, backend="cupy", word_bits=bits, batch=16)
    for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True)):
        assert_same(a, b, f"layer {i}")
    assert np.array_equal(res.predictions, ref.predictions)
    assert all(r.seconds > 0 for r in res.layers if r.device == "gpu")
    assert "CUDA events" in res.timing


@pytest.mark.parametrize("config", CONFIGS)
def test_cifar10_network_on_gpu(config):
    net = cifar10_bnn(33)
    x = random_images(34, 3, net.input_shape)
    ref = golden.run(net, x)
    res = run_network(net, x, config, backend="cupy", word_bits=64)
    for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True)):
        assert_same(a, b, f"layer {i}")


@pytest.mark.parametrize("family", list(FUSED_FAMILIES))
def test_fused_kernel_equals_golden_on_gpu(family):
    """Every case of a fused kernel family (tests/test_gpu_fused*.py's matrix: the cases of the
    layer it starts with, a Step after it, a pooling for the pooled kernels), blocks of whole,
    partial and sub-warp thread counts in turn, on the GPU: each failing case listed."""
    gpu = get_gpu("cupy")
    cases = fused_family_cases(family, CONFIGS)
    checks = []
    for i, case in enumerate(cases):
        threads = FUSED_THREADS[i % len(FUSED_THREADS)]
        checks.append(
            (
                fused_case_label(family, case, threads),
                lambda case=case, threads=threads: check_fused_case(gpu, family, case, threads),
            )
        )
    failed = failures_of(checks)
    assert not failed, report(f"{family} cases on the GPU", len(checks), failed)


@pytest.mark.parametrize(
    "make, config, bits",
    [(fashion_bnn, "X", 32), (fashion_bnn, "XY", 64), (fashion_bnn, "XYZ", 32), (cifar10_bnn, "XZ", 64)],
)
def test_networks_with_every_run_fused_on_gpu(make, config, bits):
    """Both shapes with fuse="auto" (every conv + Step (+ MaxPool2d) and BinDense + Step as one
    kernel): every output the run writes golden, the predictions too."""
    net = make(39)
    x = random_images(40, 9, net.input_shape)
    ref = golden.run(net, x)
    res = run_network(net, x, config, backend="cupy", word_bits=bits, batch=4, fuse="auto")
    for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True)):
        if a is not None:
            assert_same(a, b, f"layer {i}")
    assert sum(a is None for a in res.outputs) >= 3 and np.array_equal(res.predictions, ref.predictions)


def test_gpu_and_emulation_agree_on_everything():
    needs_build("cpu")
    needs_build("emulation")
    net = fashion_bnn(35)
    x = random_images(36, 4, net.input_shape)
    a = run_network(net, x, MIXED, backend="cupy", batch=3)
    b = run_network(net, x, MIXED, backend="emulation", batch=3)
    for i, (u, v) in enumerate(zip(a.outputs, b.outputs, strict=True)):
        assert_same(u, v, f"layer {i}")
    assert [r.launch for r in a.layers] == [r.launch for r in b.layers]
    assert [(t.boundary, t.direction, t.bytes) for t in a.transfers] == [
        (t.boundary, t.direction, t.bytes) for t in b.transfers
    ]


def test_compiled_kernels_honour_the_launch_bound():
    """Every kernel as compiled on this device launches blocks of KERNEL_MAX_THREADS (the
    __launch_bounds__ of cuda/common.cuh). Local memory (spills) is a warning of the preflight,
    not a failure: it costs time, not exactness."""
    res = get_gpu("cupy").kernel_resources()
    for key, r in res.items():
        assert r["max_threads_per_block"] >= KERNEL_MAX_THREADS, (key, r)


def test_largest_block_runs_on_gpu():
    net, x = make_case("bin_conv", 32, "multiple", 1, 5, case_seed("largest block"))
    res = run_network(net, x, "X", backend="cupy", threads=KERNEL_MAX_THREADS)
    assert np.prod(res.layers[0].launch["block"]) > DEFAULT_THREADS
    assert_same(res.outputs[0], golden.run(net, x).outputs[0], "X, largest block")


def test_launch_timing_separates_kernel_and_host():
    """Back-to-back launches behind the busy-wait kernel: the kernel's time, and the host's
    time to issue one, both positive; the runner records both per layer."""
    net = fashion_bnn(37)
    runner = Runner(net, "X", backend="cupy")
    x = random_images(38, 64, net.input_shape)
    res = runner.run(x, keep_outputs=False)
    gpu_layers = [r for r in res.layers if r.device == "gpu"]
    assert all(r.seconds > 0 and r.host_s > 0 for r in gpu_layers)
    op = runner.ops[3]
    xd = runner.gpu.upload(op.fin.from_golden(golden.run(net, x).outputs[2]))
    _, go = runner.prepare_op_gpu(op, xd, "X")
    kernel_s, host_s = runner.gpu.time_launches(go, 8)
    assert 0 < kernel_s < 1 and 0 < host_s < 1
