"""The kernels and the mapper accept an ONNX file: HEP-BNN's trained Fashion-MNIST model
(tests/fixtures/hepbnn_fashion.onnx) runs through the emulation and the CPU implementation
equal to the golden executor on the imported network."""

import numpy as np
import pytest

from gpu_kernels import run_network
from gpu_kernels.mapper import map_network
from gpu_kernels.profiling import MeasuredProfile
from models import golden
from models.onnx import load_network
from tests.helpers import FIXTURES, assert_same, needs_gxx

pytest.importorskip("models.onnx.importer")
FIXTURE = FIXTURES / "hepbnn_fashion.onnx"
pytestmark = [needs_gxx]

SEED = 55


@pytest.fixture(scope="module")
def model():
    net = load_network(FIXTURE)
    print(f"seed {SEED}")
    x = np.random.default_rng(SEED).integers(0, 256, (3, *net.input_shape)).astype(np.uint8)
    return net, x, golden.run(net, x)


@pytest.mark.parametrize(
    "backend, mapping",
    [
        ("emulation", ["XYZ", "cpu", "X", "Y", "cpu", "Z", "XY", "XZ", "YZ", "cpu"]),
        ("emulation", "XZ"),
        ("cpu", None),
    ],
)
def test_hepbnn_fashion_onnx_equals_golden(model, backend, mapping):
    net, x, ref = model
    assert [layer.type_name for layer in net.layers] == [
        "IntConv2d",
        "Step",
        "MaxPool2d",
        "BinConv2d",
        "Step",
        "MaxPool2d",
        "Flatten",
        "BinDense",
        "Step",
        "BinDense",
    ]
    res = run_network(str(FIXTURE), x, mapping, backend=backend, word_bits=32, batch=2)
    for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True)):
        assert_same(a, b, f"layer {i}")
    assert np.array_equal(res.predictions, ref.predictions)


def test_mapper_accepts_the_onnx_file():
    m = map_network(str(FIXTURE), [1], MeasuredProfile(backend="emulation", repeats=1, warmup=0), n_images=2)
    assert len(m.dp.impls) == 10 and m.network
