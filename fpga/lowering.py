"""Lowering a network description onto the SAC array: which layers the array runs, how.

The array computes `acc = init + sum_k w_k * v_k` over uint8 data v with power-of-two weights w,
then an output mode. SAC layers map onto it directly. A BNN layer maps onto it exactly too
(docs/fpga_bnn.md):

* +-1 weights are the power-of-two weights +-1 (or +-2, see below), column group 1;
* a 3x3 convolution is a matrix product over 9*C inputs: the host lays out each output pixel's
  3x3 window (im2col), input channel `tap * C + c` with tap = ky * 3 + kx;
* +-1 activations a are stored as v = a + 1 (0 and 2) when the host writes them, and a padded
  tap as v = 1 (a = 0: the tap contributes nothing, as in the golden model). Then
  sum w a = sum w v - sum w, a per-filter constant that goes into the bias;
* the binary output mode writes b = (a + 1) / 2 (0 or 1). A dense layer reading such bits
  straight from the data buffer uses weights 2w: sum w a = sum 2w b - sum w;
* a Step folds into the row bias and the binary output mode: acc = d * (x - t) >= 0 exactly
  when the golden step is on (d = direction, weights and bias negated for d = -1);
* a conv/dense layer without a Step runs in raw mode (exact int32 pre-activations).

Layers the array does not run (max pooling, flatten, space-to-depth, a Step that does not follow
a conv or dense layer) run on the host with the golden functions, and are labelled so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models import ir
from models.checks import INT32_MAX, INT32_MIN
from models.numerics import sac
from models.numerics.sac import CombinedWeights, OutputMode

# How golden tensor values relate to the bytes in the data buffer.
CODE_UINT8 = "uint8"  # v = x: integer pixels or SAC activations, 0..255
CODE_PM1 = "pm1"  # v = a + 1 for a in {-1, +1}: 0 or 2 (host-written binary activations)
CODE_BIT = "bit"  # v = (a + 1) / 2: 0 or 1 (binary outputs left in place by the array)
CODE_INT = "int"  # raw int32 accumulators (partial-sum buffer)


class LoweringError(ValueError):
    """A layer that cannot be mapped onto the SAC array (names the layer and why)."""


@dataclass(eq=False)
class ArrayOp:
    """One conv/dense layer, with a fused Step, ChannelShift or PixelSum, as the array runs it."""

    first: int  # first network layer covered
    last: int  # last network layer covered: the op produces its golden output
    weights: CombinedWeights  # as the array sees them: K = 9C after im2col
    bias: np.ndarray  # int32 [F], the rows' initial value
    mode: OutputMode
    in_code: str  # CODE_UINT8 / CODE_PM1 / CODE_BIT: input bytes vs golden values
    out_code: str  # CODE_UINT8 / CODE_BIT / CODE_INT: output vs golden values
    height: int  # pixels the array processes (output resolution)
    width: int
    im2col_pad: int | None  # 3x3 conv: host lays out windows with this padding (0 or 1)
    pad_value: int = 0  # data value of a padded tap
    shift: ir.ChannelShift | None = None
    in_place: bool = False  # input is the previous op's output, still in the data buffer

    @property
    def in_channels(self) -> int:
        return self.weights.in_channels

    @property
    def out_channels(self) -> int:
        return self.weights.out_channels

    @property
    def pixels(self) -> int:
        return self.height * self.width


@dataclass(eq=False)
class HostOp:
    """Layers run on the host with the golden functions."""

    layers: list


def _range_of_conv(x_lo: int, x_hi: int, w: np.ndarray, bias: np.ndarray) -> tuple:
    """Bounds of sum_k w_k x_k + b over x_k in [x_lo, x_hi] (+-1 weights), per filter.
    The counts are int64 (numpy sums booleans as int64), so the bounds are too."""
    pos = (w == 1).sum(axis=1)
    neg = (w == -1).sum(axis=1)
    lo = pos * x_lo - neg * x_hi + bias
    hi = pos * x_hi - neg * x_lo + bias
    return lo, hi


def _fold(
    label: str, w2d: np.ndarray, bias: np.ndarray, step: ir.Step | None, in_code: str, x_lo: int, x_hi: int
):
    """Integer weights [F, K] and row bias for the array, from +-1 weights w2d [F, K], the
    layer's bias and an optional Step, for inputs encoded by `in_code`."""
    # Exact integers throughout without casts: the weights are +-1 (int8 products of at most
    # +-2), the offset is a numpy sum (int64), and the bias (int32) meets int64 in every
    # subtraction. (Casts to int64 here were no-ops: `make mutants` showed every one could
    # become a float cast unnoticed, as the float64 values are exact too.)
    w, b = w2d, bias
    scale = 2 if in_code == CODE_BIT else 1
    offset = w.sum(axis=1) if in_code in (CODE_PM1, CODE_BIT) else 0
    if step is None:
        w_arr, b_arr = w * scale, b - offset
    else:
        lo, hi = _range_of_conv(x_lo, x_hi, w, b)
        # thresholds outside the reachable range: always on / always off, kept in int32 (one
        # past the range, so every threshold beyond it folds to the same bias)
        t = np.clip(step.threshold, lo - 1, hi + 1)
        d = step.direction
        w_arr = w * (d * scale)[:, None]
        b_arr = d * (b - t - offset)
    if np.any((b_arr < INT32_MIN) | (b_arr > INT32_MAX)):
        raise LoweringError(f"{label}: folded bias does not fit int32")
    return w_arr.astype(np.int32), b_arr.astype(np.int32)


