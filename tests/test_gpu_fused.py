"""The fused IntConv2d + Step kernel (int_conv_step_pack, cuda/int_conv.cu) against the golden
models: every int_conv case of the exactness matrix (uint8 and int32 input, 32/64-bit words,
channel counts that are and are not multiples of a word, padding 0/1, odd image sizes, batches
1, 2, 5, every configuration) with a Step after the conv, in the emulation visited in order,
reversed and shuffled, with its shared-memory checks on (no race may be reported), and with
blocks of whole, partial and sub-warp thread counts; the same kernel with its __syncthreads
removed is reported as a race. Seeds are fixed (layer_cases.case_seed) and printed with each
failing case; the orders' seeds are printed."""

import numpy as np
import pytest

from gpu_kernels import CONFIGS, Runner, run_network
from gpu_kernels.build import kernel_emulation_library
from gpu_kernels.devices import EmulatedGpu, EmuLibrary
from gpu_kernels.errors import GpuKernelError, KernelFaultError
from gpu_kernels.kernel_table import CUDA_DIR, KERNELS
from gpu_kernels.layer_cases import case_seed, fused_cases, make_fused_case
from gpu_kernels.layer_ops import FUSED_WEIGHT_WORDS
from models import golden, ir
from models.random_networks import cifar10_bnn, fashion_bnn, random_images
from tests.helpers import assert_same, mismatch, needs_gxx
from tests.test_gpu_kernels import case_name, failures_of, report

pytestmark = needs_gxx

CASES = fused_cases(CONFIGS)
FUSED_CASES = 336  # 2 input kinds x 7 configurations x 2 word sizes x 2 channel variants x 2 pads x 3 batches
# threads per block, taken in turn by the cases: whole warps, a partial last warp (100 = 3 x 32
# + 4, 48 = 32 + 16) and fewer than a warp (the plan's own smaller blocks also occur)
THREADS = (256, 100, 48, 20)


def int_kernel_taken(op, bits: int) -> bool:
    return op.kernel.startswith("int_conv_step_pack/")


def fused_check(gpu, case: tuple, threads: int, kernel_taken=int_kernel_taken):
    """A check of one fused case against golden: `kernel_taken(op, bits)` says whether the
    runner's fused op is the kernel under test."""
    kind, config, bits, variant, pad, batch = case
    seed = case_seed("fused", kind, bits, variant, pad, batch)

    def check():
        net, x = make_fused_case(kind, bits, variant, pad, batch, seed)
        ref = golden.run(net, x).outputs[1]
        runner = Runner(net, [config, config], gpu, bits, threads=threads, fuse=[0])
        assert kernel_taken(runner.fused[0], bits)
        res = runner.run(x)
        if res.outputs[0] is not None:
            return "the conv's int32 output exists"
        return mismatch(res.outputs[1], ref)

    return f"{case_name(case)} seed {seed} threads {threads}", check


def test_the_cases_cover_the_int_conv_matrix():
    assert len(CASES) == FUSED_CASES
    assert {c[1] for c in CASES} == set(CONFIGS) and {c[0] for c in CASES} == {"int_conv_u8", "int_conv_i32"}
    # both signs common, so that equality means something
    net, x = make_fused_case("int_conv_u8", 32, "partial", 1, 5, 1)
    out = golden.run(net, x).outputs[1]
    assert 0.2 < (out == 1).mean() < 0.8


def test_the_emulation_checks_shared_memory():
    assert EmulatedGpu()._emu.checks_shared_memory


def test_fused_kernel_equals_golden_in_order():
    """Every case, in order, each with one of THREADS in turn."""
    gpu = EmulatedGpu("in-order")
    checks = [fused_check(gpu, c, THREADS[i % len(THREADS)]) for i, c in enumerate(CASES)]
    failed = failures_of(checks)
    assert not failed, report("int_conv_step_pack cases", len(checks), failed)


