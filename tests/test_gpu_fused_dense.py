"""The fused BinDense + Step kernel (bin_dense_step_pack, cuda/dense.cu) against the golden
models: every dense case of the exactness matrix (32/64-bit words, 2B, B + 7 and 5 inputs, 70
neurons: a partial last output word, batches 1, 2, 5, every configuration) with a Step after
it, in the emulation visited in order, reversed and twice shuffled (each the whole matrix: it
is cheap), blocks of whole, partial and sub-warp thread counts; wide layers (more output
words than a warp has lanes, 1100 neurons); thresholds at the ends of int64; and a shuffled
subset of every fused kernel's matrix under AddressSanitizer (gpu_kernels.selfcheck --part
fused). Seeds are fixed (layer_cases.fused_case_seed) and printed with each failing case; the
orders' seeds are printed."""

import subprocess
import sys

import numpy as np
import pytest

from gpu_kernels import CONFIGS, Runner
from gpu_kernels.devices import EmulatedGpu
from gpu_kernels.layer_cases import FUSED_THREADS, fused_family_cases, make_fused_case
from models import golden, ir
from tests.helpers import ROOT, assert_same, needs_gxx
from tests.test_gpu_emulation import _asan_env
from tests.test_gpu_fused import fused_check
from tests.test_gpu_kernels import failures_of, report

pytestmark = needs_gxx

FAMILY = "bin_dense_step_pack"
CASES = fused_family_cases(FAMILY, CONFIGS)
DENSE_CASES = 126  # 7 configurations x 2 word sizes x 3 input variants x 3 batches
ORDERS = ["in-order", "reversed", "shuffled:2026", "shuffled:79"]


def test_the_cases_cover_the_dense_matrix():
    assert len(CASES) == DENSE_CASES
    assert {c[1] for c in CASES} == set(CONFIGS) and {c[0] for c in CASES} == {"dense"}
    net, x = make_fused_case("dense", 64, "partial", 0, 5, 1)  # both signs common
    out = golden.run(net, x).outputs[1]
    assert out.shape == (5, 70) and 0.2 < (out == 1).mean() < 0.8


@pytest.mark.parametrize("order", ORDERS)
def test_fused_dense_kernel_equals_golden(order):
    """Every case in each order, each with one of the thread counts in turn (shifted per
    order): the result never depends on the order."""
    kind, _, seed = order.partition(":")
    print(f"order {order}")
    gpu = EmulatedGpu(kind, int(seed or 0))
    shift = ORDERS.index(order)
    checks = [
        fused_check(gpu, c, FUSED_THREADS[(i + shift) % len(FUSED_THREADS)], FAMILY)
        for i, c in enumerate(CASES)
    ]
    failed = failures_of(checks)
    assert not failed, report(f"bin_dense_step_pack cases {order}", len(checks), failed)


@pytest.mark.parametrize("bits, config", [(32, "X"), (64, "Z"), (32, "XYZ")])
def test_wide_dense_layer(bits, config):
    """300 inputs -> 1100 neurons (35 or 18 output words: more words than lanes in a warp, a
    partial last word), shuffled: golden; the int32 scores never written."""
    seed = 61 + bits
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    k, f = 300, 1100
    dense = ir.BinDense(
        weight=np.where(rng.random((f, k)) < 0.5, -1, 1).astype(np.int8), bias=rng.integers(-9, 10, f)
    )
    x = np.where(rng.random((3, k)) < 0.5, -1, 1).astype(np.int8)
    sums = golden.run(ir.Network((k,), "binary", [dense]), x).outputs[0]
    step = ir.Step(
        threshold=sums[1].astype(np.int64), direction=np.where(rng.random(f) < 0.5, -1, 1).astype(np.int8)
    )
    net = ir.Network((k,), "binary", [dense, step])
    runner = Runner(net, config, EmulatedGpu("shuffled", seed), bits, fuse="auto")
    assert runner.fused[0].kernel == f"bin_dense_step_pack/w{bits}"
    res = runner.run(x)
    assert res.outputs[0] is None
    assert_same(res.outputs[1], golden.run(net, x).outputs[1], "step")


@pytest.mark.parametrize("bias", [7, -7])
def test_dense_thresholds_at_the_ends_of_int64(bias):
    """Thresholds of -2^63 and 2^63 - 1 (both directions) with a nonzero bias fold into the
    dense kernel's bounds without wrapping."""
    rng = np.random.default_rng(33)
    print("seed 33")
    lo, hi = -(1 << 63), (1 << 63) - 1
    dense = ir.BinDense(
        weight=np.where(rng.random((4, 40)) < 0.5, -1, 1).astype(np.int8), bias=np.full(4, bias)
    )
    step = ir.Step(
        threshold=np.array([lo, hi, lo, hi], np.int64), direction=np.array([1, 1, -1, -1], np.int8)
    )
    net = ir.Network((40,), "binary", [dense, step])
    x = np.where(rng.random((2, 40)) < 0.5, -1, 1).astype(np.int8)
    res = Runner(net, "X", "emulation", fuse=[0]).run(x)
    assert_same(res.outputs[1], golden.run(net, x).outputs[1], "step")


def test_every_fused_kernel_is_clean_under_asan():
    """selfcheck --part fused under the AddressSanitizer build, shuffled: every eleventh case of
    each fused kernel's matrix (both conv pairs, the dense pair, both pooled kernels, the three
    register-blocked binary ones) and the Fashion and CIFAR-10 shapes with every run fused; no
    out-of-bounds access, every result golden."""
    env = _asan_env()
    env.pop("LD_PRELOAD")  # selfcheck --asan re-executes itself with it
    cmd = [sys.executable, "-m", "gpu_kernels.selfcheck", "--backend", "emulation", "--asan"]
    cmd += ["--order", "shuffled:5", "--part", "fused", "--every", "11", "--maxfail", "1"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    print(proc.stdout[-3000:])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "AddressSanitizer" in proc.stdout and "shuffled, seed 5" in proc.stdout
    assert ", 0 failures" in proc.stdout
    for family in (
        "int_conv_step_pack",
        "bin_conv_step_pack",
        "bin_dense_step_pack",
        "int_conv_step_pool_pack",
        "bin_conv_step_pool_pack",
        "bin_conv_step_pack_px2",
        "bin_conv_step_pack_px4",
        "bin_conv_step_pool_pack_px2",
    ):
        assert f"{family}: " in proc.stdout, family