def _im2col_weights(weight: np.ndarray) -> np.ndarray:
    """[F, C, 3, 3] -> [F, 9C] in im2col channel order tap * C + c, tap = ky * 3 + kx."""
    f, c = weight.shape[:2]
    return weight.reshape(f, c, 9).transpose(0, 2, 1).reshape(f, 9 * c)


def lower(net: ir.Network) -> list:
    """The network as a list of ArrayOp and HostOp, in order."""
    layers, shapes = net.layers, net.shapes
    ops: list = []
    # Layers before `covered` belong to an op already made (its ChannelShift, Step or
    # PixelSum). A for loop over the layers rather than a hand-advanced index: every layer is
    # visited once whatever the bookkeeping does, so no slip of it can loop forever.
    covered = 0

    def host(idx):
        if ops and isinstance(ops[-1], HostOp):
            ops[-1].layers.append(idx)
        else:
            ops.append(HostOp([idx]))

    for i, layer in enumerate(layers):
        if i < covered:
            continue
        in_shape, in_kind = shapes[i]
        prev = ops[-1] if ops else None
        nxt = layers[i + 1] if i + 1 < len(layers) else None
        label = layer.label(i)
        if isinstance(layer, (ir.ChannelShift, ir.PointwiseConv)):
            shift = None
            if isinstance(layer, ir.ChannelShift):
                if not isinstance(nxt, ir.PointwiseConv):
                    raise LoweringError(f"{label} must be followed by a PointwiseConv")
                shift, i = layer, i + 1
                layer = layers[i]
            last, mode = i, layer.mode
            if mode == OutputMode.RAW and i + 1 < len(layers) and isinstance(layers[i + 1], ir.PixelSum):
                last, mode = i + 1, OutputMode.PIXEL_SUM
            c, h, w = shapes[i][0]
            out_code = CODE_INT if mode in (OutputMode.RAW, OutputMode.PIXEL_SUM) else CODE_UINT8
            op = ArrayOp(
                first=i - (shift is not None),
                last=last,
                weights=layer.weights,
                bias=layer.bias,
                mode=mode,
                in_code=CODE_UINT8,
                out_code=out_code,
                height=h,
                width=w,
                im2col_pad=None,
                shift=shift,
                in_place=isinstance(prev, ArrayOp) and prev.out_code == CODE_UINT8,
            )
            ops.append(op)
            covered = last + 1
            continue
        if isinstance(layer, (ir.IntConv2d, ir.BinConv2d, ir.BinDense)):
            step = nxt if isinstance(nxt, ir.Step) else None
            last = i + 1 if step is not None else i
            out_shape = shapes[last][0]
            if isinstance(layer, ir.IntConv2d):
                if in_kind != "uint8":
                    raise LoweringError(
                        f"{label}: the array takes uint8 data; this layer's "
                        f"input is {in_kind} (import the model with a 0..255 "
                        f"input range)"
                    )
                in_code, x_lo, x_hi, pad_value = CODE_UINT8, 0, 255, 0
            elif (
                isinstance(prev, ArrayOp)
                and prev.out_code == CODE_BIT
                and isinstance(layer, ir.BinDense)
                and prev.last == i - 1
            ):
                in_code, x_lo, x_hi, pad_value = CODE_BIT, -1, 1, 1
            else:
                in_code, x_lo, x_hi, pad_value = CODE_PM1, -1, 1, 1
            if isinstance(layer, ir.BinDense):
                w2d, pad, (h, w) = layer.weight, None, (1, 1)
            else:
                w2d, pad = _im2col_weights(layer.weight), layer.padding
                h, w = shapes[i + 1][0][1:]
            w_arr, b_arr = _fold(label, w2d, layer.bias, step, in_code, x_lo, x_hi)
            mode = OutputMode.BINARY if step is not None else OutputMode.RAW
            op = ArrayOp(
                first=i,
                last=last,
                weights=sac.combine_columns(w_arr, 1),
                bias=b_arr,
                mode=mode,
                in_code=in_code,
                out_code=CODE_BIT if step is not None else CODE_INT,
                height=h,
                width=w,
                im2col_pad=pad,
                pad_value=pad_value,
                in_place=in_code == CODE_BIT,
            )
            assert len(out_shape) in (1, 3)
            ops.append(op)
            covered = last + 1
            continue
        if isinstance(layer, ir.PixelSum):
            raise LoweringError(f"{label} needs a raw PointwiseConv right before it")
        host(i)
    if not any(isinstance(op, ArrayOp) for op in ops):
        raise LoweringError(f"{net.name} has no layer the SAC array can run")
    return ops


