"""The network description and the golden executor."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from models import golden, ir
from models.checks import NumericsError
from models.numerics import bnn

SEED = 77


def small_bnn(rng, c=3, f=8, pad=1):
    """8x8 input with padding, 12x12 without: both end in a 2x2 or 1x1 map before Flatten."""
    pm = lambda *s: np.where(rng.random(s) < 0.5, -1, 1)  # noqa: E731
    size = 8 if pad else 12
    return ir.Network(
        (c, size, size),
        "uint8",
        [
            ir.IntConv2d(weight=pm(f, c, 3, 3), bias=rng.integers(-1, 2, f), padding=pad),
            ir.Step(threshold=rng.integers(-50, 50, f), direction=pm(f)),
            ir.MaxPool2d(),
            ir.BinConv2d(weight=pm(f, f, 3, 3), bias=rng.integers(-1, 2, f), padding=pad),
            ir.Step(threshold=rng.integers(-5, 5, f), direction=pm(f)),
            ir.MaxPool2d(),
            ir.Flatten(),
            ir.BinDense(weight=pm(10, f * (4 if pad else 1)), bias=rng.integers(-1, 2, 10)),
        ],
        name="small_bnn",
    )


@pytest.mark.parametrize("pad", [0, 1])
def test_bnn_network_equals_torch_float_pipeline(pad):
    rng = np.random.default_rng(SEED + pad)
    net = small_bnn(rng, pad=pad)
    x = rng.integers(0, 256, size=(5, *net.input_shape)).astype(np.uint8)
    res = golden.run(net, x)
    assert [o.shape[1:] for o in res.outputs] == [s for s, _ in net.shapes[1:]]
    t = torch.tensor(x, dtype=torch.float64)
    L = net.layers

    def step(v, layer):
        thr = torch.tensor(layer.threshold, dtype=torch.float64).view(1, -1, *([1] * (v.dim() - 2)))
        d = torch.tensor(layer.direction, dtype=torch.float64).view_as(thr)
        one = torch.ones_like(v)
        return torch.where(d * (v - thr) >= 0, one, -one)

    t = F.conv2d(
        t,
        torch.tensor(L[0].weight, dtype=torch.float64),
        torch.tensor(L[0].bias, dtype=torch.float64),
        padding=pad,
    )
    assert np.array_equal(res.outputs[0], t.numpy())
    t = F.max_pool2d(step(t, L[1]), 2)
    t = F.conv2d(
        t,
        torch.tensor(L[3].weight, dtype=torch.float64),
        torch.tensor(L[3].bias, dtype=torch.float64),
        padding=pad,
    )
    t = torch.flatten(F.max_pool2d(step(t, L[4]), 2), 1)
    t = F.linear(
        t, torch.tensor(L[7].weight, dtype=torch.float64), torch.tensor(L[7].bias, dtype=torch.float64)
    )
    assert np.array_equal(res.scores, t.numpy())
    assert np.array_equal(res.predictions, bnn.argmax(res.scores))
    assert res.outputs[1].dtype == np.int8 and res.scores.dtype == np.int32


def test_network_validation_names_layer():
    rng = np.random.default_rng(SEED)
    net = small_bnn(rng)
    with pytest.raises(ir.NetworkError, match=r"layer 1 \(BinConv2d\) accepts binary input, but gets int"):
        ir.Network((3, 8, 8), "uint8", [net.layers[0], net.layers[3]])
    with pytest.raises(ir.NetworkError, match=r"layer 0 \(IntConv2d\): weights expect 3 channels"):
        ir.Network((4, 8, 8), "uint8", [net.layers[0]])
    with pytest.raises(ir.NetworkError, match="needs a flat input"):
        ir.Network((8, 4, 4), "binary", [net.layers[7]])
    with pytest.raises(NumericsError, match="only -1 and \\+1"):
        ir.BinDense(weight=np.zeros((2, 2), dtype=int), bias=np.zeros(2, dtype=int))
    with pytest.raises(ir.NetworkError, match="padding must be 0 or 1"):
        ir.BinConv2d(weight=np.ones((1, 1, 3, 3), dtype=int), bias=[0], padding=2)


def test_golden_input_checks():
    rng = np.random.default_rng(SEED)
    net = small_bnn(rng)
    with pytest.raises(NumericsError, match=r"expects input \[N, 3, 8, 8\], got shape \(3, 8, 8\)"):
        golden.run(net, np.zeros((3, 8, 8), dtype=np.uint8))
    with pytest.raises(NumericsError, match="integer array, got dtype float32"):
        golden.run(net, np.zeros((1, 3, 8, 8), dtype=np.float32))
    with pytest.raises(NumericsError, match="above the allowed maximum 255"):
        golden.run(net, np.full((1, 3, 8, 8), 300))
