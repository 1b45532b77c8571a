"""The network description shared by both model families: a typed list of integer layers.

Every path reads this and nothing else: the golden executor (models/golden.py), the compiler for
the SAC array (fpga/compiler.py), the GPU mapper (gpu_kernels/), the ONNX importer/exporter.

Shapes are per image, without the batch axis: spatial tensors are (C, H, W), flat ones (K,).
Each tensor has a kind:

* ``"int"``    integers held in int32 (pixels, pre-activations, scores),
* ``"uint8"``  SAC data 0..255 (also the 0/1 output of the binary output mode),
* ``"binary"`` +-1 values (int8; packed into words by the BNN kernels).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from models.checks import INT32_MAX, INT32_MIN, NumericsError, check_shape, int_array, pm1_array
from models.numerics import sac
from models.numerics.sac import CombinedWeights, OutputMode

KINDS = ("int", "uint8", "binary")
# numpy dtype of a tensor of each kind (golden outputs, GPU outputs in golden format)
KIND_DTYPE = {"int": np.int32, "uint8": np.uint8, "binary": np.int8}


class NetworkError(ValueError):
    """A network description that is inconsistent (names the layer)."""


@dataclass(kw_only=True, eq=False)
class Layer(ABC):
    """Base class. ``name`` is free text (an ONNX node name, say) used in messages and reports."""

    name: str = ""
    accepts = KINDS

    @property
    def type_name(self) -> str:
        return type(self).__name__

    def label(self, index: int) -> str:
        return f"layer {index} ({self.type_name}{' ' + repr(self.name) if self.name else ''})"

    @abstractmethod
    def infer(self, shape: tuple, kind: str) -> tuple[tuple, str]:
        """Output (shape, kind) for an input (shape, kind); raises NetworkError if it cannot run."""

    def describe(self) -> str:
        return self.type_name


def _spatial(shape, what):
    if len(shape) != 3:
        raise NetworkError(f"{what} needs a (C, H, W) input, got shape {shape}")
    return shape


# ---------------------------------------------------------------------------------------------
# BNN layers
# ---------------------------------------------------------------------------------------------
@dataclass(kw_only=True, eq=False)
class _Conv3x3(Layer):
    weight: np.ndarray  # +-1 int8 [F, C, 3, 3]
    bias: np.ndarray  # int32 [F]
    padding: int = 0

    def __post_init__(self):
        self.weight = pm1_array(self.weight, f"{self.type_name} weight", ndim=4)
        if self.weight.shape[2:] != (3, 3):
            raise NetworkError(f"{self.type_name} weight must be [F, C, 3, 3], got {self.weight.shape}")
        self.bias = int_array(self.bias, f"{self.type_name} bias", ndim=1).astype(np.int32)
        check_shape(self.bias, f"{self.type_name} bias", (self.weight.shape[0],))
        if self.padding not in (0, 1):
            raise NetworkError(f"{self.type_name} padding must be 0 or 1, got {self.padding!r}")

    def infer(self, shape, kind):
        c, h, w = _spatial(shape, self.type_name)
        if c != self.weight.shape[1]:
            raise NetworkError(f"weights expect {self.weight.shape[1]} channels, input has {c}")
        ho, wo = h + 2 * self.padding - 2, w + 2 * self.padding - 2
        if ho < 1 or wo < 1:
            raise NetworkError(f"{h}x{w} input is too small for a 3x3 conv with padding {self.padding}")
        return (self.weight.shape[0], ho, wo), "int"

    def describe(self):
        f, c = self.weight.shape[:2]
        return f"{self.type_name} {c}->{f} 3x3 pad {self.padding}"


@dataclass(kw_only=True, eq=False)
class IntConv2d(_Conv3x3):
    """Integer-input first layer: integer pixels times +-1 weights (+ bias)."""

    accepts = ("int", "uint8")


@dataclass(kw_only=True, eq=False)
class BinConv2d(_Conv3x3):
    """Binary 3x3 convolution (xnor + popcount on the GPU)."""

    accepts = ("binary",)


@dataclass(kw_only=True, eq=False)
class Step(Layer):
    """Per-channel threshold with direction: the folded batch norm + sign of a BNN."""

    threshold: np.ndarray  # int64 [C]
    direction: np.ndarray  # int8 [C], +1: x >= t, -1: x <= t
    accepts = ("int",)

    def __post_init__(self):
        self.threshold = int_array(self.threshold, "Step threshold", ndim=1).astype(np.int64)
        self.direction = pm1_array(self.direction, "Step direction", ndim=1)
        check_shape(self.direction, "Step direction", self.threshold.shape)

    def infer(self, shape, kind):
        if shape[0] != self.threshold.shape[0]:
            raise NetworkError(f"{self.threshold.shape[0]} thresholds for {shape[0]} channels")
        return shape, "binary"

    def describe(self):
        return f"Step {self.threshold.shape[0]} ch"


@dataclass(kw_only=True, eq=False)
class MaxPool2d(Layer):
    """2x2 max pooling, stride 2, floor mode (OR of bits on packed binary tensors)."""

    def infer(self, shape, kind):
        c, h, w = _spatial(shape, "MaxPool2d")
        if h < 2 or w < 2:
            raise NetworkError(f"{h}x{w} input is too small for 2x2 max pooling")
        return (c, h // 2, w // 2), kind

    def describe(self):
        return "MaxPool 2x2"


@dataclass(kw_only=True, eq=False)
class Flatten(Layer):
    """(C, H, W) -> (C*H*W,) in NCHW order."""

    def infer(self, shape, kind):
        return (int(np.prod(shape)),), kind

    def describe(self):
        return "Flatten"


@dataclass(kw_only=True, eq=False)
class BinDense(Layer):
    """Binary fully connected layer: +-1 inputs and weights, integer bias."""

    weight: np.ndarray  # +-1 int8 [F, K]
    bias: np.ndarray  # int32 [F]
    accepts = ("binary",)

    def __post_init__(self):
        self.weight = pm1_array(self.weight, "BinDense weight", ndim=2)
        self.bias = int_array(self.bias, "BinDense bias", ndim=1).astype(np.int32)
        check_shape(self.bias, "BinDense bias", (self.weight.shape[0],))

    def infer(self, shape, kind):
        if len(shape) != 1:
            raise NetworkError(f"BinDense needs a flat input (add Flatten), got shape {shape}")
        if shape[0] != self.weight.shape[1]:
            raise NetworkError(f"weights expect {self.weight.shape[1]} inputs, got {shape[0]}")
        return (self.weight.shape[0],), "int"

    def describe(self):
        return f"BinDense {self.weight.shape[1]}->{self.weight.shape[0]}"


# ---------------------------------------------------------------------------------------------
# SAC layers
# ---------------------------------------------------------------------------------------------
@dataclass(kw_only=True, eq=False)
class SpaceToDepth(Layer):
    """Input reshaping by a factor s (ONNX SpaceToDepth channel order)."""

    factor: int

    def infer(self, shape, kind):
        c, h, w = _spatial(shape, "SpaceToDepth")
        s = self.factor
        if not isinstance(s, (int, np.integer)) or s < 1 or h % s or w % s:
            raise NetworkError(f"factor {s!r} does not divide the {h}x{w} input")
        return (c * s * s, h // s, w // s), kind

    def describe(self):
        return f"SpaceToDepth x{self.factor}"


@dataclass(kw_only=True, eq=False)
class ChannelShift(Layer):
    """Shift every channel by one pixel in one of 9 directions (zero fill by default)."""

    directions: np.ndarray  # uint8 [C], 0..8, 4 = identity
    fill: int = 0
    accepts = ("uint8",)

    def __post_init__(self):
        self.directions = int_array(self.directions, "ChannelShift directions", ndim=1, lo=0, hi=8).astype(
            np.uint8
        )
        int_array(self.fill, "ChannelShift fill", lo=0, hi=255)

    def infer(self, shape, kind):
        c, _, _ = _spatial(shape, "ChannelShift")
        if c != self.directions.shape[0]:
            raise NetworkError(f"{self.directions.shape[0]} shift directions for {c} channels")
        return shape, kind

    def describe(self):
        return f"ChannelShift {self.directions.shape[0]} ch"


@dataclass(kw_only=True, eq=False)
class PointwiseConv(Layer):
    """1x1 convolution on the SAC array: column-combined power-of-two weights, int32 bias,
    then an output mode (ReLU & quantize, binary or raw)."""

    weights: CombinedWeights
    bias: np.ndarray  # int32 [F], in units of 2^emin like the accumulator
    mode: OutputMode = OutputMode.RELU_QUANT
    accepts = ("uint8",)

    def __post_init__(self):
        if not isinstance(self.weights, CombinedWeights):
            raise NetworkError("PointwiseConv weights must be a CombinedWeights")
        # strict decode: reserved codes or bad indices are refused here, once
        sac.decode_packed(self.weights.packed, self.weights.group, self.weights.in_channels)
        self.bias = int_array(self.bias, "PointwiseConv bias", ndim=1, lo=INT32_MIN, hi=INT32_MAX).astype(
            np.int32
        )
        check_shape(self.bias, "PointwiseConv bias", (self.weights.out_channels,))
        self.mode = OutputMode(self.mode)
        if self.mode == OutputMode.PIXEL_SUM:
            raise NetworkError("PointwiseConv mode PIXEL_SUM: use mode RAW followed by PixelSum")

    def infer(self, shape, kind):
        c, h, w = _spatial(shape, "PointwiseConv")
        if c != self.weights.in_channels:
            raise NetworkError(f"weights expect {self.weights.in_channels} channels, input has {c}")
        out_kind = "int" if self.mode == OutputMode.RAW else "uint8"
        return (self.weights.out_channels, h, w), out_kind

    def dense(self) -> np.ndarray:
        """The integer weights [F, C] these packed bytes stand for."""
        return sac.decode_packed(self.weights.packed, self.weights.group, self.weights.in_channels)

    def describe(self):
        return (
            f"PointwiseConv {self.weights.in_channels}->{self.weights.out_channels} "
            f"G={self.weights.group} {self.mode.name.lower()}"
        )


@dataclass(kw_only=True, eq=False)
class PixelSum(Layer):
    """Output accumulator: sums raw int32 results over all pixels (average pooling folded into
    the final layer's weights), (C, H, W) -> (C,)."""

    accepts = ("int",)

    def infer(self, shape, kind):
        c, _, _ = _spatial(shape, "PixelSum")
        return (c,), "int"

    def describe(self):
        return "PixelSum"


# ---------------------------------------------------------------------------------------------
# Network
# ---------------------------------------------------------------------------------------------
@dataclass(eq=False)
class Network:
    """An input spec plus a list of layers. Validated on construction."""

    input_shape: tuple
    input_kind: str
    layers: list
    name: str = "network"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.input_shape = tuple(int(d) for d in self.input_shape)
        if self.input_kind not in KINDS:
            raise NetworkError(f"input kind must be one of {KINDS}, got {self.input_kind!r}")
        if not self.layers:
            raise NetworkError("a network needs at least one layer")
        self.shapes = [(self.input_shape, self.input_kind)]
        for i, layer in enumerate(self.layers):
            if not isinstance(layer, Layer):
                raise NetworkError(f"layer {i} is a {type(layer).__name__}, not a Layer")
            shape, kind = self.shapes[-1]
            if kind not in layer.accepts:
                raise NetworkError(
                    f"{layer.label(i)} accepts {'/'.join(layer.accepts)} input, but gets {kind}"
                )
            try:
                self.shapes.append(layer.infer(shape, kind))
            except (NetworkError, NumericsError) as exc:
                raise NetworkError(f"{layer.label(i)}: {exc}") from None

    @property
    def output_shape(self) -> tuple:
        return self.shapes[-1][0]

    @property
    def output_kind(self) -> str:
        return self.shapes[-1][1]

    def summary(self) -> str:
        lines = [f"{self.name}: input {self.input_shape} {self.input_kind}"]
        for i, layer in enumerate(self.layers):
            shape, kind = self.shapes[i + 1]
            lines.append(f"  {i:2d} {layer.describe():40s} -> {shape} {kind}")
        return "\n".join(lines)
