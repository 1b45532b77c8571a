"""Golden executor: runs a network description on a batch and returns every layer's output.

This is the single source of truth. RTL benches and GPU tests compare against these arrays
(layer by layer) and never compute expected values a second way.

Output of each layer, batch first: spatial tensors [N, C, H, W], flat tensors [N, K];
dtype int32 for "int", uint8 for "uint8", int8 (+-1) for "binary".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models import ir
from models.checks import INT32_MAX, INT32_MIN, NumericsError, int_array, pm1_array
from models.numerics import bnn, sac


def check_input(net: ir.Network, x) -> np.ndarray:
    """Validate a batch [N, *input_shape] against the network's input spec."""
    a = np.asarray(x)
    want = (None,) + net.input_shape
    if a.ndim != len(want) or a.shape[1:] != net.input_shape:
        raise NumericsError(
            f"{net.name} expects input [N, {', '.join(map(str, net.input_shape))}], got shape {a.shape}"
        )
    if net.input_kind == "binary":
        return pm1_array(a, "network input")
    lo, hi = (0, 255) if net.input_kind == "uint8" else (INT32_MIN, INT32_MAX)
    return int_array(a, "network input", lo=lo, hi=hi).astype(ir.KIND_DTYPE[net.input_kind])


def _pointwise(layer: ir.PointwiseConv, x: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    acc = sac.sac_matmul(layer.weights, x.reshape(n, c, h * w), layer.bias)
    return sac.apply_mode(acc, layer.mode).reshape(n, -1, h, w)


def run_layer(layer: ir.Layer, x: np.ndarray) -> np.ndarray:
    """Apply one layer to a batch."""
    if isinstance(layer, ir.IntConv2d):
        return bnn.int_conv3x3(x, layer.weight, layer.bias, layer.padding)
    if isinstance(layer, ir.BinConv2d):
        return bnn.bin_conv3x3(x, layer.weight, layer.bias, layer.padding)
    if isinstance(layer, ir.Step):
        return bnn.step(x, layer.threshold, layer.direction)
    if isinstance(layer, ir.MaxPool2d):
        return bnn.maxpool2x2(x)
    if isinstance(layer, ir.Flatten):
        return bnn.flatten(x)
    if isinstance(layer, ir.BinDense):
        return bnn.bin_dense(x, layer.weight, layer.bias)
    if isinstance(layer, ir.SpaceToDepth):
        return sac.space_to_depth(x, layer.factor)
    if isinstance(layer, ir.ChannelShift):
        return sac.channel_shift(x, layer.directions, layer.fill)
    if isinstance(layer, ir.PointwiseConv):
        return _pointwise(layer, x)
    if isinstance(layer, ir.PixelSum):
        n, c = x.shape[:2]
        return sac.pixel_sum(x.reshape(n, c, -1))
    raise ir.NetworkError(f"the golden executor has no rule for {type(layer).__name__}")


@dataclass
class GoldenResult:
    outputs: list  # one array per layer, batch first
    layers: list  # the layers, for labels

    @property
    def scores(self) -> np.ndarray:
        """Final layer output (pre-softmax scores for a classifier)."""
        return self.outputs[-1]

    @property
    def predictions(self) -> np.ndarray:
        return bnn.argmax(self.scores.reshape(self.scores.shape[0], -1))


def run(net: ir.Network, x) -> GoldenResult:
    """Run `net` on the batch `x` and return every layer's output."""
    cur = check_input(net, x)
    outputs = []
    for i, layer in enumerate(net.layers):
        try:
            cur = run_layer(layer, cur)
        except NumericsError as exc:
            raise NumericsError(f"{layer.label(i)}: {exc}") from None
        shape, kind = net.shapes[i + 1]
        cur = cur.astype(ir.KIND_DTYPE[kind], copy=False)
        assert cur.shape[1:] == shape, (layer.label(i), cur.shape, shape)
        outputs.append(cur)
    return GoldenResult(outputs, list(net.layers))
