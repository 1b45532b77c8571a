"""The CPU implementation (gpu_kernels/cpu/bnn_cpu.cpp, the mapper's "cpu" choice) equals the
golden models for every layer type x word size x channel count x padding x batch size."""

import numpy as np
import pytest

from gpu_kernels import Runner, run_network
from gpu_kernels.layer_cases import all_cases, case_seed, make_case
from models import golden
from tests.helpers import assert_same, needs_gxx

pytestmark = needs_gxx

CASES = all_cases(["cpu"])


@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_cpu_implementation_equals_golden(case):
    kind, _, bits, variant, pad, batch = case
    seed = case_seed(kind, bits, variant, pad, batch)
    print(f"seed {seed}")
    net, x = make_case(kind, bits, variant, pad, batch, seed)
    res = run_network(net, x, backend="cpu", word_bits=bits)
    assert res.backend == "cpu" and res.layers[0].impl == "cpu" and not res.transfers
    assert_same(res.outputs[0], golden.run(net, x).outputs[0], "-".join(map(str, case)))


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("kind", ["bin_conv", "dense"])
def test_cpu_padding_bits_never_count(kind, bits):
    seed = case_seed("cpu garbage padding", kind, bits)
    print(f"seed {seed}")
    net, x = make_case(kind, bits, "partial", 1, 3, seed)
    runner = Runner(net, "cpu", backend="cpu", word_bits=bits)
    op = runner.ops[0]
    words = op.fin.from_golden(x)
    words[..., -1] |= ~np.array(0, dtype=words.dtype) << np.array(op.fin.channels % bits, dtype=words.dtype)
    got = op.fout.to_golden(runner.run_op_cpu(op, words), "int")
    assert_same(got, golden.run(net, x).outputs[0], f"{kind} w{bits} garbage padding")


@pytest.mark.parametrize("threads", [1, 2])
def test_cpu_implementation_large_batch_threads(threads):
    """Enough work for the OpenMP path (the small cases above run on one thread)."""
    from gpu_kernels.cpu_impl import cpu_impl
    from models.random_networks import fashion_bnn, random_images

    lib = cpu_impl()
    before = lib.max_threads
    lib.set_threads(threads)
    try:
        net = fashion_bnn(5)
        x = random_images(6, 40, net.input_shape)
        res = run_network(net, x, backend="cpu", word_bits=64, batch=25)
        ref = golden.run(net, x)
        for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True)):
            assert_same(a, b, f"layer {i}")
        assert np.array_equal(res.predictions, ref.predictions)
    finally:
        lib.set_threads(before)


PORTABLE_CASES = [
    c
    for c in CASES
    if c[0] in ("int_conv_u8", "int_conv_i32", "step_spatial", "step_flat", "bin_conv", "dense") and c[5] == 2
]


@pytest.mark.parametrize("case", PORTABLE_CASES, ids=["-".join(map(str, c)) for c in PORTABLE_CASES])
def test_portable_build_equals_golden(case):
    """The library built without AVX-512 (the code a machine without it runs) is exact too."""
    from gpu_kernels.cpu_impl import cpu_impl

    kind, _, bits, variant, pad, batch = case
    seed = case_seed(kind, bits, variant, pad, batch)
    print(f"seed {seed}")
    net, x = make_case(kind, bits, variant, pad, batch, seed)
    op = Runner(net, "cpu", backend="cpu", word_bits=bits).ops[0]
    out = np.empty(op.fout.host_shape(batch), op.fout.dtype)
    op.run_cpu(cpu_impl(portable=True), op.fin.from_golden(x), out, op.consts)
    assert_same(
        op.fout.to_golden(out, net.shapes[1][1]), golden.run(net, x).outputs[0], "-".join(map(str, case))
    )


# ---------------------------------------------------------------------------------------------
# the fused network (every Step inside the layer before it, max pooling inside the conv)
# ---------------------------------------------------------------------------------------------
FUSED_SHAPES = {
    # in_shape, conv stages (each ends in a 2x2 pool), hidden dense widths, padding
    "fashion-like": ((1, 12, 12), [[64], [64]], [64], 1),
    "odd-widths": ((1, 11, 13), [[40], [70]], [33], 1),
    "rgb-two-convs-pad0": ((3, 10, 11), [[20, 130]], [], 0),
    "odd-pools-wide-flatten": ((2, 7, 7), [[16], [65]], [64, 9], 1),
}


def _extreme_steps(net, rng):
    """Some thresholds far outside any sum: channels always or never +1."""
    from models import ir

    for layer in net.layers:
        if isinstance(layer, ir.Step):
            pick = rng.random(layer.threshold.shape) < 0.15
            layer.threshold[pick] = rng.choice([-(1 << 40), 1 << 40], size=int(pick.sum()))
    return net


