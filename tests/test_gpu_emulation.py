"""The CPU emulation as a checker of the CUDA source: blocks, warps and threads visited in
order, reversed or shuffled (every kernel must give the golden result in each), the
AddressSanitizer build whose poisoned guard zones catch out-of-bounds reads, and the refusal to
emulate what it does not model (__activemask, __match_*_sync, __reduce_*_sync). Warps,
barriers and the shared-memory checks: tests/test_gpu_emulation_warps.py."""

import os
import subprocess
import sys

import pytest

from gpu_kernels import CONFIGS, run_network
from gpu_kernels.build import EMU_FLAGS, asan_runtime, emulation_library
from gpu_kernels.devices import ORDER_ENV, EmulatedGpu, parse_order
from gpu_kernels.errors import BuildError, GpuKernelError
from gpu_kernels.kernel_table import CUDA_DIR
from gpu_kernels.layer_cases import all_cases, case_seed, make_case
from models import golden
from models.random_networks import fashion_bnn, random_images
from tests.helpers import ROOT, assert_same, needs_gxx

pytestmark = needs_gxx

SUBSET = all_cases(CONFIGS)[::9]  # ~145 of the 1302 cases: every kind and configuration


@pytest.mark.parametrize("order", ["reversed", "shuffled:20240"])
def test_kernels_equal_golden_in_any_order(order):
    """The result never depends on the order blocks and threads run in (each output has one
    writer, no thread reads another's output)."""
    print(f"order {order}")
    gpu = EmulatedGpu(*parse_order(order))
    assert {c[0] for c in SUBSET} == {c[0] for c in all_cases(CONFIGS)}
    assert {c[1] for c in SUBSET} == set(CONFIGS)
    for kind, config, bits, variant, pad, batch in SUBSET:
        net, x = make_case(kind, bits, variant, pad, batch, case_seed(kind, bits, variant, pad, batch))
        res = run_network(net, x, [config], backend=gpu, word_bits=bits)
        assert_same(res.outputs[0], golden.run(net, x).outputs[0], f"{kind}-{config}-w{bits} {order}")


def test_whole_network_in_shuffled_order():
    net = fashion_bnn(41)
    x = random_images(42, 3, net.input_shape)
    ref = golden.run(net, x)
    res = run_network(net, x, "XYZ", backend=EmulatedGpu("shuffled", 5), batch=2)
    for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True)):
        assert_same(a, b, f"layer {i} shuffled")


@pytest.mark.parametrize("order", ["reversed", "shuffled:77"])
def test_whole_network_with_the_warp_step_kernel(order):
    """step_pack_warp's warps meet at every ballot whatever the order of warps and lanes; the
    network's outputs stay golden."""
    print(f"order {order}")
    net = fashion_bnn(43)
    x = random_images(44, 3, net.input_shape)
    ref = golden.run(net, x)
    res = run_network(net, x, "XYZ", backend=EmulatedGpu(*parse_order(order)), batch=2, step_kernel="warp")
    for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True)):
        assert_same(a, b, f"layer {i} {order}")


def test_order_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(ORDER_ENV, "shuffled:11")
    gpu = EmulatedGpu()
    assert (gpu.order, gpu.seed) == ("shuffled", 11) and "seed 11" in gpu.describe()
    monkeypatch.setenv(ORDER_ENV, "sideways")
    with pytest.raises(GpuKernelError, match="emulation order 'sideways'"):
        EmulatedGpu()
    assert parse_order(None) == ("in-order", 0) and parse_order("reversed") == ("reversed", 0)


@pytest.mark.parametrize(
    "snippet, reason",
    [
        ("out[threadIdx.x] = __activemask();", "activemask"),
        ("out[threadIdx.x] = __match_any_sync(0xffffffffu, threadIdx.x & 1);", "match_sync"),
        ("out[threadIdx.x] = __reduce_add_sync(0xffffffffu, threadIdx.x);", "reduce_sync"),
    ],
)
def test_emulation_refuses_what_it_does_not_model(tmp_path, snippet, reason):
    """A kernel the emulation cannot run faithfully does not compile for it, and the compiler's
    message says why."""
    src = tmp_path / "k.cpp"
    src.write_text(
        f'#include "emu_shim.h"\n#include "common.cuh"\nBNN_KERNEL k(unsigned* out) {{ {snippet} }}\n'
    )
    proc = subprocess.run(
        ["g++", *EMU_FLAGS, f"-I{CUDA_DIR}", "-fsyntax-only", str(src)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert f"EMU_REFUSES_{reason}" in proc.stderr


def test_asan_build_needs_the_runtime_preloaded():
    try:
        asan_runtime()
    except BuildError as exc:
        pytest.skip(str(exc))
    with pytest.raises(BuildError, match="LD_PRELOAD=.*libasan"):
        EmulatedGpu(sanitize=True)


OOB_READ = """
import numpy as np
from gpu_kernels.devices import EmulatedGpu
from gpu_kernels.launch import Work, plan
gpu = EmulatedGpu(sanitize={sanitize})
x = gpu.upload(np.zeros((4, 1), np.uint32))     # one word per image, but K = 70 needs three
w = gpu.upload(np.zeros((3, 8), np.uint32))
bias = gpu.upload(np.zeros(8, np.int32))
out = gpu.empty((4, 8), np.int32)
gpu.launch("bin_dense/w32", plan(Work(4, 1, 8), "X"), [x, w, bias, out, 70])
print("launch returned")
"""


def _asan_env():
    try:
        runtime = asan_runtime()
    except BuildError as exc:
        pytest.skip(str(exc))
    emulation_library(sanitize=True)  # built here, not inside the child's timing
    return dict(os.environ, LD_PRELOAD=str(runtime), ASAN_OPTIONS="detect_leaks=0")


def test_asan_guard_zones_catch_an_out_of_bounds_read():
    """A kernel reading past its input: the plain emulation cannot see it (reads leave the
    guards intact), the ASan build stops at the faulting load and names the kernel."""
    plain = subprocess.run(
        [sys.executable, "-c", OOB_READ.format(sanitize=False)], cwd=ROOT, capture_output=True, text=True
    )
    assert plain.returncode == 0 and "launch returned" in plain.stdout
    asan = subprocess.run(
        [sys.executable, "-c", OOB_READ.format(sanitize=True)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_asan_env(),
    )
    assert asan.returncode != 0 and "launch returned" not in asan.stdout
    assert "AddressSanitizer: use-after-poison" in asan.stderr
    assert "READ of size 4" in asan.stderr and "bin_dense<unsigned int>" in asan.stderr


def test_asan_shuffled_selfcheck_subset_is_clean():
    """A subset of the exactness matrix plus whole networks under the ASan build, shuffled:
    no out-of-bounds access, every result golden (the full matrix: selfcheck --every 1)."""
    env = _asan_env()
    env.pop("LD_PRELOAD")  # selfcheck --asan re-executes itself with it
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpu_kernels.selfcheck",
            "--backend",
            "emulation",
            "--asan",
            "--order",
            "shuffled:3",
            "--every",
            "23",
            "--maxfail",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "AddressSanitizer, 0 failures" in proc.stdout or "0 failures" in proc.stdout
    assert "AddressSanitizer" in proc.stdout and "shuffled, seed 3" in proc.stdout