# ---------------------------------------------------------------------------------------------
# Moving tensors between golden values and array data
# ---------------------------------------------------------------------------------------------
def encode_input(op: ArrayOp, x: np.ndarray) -> np.ndarray:
    """Golden input of op.first [B, C, H, W] or [B, K] -> uint8 array data [B, K', H', W']
    (host side: value encoding, then the 3x3 windows for convolutions)."""
    x = np.asarray(x)
    if op.in_code == CODE_UINT8:
        if x.size and (x.min() < 0 or x.max() > 255):
            raise LoweringError(f"input of layer {op.first} has values outside 0..255")
        v = x.astype(np.uint8)
    elif op.in_code == CODE_PM1:
        # integer casts wrap, so x + 1 in x's own dtype gives the same bytes as in int16
        v = (x + 1).astype(np.uint8)
    else:
        # For a in {-1, +1}, (a + 1) // 2, (a + 1) / 2 and (a + 2) // 2 are all 0 and 1, in
        # int16 or in float: mutants of this line cannot change a result.
        v = ((x.astype(np.int16) + 1) // 2).astype(np.uint8)  # pragma: no mutate
    if v.ndim == 2:
        return v[:, :, None, None]
    if op.im2col_pad is None:
        return v
    p = op.im2col_pad
    n, c, h, w = v.shape
    vp = np.pad(v, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=op.pad_value)
    ho, wo = h + 2 * p - 2, w + 2 * p - 2
    out = np.empty((n, 9, c, ho, wo), dtype=np.uint8)
    for ky in range(3):
        for kx in range(3):
            out[:, ky * 3 + kx] = vp[:, :, ky : ky + ho, kx : kx + wo]
    return out.reshape(n, 9 * c, ho, wo)


def decode_output(op: ArrayOp, out: np.ndarray, golden_shape: tuple) -> np.ndarray:
    """Array output [B, F, H, W] (or [B, F] for pixel sums) -> golden values of op.last."""
    out = np.asarray(out)
    n = out.shape[0]
    if op.out_code == CODE_BIT:
        val = (out * 2 - 1).astype(np.int8)  # wraps like int16 then int8 would
    elif op.out_code == CODE_UINT8:
        val = out.astype(np.uint8)
    else:
        val = out.astype(np.int32)
    return val.reshape((n,) + tuple(golden_shape))
