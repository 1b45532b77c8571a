"""The fused BinConv2d + Step kernel (bin_conv_step_pack, cuda/bin_conv.cu) against the golden
models: every bin_conv case of the exactness matrix (32/64-bit words, 2B, B + 7 and 5 input
channels, 37 filters, padding 0/1, 5x6 images, batches 1, 2, 5, every configuration) with a
Step after the conv, in the emulation visited in order, reversed and shuffled (each the whole
matrix: it is cheap), with its shared-memory checks on (no race may be reported), with blocks
of whole, partial and sub-warp thread counts; a layer whose weights exceed the shared tile
(read from global memory); the same kernel with its __syncthreads removed is reported as a
race. Seeds are fixed (layer_cases.case_seed) and printed with each failing case; the orders'
seeds are printed."""

import numpy as np
import pytest

from gpu_kernels import CONFIGS, Runner
from gpu_kernels.devices import EmulatedGpu
from gpu_kernels.layer_cases import bin_fused_cases, make_fused_case
from gpu_kernels.layer_ops import BIN_FUSED_WEIGHT_BYTES
from models import golden, ir
from models.random_networks import fashion_bnn
from tests.helpers import assert_same, needs_gxx
from tests.test_gpu_fused import barrier_removed_fault, fused_check
from tests.test_gpu_kernels import failures_of, report

pytestmark = needs_gxx

CASES = bin_fused_cases(CONFIGS)
BIN_FUSED_CASES = 252  # 7 configurations x 2 word sizes x 3 channel variants x 2 pads x 3 batches
THREADS = (256, 100, 48, 20)  # whole warps, a partial last warp, fewer than a warp


def in_shared(op) -> bool:
    return op.weights_in_shared


def test_the_cases_cover_the_bin_conv_matrix():
    assert len(CASES) == BIN_FUSED_CASES
    assert {c[1] for c in CASES} == set(CONFIGS) and {c[0] for c in CASES} == {"bin_conv"}
    assert {c[3] for c in CASES} == {"multiple", "partial", "few"} and {c[2] for c in CASES} == {32, 64}
    net, x = make_fused_case("bin_conv", 64, "partial", 1, 5, 1)  # both signs common
    out = golden.run(net, x).outputs[1]
    assert 0.2 < (out == 1).mean() < 0.8


@pytest.mark.parametrize("order", ["in-order", "reversed", "shuffled:2024", "shuffled:77"])
def test_fused_bin_kernel_equals_golden(order):
    """Every case in each order (blocks, warps and lanes reversed or shuffled), each with one
    of THREADS in turn (shifted per order): the result never depends on the order, and the
    shared-memory checks report nothing."""
    kind, _, seed = order.partition(":")
    print(f"order {order}")
    gpu = EmulatedGpu(kind, int(seed or 0))
    assert gpu._emu.checks_shared_memory
    shift = ["in-order", "reversed", "shuffled:2024", "shuffled:77"].index(order)
    checks = [
        fused_check(gpu, c, THREADS[(i + shift) % len(THREADS)], "bin_conv_step_pack", in_shared)
        for i, c in enumerate(CASES)
    ]
    failed = failures_of(checks)
    assert not failed, report(f"bin_conv_step_pack cases {order}", len(checks), failed)


def wide_bin_conv(rng, c, f, h, w):
    """A BinConv2d of c -> f channels (random +-1 weights, biases in -9..9), a batch of two
    random +-1 c x h x w images and the conv's golden sums."""
    weight = np.where(rng.random((f, c, 3, 3)) < 0.5, -1, 1).astype(np.int8)
    conv = ir.BinConv2d(weight=weight, bias=rng.integers(-9, 10, f), padding=1)
    x = np.where(rng.random((2, c, h, w)) < 0.5, -1, 1).astype(np.int8)
    return conv, x, golden.run(ir.Network((c, h, w), "binary", [conv]), x).outputs[0]


@pytest.mark.parametrize("bits", [32, 64])
def test_weights_beyond_the_shared_tile_are_read_from_global_memory(bits):
    """70 input channels, 310 filters: 9 x nw x 310 words exceed BIN_FUSED_WEIGHT_BYTES, so
    the kernel reads the weights from global memory; still golden (shuffled)."""
    seed = 41 + bits
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    c, f = 70, 310
    conv, x, sums = wide_bin_conv(rng, c, f, 3, 4)
    thr = sums[0, :, 1, 1].astype(np.int64)  # sums equal to a threshold occur
    step = ir.Step(threshold=thr, direction=np.where(rng.random(f) < 0.5, -1, 1).astype(np.int8))
    net = ir.Network((c, 3, 4), "binary", [conv, step])
    runner = Runner(net, "XY", EmulatedGpu("shuffled", seed), bits, fuse=[0])
    nbytes = 9 * -(-c // bits) * f * bits // 8
    assert nbytes > BIN_FUSED_WEIGHT_BYTES and not runner.fused[0].weights_in_shared
    res = runner.run(x)
    assert res.outputs[0] is None
    assert_same(res.outputs[1], golden.run(net, x).outputs[1], "step")


def test_binary_pairs_are_fused_and_counted():
    """fuse=[3] on the Fashion shape: the BinConv2d 64 -> 64 + Step pair as one kernel, in
    shared memory, one output word per pixel and word."""
    net = fashion_bnn(2)
    for bits in (32, 64):
        runner = Runner(net, "X", "emulation", bits, fuse=[3])
        op = runner.fused[3]
        assert op.kernel == f"bin_conv_step_pack/w{bits}" and op.weights_in_shared
        w = op.work(3)
        assert (w.n, w.p, w.f, w.row) == (3, 14 * 14, 64 // bits, 14)
        assert op.fout == runner.ops[4].fout and op.consts["w"].shape == (9, 64 // bits, 64)
    assert sorted(Runner(net, "X", "emulation", fuse="auto").fused) == [0, 3, 7]  # 3-5 with its pool


@pytest.mark.parametrize("order", ["in-order", "reversed"])
def test_removing_the_barrier_is_reported(tmp_path, order):
    """bin_conv.cu with the fused kernel's __syncthreads deleted: threads read weight words
    other threads write in the same phase, and the emulation's shared-memory checks stop the
    launch with one line naming the kernel and the shared tile."""
    barrier_removed_fault(
        tmp_path,
        order,
        "bin_conv.cu",
        "    __syncthreads();\n    const BinConvSum<W> sum",
        "bin_conv_step_pack<unsigned int>",
        "bin_conv_step_pack/w32",
        [3],
    )
