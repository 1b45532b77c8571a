"""Per-channel value ranges through a network description.

Two users: the exporter proves that every value its float32 ONNX graph computes is an integer
below 2^24 (so float32 evaluation is exact), and the importer evaluates each batch norm + compare
on every integer a step's input can reach. Ranges are intervals per channel (per feature for flat
tensors), as int64 arrays; they may be wider than what is reachable, never narrower.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models import ir
from models.numerics.sac import OutputMode

INPUT_RANGES = {"uint8": (0, 255), "binary": (-1, 1)}


@dataclass
class Range:
    lo: np.ndarray  # int64 [C] (or [K] for flat tensors)
    hi: np.ndarray
    abs_sum: np.ndarray  # bound on |partial sums| while computing this tensor (int64 [C])

    @classmethod
    def uniform(cls, channels: int, lo: int, hi: int) -> Range:
        lo_a = np.full(channels, lo, dtype=np.int64)
        hi_a = np.full(channels, hi, dtype=np.int64)
        return cls(lo_a, hi_a, np.maximum(np.abs(lo_a), np.abs(hi_a)))

    @property
    def bound(self) -> int:
        """Largest magnitude of any value or partial sum."""
        return int(
            max(np.abs(self.lo).max(initial=0), np.abs(self.hi).max(initial=0), self.abs_sum.max(initial=0))
        )


def input_range(net: ir.Network, value_range=None) -> Range:
    if value_range is None:
        if net.input_kind not in INPUT_RANGES:
            raise ValueError(f"{net.name} takes {net.input_kind} input: give its value range")
        value_range = INPUT_RANGES[net.input_kind]
    lo, hi = (int(v) for v in value_range)
    return Range.uniform(net.input_shape[0], lo, hi)


ROW_BLOCK = 1 << 22  # weights per block of rows in _linear (its int64 temporaries)


def _linear(w: np.ndarray, bias: np.ndarray, r: Range, padded=False) -> Range:
    """out_f = bias_f + sum_k w[f, k] * x_k (w [F, K], x_k in the range of input k; with
    `padded`, any term may also be 0: a padded tap). Computed a block of rows at a time, so
    the int64 temporaries stay small however large the weight matrix is."""
    f, k = w.shape
    lo, hi, mag = (np.empty(f, dtype=np.int64) for _ in range(3))
    step = max(1, ROW_BLOCK // max(k, 1))
    for r0 in range(0, f, step):
        rows = slice(r0, min(f, r0 + step))
        lo[rows], hi[rows], mag[rows] = _linear_rows(w[rows], r, padded)
    b = bias.astype(np.int64)
    return Range(b + lo, b + hi, np.abs(b) + mag)


def _linear_rows(w: np.ndarray, r: Range, padded: bool):
    w = w.astype(np.int64)
    lo_t = np.minimum(w * r.lo[None, :], w * r.hi[None, :])
    hi_t = np.maximum(w * r.lo[None, :], w * r.hi[None, :])
    if padded:
        lo_t, hi_t = np.minimum(lo_t, 0), np.maximum(hi_t, 0)
    return lo_t.sum(1), hi_t.sum(1), np.maximum(np.abs(lo_t), np.abs(hi_t)).sum(1)


def propagate(layer: ir.Layer, r: Range, in_shape: tuple) -> Range:
    """Range of `layer`'s output given the range `r` of its input of shape `in_shape`."""
    if isinstance(layer, (ir.IntConv2d, ir.BinConv2d)):
        f, c = layer.weight.shape[:2]
        # sum over the 9 taps of each channel: treat the taps as 9 copies of the channel
        w = layer.weight.reshape(f, c, 9).transpose(0, 2, 1).reshape(f, 9 * c)
        rr = Range(np.tile(r.lo, 9), np.tile(r.hi, 9), np.tile(r.abs_sum, 9))
        return _linear(w, layer.bias, rr, padded=layer.padding > 0)
    if isinstance(layer, ir.Step):
        return Range.uniform(layer.threshold.shape[0], -1, 1)
    if isinstance(layer, ir.MaxPool2d):
        return Range(r.lo.copy(), r.hi.copy(), np.maximum(np.abs(r.lo), np.abs(r.hi)))
    if isinstance(layer, ir.Flatten):
        hw = int(np.prod(in_shape[1:])) if len(in_shape) > 1 else 1
        mag = np.maximum(np.abs(r.lo), np.abs(r.hi))
        return Range(np.repeat(r.lo, hw), np.repeat(r.hi, hw), np.repeat(mag, hw))
    if isinstance(layer, ir.BinDense):
        return _linear(layer.weight, layer.bias, r)
    if isinstance(layer, ir.SpaceToDepth):
        k = layer.factor**2
        return Range(np.tile(r.lo, k), np.tile(r.hi, k), np.tile(r.abs_sum, k))
    if isinstance(layer, ir.ChannelShift):
        fill = int(layer.fill)
        return Range(
            np.minimum(r.lo, fill),
            np.maximum(r.hi, fill),
            np.maximum(np.maximum(np.abs(r.lo), np.abs(r.hi)), abs(fill)),
        )
    if isinstance(layer, ir.PointwiseConv):
        acc = _linear(layer.dense(), layer.bias, r)
        if layer.mode == OutputMode.RELU_QUANT:
            lo, hi = np.clip(acc.lo >> 6, 0, 255), np.clip(acc.hi >> 6, 0, 255)
        elif layer.mode == OutputMode.BINARY:
            lo, hi = (acc.lo >= 0).astype(np.int64), (acc.hi >= 0).astype(np.int64)
        else:
            lo, hi = acc.lo, acc.hi
        return Range(lo, hi, acc.abs_sum)
    if isinstance(layer, ir.PixelSum):
        p = int(np.prod(in_shape[1:]))
        return Range(r.lo * p, r.hi * p, np.maximum(np.abs(r.lo), np.abs(r.hi)) * p)
    raise ir.NetworkError(f"no value-range rule for {type(layer).__name__}")


def network_ranges(net: ir.Network, value_range=None) -> list[Range]:
    """Range of the input and of every layer's output (len(net.layers) + 1 entries)."""
    out = [input_range(net, value_range)]
    for i, layer in enumerate(net.layers):
        out.append(propagate(layer, out[-1], net.shapes[i][0]))
    return out