@pytest.mark.parametrize(
    "order, every, offset", [("reversed", 0, 3), ("shuffled:2024", 1, 3), ("shuffled:77", 2, 3)]
)
def test_fused_kernel_equals_golden_in_other_orders(order, every, offset):
    """A third of the cases per order (each with a thread count other than in-order's), blocks,
    warps and lanes reversed or shuffled: the result never depends on the order, and the
    shared-memory checks report nothing."""
    kind, _, seed = order.partition(":")
    print(f"order {order}")
    gpu = EmulatedGpu(kind, int(seed or 0))
    cases = CASES[every::offset]
    checks = [fused_check(gpu, c, THREADS[(i + 1) % len(THREADS)]) for i, c in enumerate(cases)]
    failed = failures_of(checks)
    assert not failed, report(f"int_conv_step_pack cases {order}", len(checks), failed)


@pytest.mark.parametrize("make, seed", [(fashion_bnn, 5), (cifar10_bnn, 6)])
def test_whole_network_with_the_first_pair_fused(make, seed):
    """The Fashion and CIFAR-10 shapes with every conv + Step pair fused ("auto": layers 0-1 by
    int_conv_step_pack, the binary ones by bin_conv_step_pack), shuffled: every other layer
    golden, each conv's output absent, the pair's time on the Step's record."""
    print(f"network seed {seed}, images seed {seed + 100}, order shuffled:{seed}")
    net = make(seed)
    x = random_images(seed + 100, 2, net.input_shape)
    ref = golden.run(net, x)
    res = run_network(net, x, "XY", backend=EmulatedGpu("shuffled", seed), word_bits=64, fuse="auto")
    assert res.outputs[0] is None and res.layers[0].seconds == 0.0 and res.layers[1].seconds > 0
    filters = net.layers[0].weight.shape[0]  # 64 (Fashion), 128 (CIFAR-10)
    assert res.layers[0].launch["work"]["f"] == filters // 64  # output words per pixel
    convs = {i for i, layer in enumerate(net.layers) if isinstance(layer, (ir.IntConv2d, ir.BinConv2d))}
    assert len(convs) > 1  # binary convs fused too
    for i in range(1, len(ref.outputs)):
        if i in convs:
            assert res.outputs[i] is None and res.layers[i].seconds == 0.0, f"layer {i}"
        else:
            assert_same(res.outputs[i], ref.outputs[i], f"layer {i}")


def _two_layer_net(c: int, f: int) -> ir.Network:
    rng = np.random.default_rng(9)
    w = np.where(rng.random((f, c, 3, 3)) < 0.5, -1, 1).astype(np.int8)
    conv = ir.IntConv2d(weight=w, bias=np.zeros(f, np.int64), padding=1)
    step = ir.Step(threshold=np.zeros(f, np.int64), direction=np.ones(f, np.int8))
    return ir.Network((c, 4, 4), "uint8", [conv, step])


def test_fusing_what_cannot_be_fused_is_one_clear_error():
    net = fashion_bnn(1)
    with pytest.raises(
        GpuKernelError,
        match=r"^cannot fuse layers 2 and 3: layer 2 \(MaxPool2d[^)]*\) is not an IntConv2d or a BinConv2d$",
    ):
        Runner(net, "X", "emulation", fuse=[2])
    with pytest.raises(GpuKernelError, match="mapped to X and XY, not one GPU configuration"):
        Runner(net, ["X", "XY"] + ["X"] * 8, "emulation", fuse=[0])
    with pytest.raises(GpuKernelError, match="mapped to cpu and cpu"):
        Runner(net, "cpu", "emulation", fuse=[0])
    with pytest.raises(GpuKernelError, match="fuse names layer 9; a fused pair starts at one of 0..8"):
        Runner(net, "X", "emulation", fuse=[9])
    with pytest.raises(GpuKernelError, match="fuse 'yes': use 'auto'"):
        Runner(net, "X", "emulation", fuse="yes")
    # 9 x 128 x ceil(300 / 32) words do not fit the shared tile: refused, and "auto" skips it
    big = _two_layer_net(128, 300)
    assert FUSED_WEIGHT_WORDS < 9 * 128 * 10
    with pytest.raises(
        GpuKernelError, match=f"need 11520 words of shared memory .* holds {FUSED_WEIGHT_WORDS}"
    ):
        Runner(big, "X", "emulation", fuse=[0])
    assert Runner(big, "X", "emulation", fuse="auto").fused == {}
    assert Runner(net, "cpu", "cpu", fuse=[0]).fused == {}  # nothing runs on a GPU


