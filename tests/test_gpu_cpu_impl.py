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
        for i, (a, b) in enumerate(zip(res.outputs, ref.outputs)):
            assert_same(a, b, f"layer {i}")
        assert np.array_equal(res.predictions, ref.predictions)
    finally:
        lib.set_threads(before)


PORTABLE_CASES = [c for c in CASES if c[0] in ("int_conv_u8", "int_conv_i32", "step_spatial",
                                               "step_flat", "bin_conv", "dense") and c[5] == 2]


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
    assert_same(op.fout.to_golden(out, net.shapes[1][1]), golden.run(net, x).outputs[0],
                "-".join(map(str, case)))
