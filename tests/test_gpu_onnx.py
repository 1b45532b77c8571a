"""The kernels and the mapper accept an ONNX file: HEP-BNN's trained Fashion-MNIST model
(../shared/fixtures/hepbnn_fashion.onnx) runs through the emulation and the CPU implementation
equal to the golden executor on the imported network."""
from pathlib import Path

import numpy as np
import pytest

from models import golden
from gpu_kernels import load_network, run_network
from gpu_kernels.mapper import map_network
from gpu_kernels.profiling import MeasuredProfile
from gpu_kernels.testing import assert_same, needs_gxx

pytest.importorskip("models.onnx_import")
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "hepbnn_fashion.onnx"
pytestmark = [needs_gxx]

SEED = 55


@pytest.fixture(scope="module")
def model():
    net = load_network(FIXTURE)
    print(f"seed {SEED}")
    x = np.random.default_rng(SEED).integers(0, 256, (3, *net.input_shape)).astype(np.uint8)
    return net, x, golden.run(net, x)


@pytest.mark.parametrize("backend, mapping", [
    ("emulation", ["XYZ", "cpu", "X", "Y", "cpu", "Z", "XY", "XZ", "YZ", "cpu"]),
    ("emulation", "XZ"),
    ("cpu", None),
])
def test_hepbnn_fashion_onnx_equals_golden(model, backend, mapping):
    net, x, ref = model
    assert [l.type_name for l in net.layers] == ["IntConv2d", "Step", "MaxPool2d", "BinConv2d",
                                                 "Step", "MaxPool2d", "Flatten", "BinDense",
                                                 "Step", "BinDense"]
    res = run_network(str(FIXTURE), x, mapping, backend=backend, word_bits=32, batch=2)
    for i, (a, b) in enumerate(zip(res.outputs, ref.outputs)):
        assert_same(a, b, f"layer {i}")
    assert np.array_equal(res.predictions, ref.predictions)


def test_mapper_accepts_the_onnx_file():
    m = map_network(str(FIXTURE), [1], MeasuredProfile(backend="emulation", repeats=1, warmup=0),
                    n_images=2)
    assert len(m.dp.impls) == 10 and m.network
