"""The kernels on a real GPU through CuPy (RawModule): the same exactness matrix as the
emulation, whole networks, and the emulation's launch plans. Marked `gpu`; skipped where CuPy
or a CUDA device is missing (run by scripts/gpu_check.sh on a GPU machine)."""
import numpy as np
import pytest

from gpu_kernels import CONFIGS, Runner, cuda_available, run_network
from gpu_kernels.layer_cases import all_cases, case_seed, make_case
from models import golden
from models.random_networks import cifar10_bnn, fashion_bnn, random_images
from tests.helpers import assert_same, needs_gxx

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cuda_available(), reason="needs CuPy and a CUDA device")]

CASES = all_cases(CONFIGS)
MIXED = ["cpu", "XYZ", "Y", "Z", "XY", "XZ", "YZ", "cpu", "X", "XYZ"]


@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_kernel_equals_golden_on_gpu(case):
    kind, config, bits, variant, pad, batch = case
    seed = case_seed(kind, bits, variant, pad, batch)
    print(f"seed {seed}")
    net, x = make_case(kind, bits, variant, pad, batch, seed)
    res = run_network(net, x, [config], backend="cupy", word_bits=bits)
    assert res.backend == "cupy"
    assert_same(res.outputs[0], golden.run(net, x).outputs[0], "-".join(map(str, case)))


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("kind", ["bin_conv", "dense"])
@pytest.mark.parametrize("config", CONFIGS)
def test_padding_bits_never_count_on_gpu(config, kind, bits):
    net, x = make_case(kind, bits, "partial", 1, 3, case_seed("garbage padding", kind, bits))
    runner = Runner(net, config, backend="cupy", word_bits=bits)
    op = runner.ops[0]
    words = op.fin.from_golden(x)
    words[..., -1] |= ~np.array(0, dtype=words.dtype) << np.array(op.fin.channels % bits, dtype=words.dtype)
    out = runner.gpu.download(runner.run_op_gpu(op, runner.gpu.upload(words), config))
    got = op.fout.to_golden(out, "int")
    assert_same(got, golden.run(net, x).outputs[0], f"{kind} {config} w{bits}")


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("mapping", [pytest.param(MIXED, marks=needs_gxx), "X", "XYZ", "Y"],
                         ids=["mixed", "X", "XYZ", "Y"])
def test_fashion_network_on_gpu(mapping, bits):
    net = fashion_bnn(31)
    x = random_images(32, 37, net.input_shape)
    ref = golden.run(net, x)
    res = run_network(net, x, mapping, backend="cupy", word_bits=bits, batch=16)
    for i, (a, b) in enumerate(zip(res.outputs, ref.outputs)):
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
    for i, (a, b) in enumerate(zip(res.outputs, ref.outputs)):
        assert_same(a, b, f"layer {i}")


@needs_gxx
def test_gpu_and_emulation_agree_on_everything():
    net = fashion_bnn(35)
    x = random_images(36, 4, net.input_shape)
    a = run_network(net, x, MIXED, backend="cupy", batch=3)
    b = run_network(net, x, MIXED, backend="emulation", batch=3)
    for i, (u, v) in enumerate(zip(a.outputs, b.outputs)):
        assert_same(u, v, f"layer {i}")
    assert [r.launch for r in a.layers] == [r.launch for r in b.layers]
    assert [(t.boundary, t.direction, t.bytes) for t in a.transfers] == \
           [(t.boundary, t.direction, t.bytes) for t in b.transfers]
