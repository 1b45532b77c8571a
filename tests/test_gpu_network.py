"""Whole networks through the runner: the HEP-BNN Fashion-MNIST shape under a mixed per-layer
mapping equals the golden executor layer by layer; copies happen only where the mapping
switches device; bad requests get clear errors."""

import numpy as np
import pytest

from gpu_kernels import GpuKernelError, MappingError, Runner, run_network
from models import golden, ir
from models.checks import NumericsError
from models.random_networks import build_bnn, fashion_bnn, random_images
from tests.helpers import assert_same, needs_gxx

pytestmark = needs_gxx

NET_SEED, DATA_SEED = 31, 32
# every implementation at least once, device switching back and forth
MIXED = ["cpu", "XYZ", "Y", "Z", "XY", "XZ", "YZ", "cpu", "X", "XYZ"]


@pytest.fixture(scope="module")
def fashion():
    print(f"network seed {NET_SEED}, data seed {DATA_SEED}")
    net = fashion_bnn(NET_SEED)
    x = random_images(DATA_SEED, 5, net.input_shape)
    return net, x, golden.run(net, x)


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize(
    "mapping", [MIXED, MIXED[::-1], "XYZ", "cpu"], ids=["mixed", "mixed-reversed", "all-XYZ", "all-cpu"]
)
def test_fashion_network_equals_golden(fashion, mapping, bits):
    net, x, ref = fashion
    res = run_network(net, x, mapping, backend="emulation", word_bits=bits, batch=2)
    assert len(res.outputs) == len(ref.outputs) == 10
    for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True)):
        assert_same(a, b, f"layer {i} {net.layers[i].describe()}")
    assert np.array_equal(res.predictions, ref.predictions)
    assert res.n_images == 5 and res.batch == 2


def test_transfers_only_where_the_mapping_switches_device(fashion):
    net, x, _ = fashion
    res = run_network(net, x, MIXED, backend="emulation", batch=2)  # 3 batches
    seen = {(t.boundary, t.direction, t.tensor): t.count for t in res.transfers}
    # cpu | XYZ Y Z XY XZ YZ | cpu | X XYZ -> up at 1, down at 7, up at 8, down at the end
    assert seen == {
        (1, "h2d", "activation"): 3,
        (7, "d2h", "activation"): 3,
        (8, "h2d", "activation"): 3,
        (10, "d2h", "activation"): 3,
        (10, "d2h", "predictions"): 3,
    }
    fmt = Runner(net, MIXED, backend="emulation").ops
    up1 = next(t for t in res.transfers if t.boundary == 1)
    assert up1.bytes == fmt[1].fin.nbytes(2) * 2 + fmt[1].fin.nbytes(1)  # int32 NHWC conv output
    assert [r.device for r in res.layers] == ["host"] + ["gpu"] * 6 + ["host", "gpu", "gpu"]


def test_all_gpu_copies_only_input_and_scores(fashion):
    net, x, _ = fashion
    res = run_network(net, x, "XZ", backend="emulation", batch=5, predictions=False)
    assert [(t.boundary, t.direction) for t in res.transfers] == [(0, "h2d"), (10, "d2h")]
    # the uint8 input feeds IntConv2d directly: one byte per pixel is copied
    assert res.transfers[0].bytes == x.size


def test_all_cpu_copies_nothing(fashion):
    net, x, _ = fashion
    for res in (run_network(net, x, "cpu", backend="emulation"), run_network(net, x, MIXED, backend="cpu")):
        assert res.transfers == [] and set(res.impls) == {"cpu"}


def test_dict_mapping_and_defaults(fashion):
    net, x, ref = fashion
    res = run_network(net, x, {3: "cpu", 7: "z"}, backend="emulation")
    assert res.impls == ["X", "X", "X", "cpu", "X", "X", "X", "Z", "X", "X"]
    assert_same(res.scores, ref.scores, "scores")


def test_result_summary_and_json(fashion):
    import json

    net, x, _ = fashion
    res = run_network(net, x, MIXED, backend="emulation")
    d = json.loads(json.dumps(res.as_dict()))
    assert d["backend"] == "emulation" and len(d["layers"]) == 10
    assert d["layers"][1]["launch"]["config"] == "XYZ"
    assert "NOT GPU timings" in d["timing"]
    assert "BinConv2d 64->64" in res.summary()


def test_other_shapes_and_odd_sizes():
    """Padding 0, odd spatial sizes (floor pooling), a stage of two convs, 64-bit words."""
    rng = np.random.default_rng(41)
    print("seed 41")
    net = build_bnn(rng, (3, 13, 11), [[40, 33]], [20], classes=7)
    x = random_images(42, 3, net.input_shape)
    ref = golden.run(net, x)
    impls = ["YZ", "cpu", "XY", "X", "Z", "XZ", "cpu", "XYZ", "Y", "X", "Z", "XY"][: len(net.layers)]
    res = run_network(net, x, impls, backend="emulation", word_bits=64)
    for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True)):
        assert_same(a, b, f"layer {i}")
    # colour images are copied as they come (NCHW uint8) and reordered on the device
    assert res.transfers[0].boundary == 0 and res.transfers[0].bytes == x.size


def test_bad_requests_get_clear_errors(fashion):
    net, x, _ = fashion
    with pytest.raises(MappingError, match="unknown implementation 'W'"):
        run_network(net, x, "W", backend="emulation")
    with pytest.raises(MappingError, match="3 entries for 10 layers"):
        run_network(net, x, ["X", "Y", "Z"], backend="emulation")
    with pytest.raises(MappingError, match="names layers \\[12\\]"):
        run_network(net, x, {12: "X"}, backend="emulation")
    with pytest.raises(GpuKernelError, match="unknown backend"):
        run_network(net, x, backend="opencl")
    with pytest.raises(GpuKernelError, match="word size must be 32 or 64"):
        run_network(net, x, backend="emulation", word_bits=16)
    with pytest.raises(NumericsError, match="expects input"):
        run_network(net, x[:, :, :20], backend="emulation")
    with pytest.raises(NumericsError, match="integer array"):
        run_network(net, x.astype(np.float32), backend="emulation")
    with pytest.raises(GpuKernelError, match="batch must be a positive integer"):
        run_network(net, x, backend="emulation", batch=0)


def test_sac_layers_are_refused():
    from models.random_networks import random_sac_network

    net = random_sac_network(np.random.default_rng(0))
    with pytest.raises(GpuKernelError, match="implement IntConv2d"):
        Runner(net, backend="emulation")


def test_sums_beyond_int32_are_refused():
    w = np.ones((2, 3, 3, 3), np.int8)
    net = ir.Network((3, 4, 4), "int", [ir.IntConv2d(weight=w, bias=[0, 0], padding=1)])
    x = np.full((1, 3, 4, 4), 10**8, np.int32)
    with pytest.raises(GpuKernelError, match="beyond int32"):
        run_network(net, x, backend="emulation")
    with pytest.raises(NumericsError):  # the golden model refuses it too
        golden.run(net, x)
