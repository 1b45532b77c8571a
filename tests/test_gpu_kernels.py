"""Every BNN kernel in every configuration, through the CPU emulation of the CUDA source, equal
to the golden models: layer type x configuration x word size x channel count (multiple of the
word size or not) x padding x batch size (gpu_kernels/layer_cases.py builds the cases)."""

import numpy as np
import pytest

from gpu_kernels import CONFIGS, Runner, run_network
from gpu_kernels.devices import EmuBuffer, get_gpu
from gpu_kernels.errors import GpuKernelError
from gpu_kernels.launch import Work, plan
from gpu_kernels.layer_cases import LAYER_KINDS, all_cases, case_seed, make_case
from models import golden
from models.numerics import bnn
from tests.helpers import assert_same, needs_gxx

pytestmark = needs_gxx


def _id(case):
    kind, config, bits, variant, pad, batch = case
    return f"{kind}-{config}-w{bits}-{variant}-pad{pad}-n{batch}"


CASES = all_cases(CONFIGS)


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_kernel_equals_golden_in_emulation(case):
    kind, config, bits, variant, pad, batch = case
    seed = case_seed(kind, bits, variant, pad, batch)
    print(f"seed {seed}")
    net, x = make_case(kind, bits, variant, pad, batch, seed)
    ref = golden.run(net, x).outputs[0]
    res = run_network(net, x, [config], backend="emulation", word_bits=bits)
    assert res.backend == "emulation" and res.layers[0].impl == config
    assert_same(res.outputs[0], ref, _id(case))


@pytest.mark.parametrize("kind", LAYER_KINDS)
def test_cases_are_not_degenerate(kind):
    """The inputs make outputs that vary (both signs for binary outputs), so equality means
    something."""
    net, x = make_case(kind, 32, "partial", 1, 5, case_seed(kind, "degenerate"))
    out = golden.run(net, x).outputs[0]
    if out.dtype == np.int8:
        assert 0.05 < (out == 1).mean() < 0.95
    else:
        assert len(np.unique(out)) > 10


@pytest.mark.parametrize("config", CONFIGS)
def test_argmax_kernel_first_max(config):
    """Final scores -> class: the first index of the maximum, with many ties."""
    seed = case_seed("argmax", config)
    print(f"seed {seed}")
    scores = np.random.default_rng(seed).integers(-2, 3, size=(9, 10)).astype(np.int32)
    gpu = get_gpu("emulation")
    from gpu_kernels.layer_ops import ArgmaxOp, Fmt

    op = ArgmaxOp(0, Fmt("int", (10,), 32))
    out = gpu.empty((9, 1), np.int32)
    gpu.launch(op.kernel, plan(op.work(9), config), op.kernel_args(gpu.upload(scores), out, {}))
    assert np.array_equal(out.array[:, 0], bnn.argmax(scores))


@pytest.mark.parametrize("config", CONFIGS)
def test_dense_with_more_than_1024_neurons(config):
    """HEP-BNN gave such a layer an illegal block size; here threads stride over neurons."""
    from models import ir

    rng = np.random.default_rng(case_seed("wide dense", config))
    w = np.where(rng.random((1100, 40)) < 0.5, -1, 1)
    net = ir.Network((40,), "binary", [ir.BinDense(weight=w, bias=rng.integers(-3, 4, 1100))])
    x = np.where(rng.random((3, 40)) < 0.5, -1, 1).astype(np.int8)
    res = run_network(net, x, config, backend="emulation")
    assert all(t <= 1024 for t in [res.layers[0].launch["block"][0]])
    assert_same(res.outputs[0], golden.run(net, x).outputs[0], f"dense 1100 {config}")


def test_emulation_catches_writes_outside_a_buffer():
    """A launch whose work exceeds the output buffer trips the emulation's guard zones."""
    gpu = get_gpu("emulation")
    x = gpu.upload(np.zeros((4, 3), np.uint32))
    w = gpu.upload(np.zeros((3, 8), np.uint32))
    bias = gpu.upload(np.zeros(8, np.int32))
    out = gpu.empty((4, 8), np.int32)
    bad = plan(Work(6, 1, 8), "X")  # 6 images into a buffer of 4
    with pytest.raises(GpuKernelError, match="wrote outside"):
        gpu.launch("bin_dense/w32", bad, [x, w, bias, out, 70])


def test_unwritten_outputs_show_up():
    """Fresh emulated buffers hold a sentinel, so an output no thread writes cannot pass as 0."""
    buf = EmuBuffer((5,), np.int32)
    assert (buf.array != 0).all()


def test_runner_reuses_prepared_weights_across_runs():
    net, x = make_case("bin_conv", 64, "partial", 1, 2, 11)
    runner = Runner(net, "XZ", backend="emulation", word_bits=64)
    a = runner.run(x).outputs[0]
    b = runner.run(x[::-1]).outputs[0]
    assert_same(a, b[::-1], "second run")
    assert_same(a, golden.run(net, x).outputs[0], "first run")


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("kind", ["bin_conv", "dense"])
@pytest.mark.parametrize("config", CONFIGS)
def test_padding_bits_never_count(config, kind, bits):
    """Input words whose padding bits are set (as HEP-BNN's xnor produced) still give the golden
    result: the kernels mask the last word."""
    seed = case_seed("garbage padding", kind, bits)
    print(f"seed {seed}")
    net, x = make_case(kind, bits, "partial", 1, 3, seed)
    runner = Runner(net, config, backend="emulation", word_bits=bits)
    op = runner.ops[0]
    words = op.fin.from_golden(x)
    c = op.fin.channels
    garbage = ~np.array(0, dtype=words.dtype) << np.array(c % bits, dtype=words.dtype)
    words[..., -1] |= garbage  # every bit past channel c set
    out = runner.run_op_gpu(op, runner.gpu.upload(words), config)
    got = op.fout.to_golden(runner.gpu.download(out), "int")
    assert_same(got, golden.run(net, x).outputs[0], f"{kind} {config} w{bits} garbage padding")


@pytest.mark.parametrize("kind", ["uint8", "int"])
@pytest.mark.parametrize("config", CONFIGS)
def test_input_reorder_kernel(config, kind):
    """NCHW -> NHWC of the network input on the device equals the host-side layout."""
    from gpu_kernels.layer_ops import Fmt, ReorderOp

    rng = np.random.default_rng(case_seed("reorder", config, kind))
    fmt = Fmt(kind, (5, 3, 7), 32)
    x = rng.integers(0, 256 if kind == "uint8" else 10**6, size=(4, 5, 3, 7)).astype(fmt.dtype)
    gpu = get_gpu("emulation")
    op = ReorderOp(fmt)
    out = gpu.empty(fmt.host_shape(4), fmt.dtype)
    gpu.launch(op.kernel, plan(op.work(4), config), op.kernel_args(gpu.upload(x), out, {}))
    assert np.array_equal(out.array, fmt.from_golden(x))