def _fused_case(name: str, seed: int):
    from models.random_networks import build_bnn, random_images

    rng = np.random.default_rng(seed)
    in_shape, stages, dense, pad = FUSED_SHAPES[name]
    net = _extreme_steps(build_bnn(rng, in_shape, stages, dense, classes=7, padding=pad), rng)
    return net, random_images(rng, 37, net.input_shape)


@pytest.mark.parametrize("portable", [False, True], ids=["native", "portable"])
@pytest.mark.parametrize("name", list(FUSED_SHAPES))
def test_fused_network_equals_golden(name, portable):
    from gpu_kernels.cpu_impl import FusedCpuNetwork

    seed = case_seed("fused", name)
    print(f"seed {seed}")
    net, x = _fused_case(name, seed)
    fused = FusedCpuNetwork(net, portable=portable)
    ref = golden.run(net, x)
    for n in (1, len(x)):
        res = fused.run(x[:n], keep_outputs=True)
        assert sorted(res.outputs)[-1] == len(net.layers) - 1
        for i, out in res.outputs.items():
            assert_same(out, ref.outputs[i][:n], f"{name}: layer {i} ({n} images)")
        assert np.array_equal(res.predictions, ref.predictions[:n])


def test_fused_network_binary_input_and_wide_channels():
    """A network that starts with a binary conv of 70 channels (two words per pixel) and a
    dense layer on binary input."""
    from gpu_kernels.cpu_impl import FusedCpuNetwork
    from models import ir

    seed = case_seed("fused binary input")
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    pm1 = lambda *s: np.where(rng.random(s) < 0.5, -1, 1).astype(np.int8)  # noqa: E731
    net = ir.Network(
        (70, 5, 6),
        "binary",
        [
            ir.BinConv2d(weight=pm1(130, 70, 3, 3), bias=rng.integers(-9, 9, 130), padding=1),
            ir.Step(threshold=rng.integers(-30, 30, 130), direction=pm1(130)),
            ir.MaxPool2d(),
            ir.Flatten(),
            ir.BinDense(weight=pm1(5, 130 * 2 * 3), bias=rng.integers(-9, 9, 5)),
        ],
    )
    x = pm1(9, 70, 5, 6)
    for portable in (False, True):
        res = FusedCpuNetwork(net, portable=portable).run(x, keep_outputs=True)
        ref = golden.run(net, x)
        for i, out in res.outputs.items():
            assert_same(out, ref.outputs[i], f"layer {i} (portable={portable})")
    dense = ir.Network((100,), "binary", [ir.BinDense(weight=pm1(3, 100), bias=np.zeros(3, int))])
    x = pm1(4, 100)
    assert_same(FusedCpuNetwork(dense).run(x).scores, golden.run(dense, x).scores, "dense")


@pytest.mark.parametrize("threads", [1, 2])
def test_fused_network_threads(threads):
    """Enough images for the OpenMP path."""
    from gpu_kernels.cpu_impl import FusedCpuNetwork, cpu_impl
    from models.random_networks import fashion_bnn, random_images

    lib = cpu_impl()
    before = lib.max_threads
    try:
        net = fashion_bnn(3)
        x = random_images(4, 150, net.input_shape)
        res = FusedCpuNetwork(net).run(x, threads=threads, keep_outputs=True)
        ref = golden.run(net, x)
        for i, out in res.outputs.items():
            assert_same(out, ref.outputs[i], f"layer {i}")
    finally:
        lib.set_threads(before)


def test_fused_network_refuses_other_patterns():
    from gpu_kernels.cpu_impl import FusedCpuNetwork
    from gpu_kernels.errors import GpuKernelError
    from models import ir

    rng = np.random.default_rng(0)
    pm1 = lambda *s: np.where(rng.random(s) < 0.5, -1, 1).astype(np.int8)  # noqa: E731
    conv = ir.IntConv2d(weight=pm1(4, 1, 3, 3), bias=np.zeros(4, int), padding=1)
    pooled_first = ir.Network(
        (1, 6, 6),
        "uint8",
        [conv, ir.MaxPool2d(), ir.Step(threshold=np.zeros(4, int), direction=np.ones(4, int))],
    )
    with pytest.raises(GpuKernelError, match="needs a Step after every convolution"):
        FusedCpuNetwork(pooled_first)
    int_input = ir.Network(
        (1, 6, 6), "int", [conv, ir.Step(threshold=np.zeros(4, int), direction=np.ones(4, int))]
    )
    with pytest.raises(GpuKernelError, match="uint8 or binary input"):
        FusedCpuNetwork(int_input)
