"""The conv + Step + 2x2 MaxPool2d kernels (int_conv_step_pool_pack, cuda/int_conv.cu, and
bin_conv_step_pool_pack, cuda/bin_conv.cu) against the golden models: every int_conv case of
the exactness matrix (uint8 and int32 input) and every bin_conv case (32/64-bit words, channel
counts that are and are not multiples of a word, 37 filters, padding 0/1, 5x6 images whose
conv output has an odd row to drop, batches 1, 2, 5, every configuration) with a Step and a
pooling after the conv, thresholds set so that both signs stay common after the pooling's OR,
in the emulation visited in order (every case) and reversed and shuffled (a ninth each), with
its shared-memory checks on and blocks of whole, partial and sub-warp thread counts; the
pooled binary kernel with its __syncthreads removed is reported. Seeds are fixed
(layer_cases.fused_case_seed) and printed with each failing case; the orders' seeds are
printed."""

import numpy as np
import pytest

from gpu_kernels import CONFIGS, Runner
from gpu_kernels.devices import EmulatedGpu
from gpu_kernels.layer_cases import FUSED_THREADS, fused_family_cases, make_fused_case
from models import golden, ir
from models.random_networks import fashion_bnn, random_images
from tests.helpers import assert_same, needs_gxx
from tests.test_gpu_fused import INT_BARRIER, barrier_removed_fault, fused_check
from tests.test_gpu_fused_bin import wide_bin_conv
from tests.test_gpu_kernels import failures_of, report

pytestmark = needs_gxx

FAMILIES = ("int_conv_step_pool_pack", "bin_conv_step_pool_pack")
CASES = [(family, c) for family in FAMILIES for c in fused_family_cases(family, CONFIGS)]
POOL_CASES = 336 + 252  # the int_conv and the bin_conv cases of the matrix


def test_the_cases_cover_both_conv_matrices():
    assert len(CASES) == POOL_CASES
    assert {c[1] for _, c in CASES} == set(CONFIGS)
    assert {c[0] for _, c in CASES} == {"int_conv_u8", "int_conv_i32", "bin_conv"}
    for kind in ("int_conv_u8", "bin_conv"):  # both signs common after the pooling
        net, x = make_fused_case(kind, 64, "partial", 1, 5, 1, pool=True)
        out = golden.run(net, x).outputs
        assert out[2].shape[2:] == (2, 3) and out[0].shape[2:] == (5, 6)  # odd last row dropped
        assert 0.15 < (out[1] == 1).mean() < 0.35 and 0.3 < (out[2] == 1).mean() < 0.8


def _checks(gpu, cases, shift):
    return [
        fused_check(gpu, case, FUSED_THREADS[(i + shift) % len(FUSED_THREADS)], family)
        for i, (family, case) in enumerate(cases)
    ]


def test_pooled_kernels_equal_golden_in_order():
    """Every case of both kernels, in order, each with one of the thread counts in turn."""
    checks = _checks(EmulatedGpu("in-order"), CASES, 0)
    failed = failures_of(checks)
    assert not failed, report("conv + Step + MaxPool2d cases", len(checks), failed)


@pytest.mark.parametrize("order, every", [("reversed", 0), ("shuffled:2025", 3), ("shuffled:78", 6)])
def test_pooled_kernels_equal_golden_in_other_orders(order, every):
    """A ninth of the cases per order (every ninth, from different offsets; blocks, warps and
    lanes reversed or shuffled), other thread counts than in order's: the result never depends
    on the order, and the shared-memory checks report nothing. The pooled kernels share their
    code with the pairs, whose matrices run a third (int) or all (bin) of their cases per order."""
    kind, _, seed = order.partition(":")
    print(f"order {order}")
    gpu = EmulatedGpu(kind, int(seed or 0))
    assert gpu._emu.checks_shared_memory
    cases = CASES[every::9]
    checks = _checks(gpu, cases, every // 3 + 1)
    failed = failures_of(checks)
    assert not failed, report(f"conv + Step + MaxPool2d cases {order}", len(checks), failed)


@pytest.mark.parametrize("bits", [32, 64])
def test_pooled_binary_weights_beyond_the_shared_tile(bits):
    """70 input channels, 310 filters, a 5x7 image: weights read from global memory, pooled
    (floor mode drops the odd row and column); still golden (shuffled)."""
    seed = 51 + bits
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    c, f = 70, 310
    conv, x, sums = wide_bin_conv(rng, c, f, 5, 7)
    thr = np.sort(sums.transpose(1, 0, 2, 3).reshape(f, -1), axis=1)[:, 50].astype(np.int64)
    step = ir.Step(threshold=thr, direction=np.ones(f, np.int8))
    net = ir.Network((c, 5, 7), "binary", [conv, step, ir.MaxPool2d()])
    runner = Runner(net, "XY", EmulatedGpu("shuffled", seed), bits, fuse=[(0, 2)])
    assert runner.fused[0].family == "bin_conv_step_pool_pack" and not runner.fused[0].weights_in_shared
    res = runner.run(x)
    assert res.outputs[0] is None and res.outputs[1] is None
    assert_same(res.outputs[2], golden.run(net, x).outputs[2], "pool")


def test_fashion_runs_pooled_and_the_pair_choice_stays():
    """On the Fashion shape a run (first, first + 2) takes the pooled kernel and the pair
    (first, first + 1) the unpooled one with the pool as its own kernel: both golden (shuffled)."""
    print("seeds: network 12, images 13, shuffled order 12")
    net = fashion_bnn(12)
    x = random_images(13, 3, net.input_shape)
    ref = golden.run(net, x)
    for fuse, kernels in (
        ([(0, 2), (3, 5)], ["int_conv_step_pool_pack", "bin_conv_step_pool_pack"]),
        ([(0, 1), (3, 4)], ["int_conv_step_pack", "bin_conv_step_pack"]),
    ):
        runner = Runner(net, "XZ", EmulatedGpu("shuffled", 12), 32, fuse=fuse)
        assert [runner.fused[i].family for i in (0, 3)] == kernels
        res = runner.run(x)
        for i in (2, 5, 9):
            assert_same(res.outputs[i], ref.outputs[i], f"{fuse} layer {i}")
        assert res.layers[2].seconds > 0 and res.layers[5].seconds > 0  # a kernel's or the pool's


@pytest.mark.parametrize(
    "cu_file, barrier, instance, key, fuse",
    [
        (
            "bin_conv.cu",
            "    __syncthreads();\n    const BinConvSum<W> sum",
            "bin_conv_step_pool_pack<unsigned int>",
            "bin_conv_step_pool_pack/w32",
            [(3, 5)],
        ),
        (
            "int_conv.cu",
            INT_BARRIER,
            "int_conv_step_pool_pack<unsigned char, unsigned int>",
            "int_conv_step_pool_pack/u8/w32",
            [(0, 2)],
        ),
    ],
    ids=["bin", "int"],
)
def test_removing_the_barrier_is_reported(tmp_path, cu_file, barrier, instance, key, fuse):
    """The pooled kernels share their weight tile and barrier with the unpooled ones: deleted,
    the shared-memory checks stop the pooled launch with one line naming it and its tile."""
    barrier_removed_fault(tmp_path, "in-order", cu_file, barrier, instance, key, fuse)