def barrier_removed_fault(tmp_path, order, cu_file, barrier, instance, key, fuse):
    """The Fashion network with `instance` (a fused kernel's template instance) built from
    `cu_file` with `barrier` (its __syncthreads and the line after it) reduced to that line, run
    fused through the emulation in `order`; returns the KernelFaultError's message, which must
    be one line naming the kernel's copy ("<kernel>_no_sync") and its shared tile `wsh`."""
    text = (CUDA_DIR / cu_file).read_text()
    assert text.count(barrier) == 1 and text.count("__syncthreads();") == 1
    kernel = instance.split("<")[0]
    copy = tmp_path / f"{kernel}_no_sync.cu"
    copy.write_text(text.replace(barrier, barrier.split("\n", 1)[1]))
    src = tmp_path / "fused_no_sync.cu"
    src.write_text(f'#include "common.cuh"\n#include "{copy}"\nauto& {kernel}_no_sync = {instance};\n')
    lib = EmuLibrary(kernel_emulation_library(src, [f"{kernel}_no_sync"]))
    assert lib.checks_shared_memory
    gpu = EmulatedGpu(order)
    assert KERNELS[key].expr == instance
    gpu._emu, gpu._entry = lib, {**gpu._entry, key: lib.entry(f"emu_{kernel}_no_sync")}
    net = fashion_bnn(3)
    x = random_images(4, 2, net.input_shape)
    with pytest.raises(KernelFaultError) as info:
        run_network(net, x, "X", backend=gpu, fuse=fuse)
    msg = str(info.value)
    print(msg)
    assert "\n" not in msg
    assert msg.startswith(f"{kernel}_no_sync: thread (")
    assert "shared-memory race on" in msg or "which no thread of its block has written" in msg
    assert f"{instance}(" in msg and ")::wsh+" in msg
    return msg


@pytest.mark.parametrize("order", ["in-order", "reversed"])
def test_removing_the_barrier_is_reported(tmp_path, order):
    """int_conv.cu with the fused kernel's __syncthreads deleted: threads read weight words
    other threads write in the same phase, and the emulation's shared-memory checks stop the
    launch with one line naming the kernel and the shared tile (a race, or a read of a word no
    thread has written yet, depending on who comes first)."""
    barrier_removed_fault(
        tmp_path,
        order,
        "int_conv.cu",
        "    __syncthreads();\n    FOR_EACH_WARP_OUTPUT",
        "int_conv_step_pack<unsigned char, unsigned int>",
        "int_conv_step_pack/u8/w32",
        [0],
    )


def test_fused_op_counts():
    """The fused op's work: one output word per pixel and word, the Step's packed format."""
    net = fashion_bnn(2)
    for bits in (32, 64):
        runner = Runner(net, "X", "emulation", bits, fuse=[0])
        op = runner.fused[0]
        w = op.work(3)
        assert (w.n, w.p, w.f, w.row) == (3, 28 * 28, 64 // bits, 28)
        assert op.fout == runner.ops[1].fout and op.consts["wbits"].shape == (9, 2)


# ---------------------------------------------------------------- the mapper's fused choice
def _fused_mapping(times_scale=None, word_bits=32):
    from gpu_kernels.gpu_model import ModelledProfile
    from gpu_kernels.mapper import map_network

    net = fashion_bnn(0)
    prof = ModelledProfile(word_bits, fused=True).profile(net, [256, 1024])
    if times_scale is not None:  # as if measured: the integer fused kernel's times scaled
        for rows in prof.meta["fused_gpu"]["0"]["layer_s"].values():
            rows[:] = [t * times_scale for t in rows]
    return net, map_network(net, [256, 1024], prof, n_images=10_000)


def test_modelled_mapper_chooses_the_fused_pair():
    """Without a GPU the choice follows the model: a fused kernel saves the Step's launch
    and its reads, so the DP takes both pairs (the integer one, 0-1, and the binary one, 3-4),
    both layers of a pair in one configuration, its time on the Step's row; without fused
    times (the default profile) nothing is fused."""
    from gpu_kernels.gpu_model import ModelledProfile
    from gpu_kernels.mapper import Mapping, map_network

    net, m = _fused_mapping()
    dp = m.dp
    assert dp.fused_gpu == [0, 3]
    for i in dp.fused_gpu:
        assert dp.impls[i] == dp.impls[i + 1] != "cpu"
        assert dp.layer_s[i] == 0.0 and dp.layer_s[i + 1] > 0
    assert m.profile.meta["fused_gpu"]["0"]["kernel"] == "int_conv_step_pack/u8/w32"
    assert m.profile.meta["fused_gpu"]["3"]["kernel"] == "bin_conv_step_pack/w32"
    plain = map_network(net, [256, 1024], ModelledProfile(32), n_images=10_000)
    assert plain.dp.fused_gpu == [] and "fused_gpu" not in plain.profile.meta
    assert dp.total_s < plain.dp.total_s
    assert m.algorithm1.fused_gpu == []  # Algorithm 1 stays per layer, as published
    again = Mapping.from_json(m.to_json())
    assert again.dp.fused_gpu == [0, 3] and not again.agree()


@pytest.mark.parametrize("scale, fused", [(100.0, [3]), (0.01, [0, 3])])
def test_mapper_follows_the_fused_kernels_times(scale, fused):
    """With times (measured ones, here the model's scaled: pair 0-1's only) the DP follows
    them: a fused kernel 100x slower is not taken, one 100x faster is (the binary pair 3-4,
    left as modelled, is taken either way)."""
    _, m = _fused_mapping(scale)
    assert m.dp.fused_gpu == fused


def test_runner_follows_a_fused_choice():
    """A Choice with fused pairs runs them (emulation, shuffled): other layers golden, the
    convs' int32 outputs absent."""
    net, m = _fused_mapping()
    x = random_images(8, 3, net.input_shape)
    res = run_network(net, x, m.dp, backend=EmulatedGpu("shuffled", 8), batch=2)
    ref = golden.run(net, x)
    assert m.dp.fused_gpu == [0, 3]
    for i in range(len(ref.outputs)):
        if i in m.dp.fused_gpu:
            assert res.outputs[i] is None, f"layer {i}"
        else:
            assert_same(res.outputs[i], ref.outputs[i], f"layer {i}")


def test_malformed_fused_times_are_one_clear_error():
    from gpu_kernels.mapper import dp_mapping

    _, m = _fused_mapping()
    m.profile.meta["fused_gpu"]["0"]["layer_s"]["256"] = [1.0]
    with pytest.raises(GpuKernelError, match=r"^profile meta fused_gpu, layer 0, batch 256: needs 7 "):
        dp_mapping(m.profile, 10_000)
    m.profile.meta["fused_gpu"] = {"9": {}}
    with pytest.raises(GpuKernelError, match=r"^profile meta fused_gpu: needs \{first layer 0..8: object\}"):
        dp_mapping(m.profile, 10_000)


@pytest.mark.parametrize("bias", [7, -7])
def test_thresholds_at_the_ends_of_int64_fold_without_wrapping(bias):
    """Thresholds of -2^63 and 2^63 - 1 (both directions) with a nonzero bias: folding the bias
    into the bounds must not wrap in int64 (always on stays always on, never on never on)."""
    rng = np.random.default_rng(31)
    print("seed 31")
    lo, hi = -(1 << 63), (1 << 63) - 1
    w = np.where(rng.random((4, 2, 3, 3)) < 0.5, -1, 1).astype(np.int8)
    conv = ir.IntConv2d(weight=w, bias=np.full(4, bias, np.int64), padding=1)
    step = ir.Step(
        threshold=np.array([lo, hi, lo, hi], np.int64), direction=np.array([1, 1, -1, -1], np.int8)
    )
    net = ir.Network((2, 4, 5), "uint8", [conv, step])
    x = rng.integers(0, 256, (2, 2, 4, 5)).astype(np.uint8)
    res = run_network(net, x, "X", backend="emulation", fuse=[0])
    assert_same(res.outputs[1], golden.run(net, x).outputs[1], "step")
