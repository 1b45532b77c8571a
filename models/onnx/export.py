"""Network description -> ONNX graph of standard operators whose float32 evaluation (by
onnxruntime or anyone) equals the integer semantics of the golden executor exactly.

How each layer is written (docs/models.md has the table and the argument):

* IntConv2d / BinConv2d: ``Conv`` 3x3 with +-1 weights and integer bias; padding 1 pads with 0,
  which is the skipped tap of the golden convolution. The +-1 weights of these and of BinDense
  are int8 initializers read through a ``Cast`` to float (a quarter of the file).
* Step(t, d): ``BatchNormalization`` -> ``Greater(0)`` -> ``Where(+1, -1)`` (the HEP-BNN
  pattern). The batch norm is written so that its zero crossing lies half-way between two
  integers (mean t - 1/2 with scale +1 for x >= t; mean t + 1/2 with scale -1 for x <= t), so no
  float rounding of an integer input, fused into a convolution or not, can land on the wrong side.
* MaxPool2d: ``MaxPool`` 2x2 stride 2. Flatten: ``Reshape`` to [N, -1]. BinDense: ``Gemm``.
* SpaceToDepth: ``SpaceToDepth`` (the golden order is ONNX's).
* ChannelShift: depthwise ``Conv`` 3x3 (group = C, padding 1) whose kernel of channel c is
  one-hot at tap d_c (preceded by a ``Pad`` with the fill value when the fill is not 0).
* PointwiseConv: ``Conv`` 1x1 with the integer weights w_int and the integer bias (units of
  2^-6), i.e. the accumulator itself; then ReLU & quantize as ``Div(64) -> Floor -> Clip(0,
  255)``, binary as ``GreaterOrEqual(0) -> Cast(float)``, raw as nothing.
* PixelSum: ``ReduceSum`` over H and W.

Every value and partial sum is an integer; the exporter proves from per-channel value ranges
(models/onnx/ranges.py) that all stay below 2^24 in magnitude (step inputs below 2^21), so float32
holds them exactly whatever the summation order, and raises :class:`ExportError` otherwise.
Column-combining group sizes travel in the model's metadata (``workbench.sac_groups``), and so
does the input scale (``workbench.input_scale``: the factor on 0..255 pixels the input expects,
models/onnx/input_scale.py), given or from ``net.meta["input_scale"]``.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from models import ir
from models.numerics.sac import QUANT_SHIFT, OutputMode
from models.onnx.input_scale import META_SCALE, check_scale, input_range_for
from models.onnx.ranges import network_ranges
from safeio import write_bytes_atomic

OPSET = 17
F32_EXACT = 1 << 24  # every integer of magnitude <= 2^24 is a float32
STEP_INPUT_LIMIT = 1 << 21  # keeps BN(x) at a half-integer crossing far from rounding


class ExportError(ValueError):
    """The network cannot be written as an exact float32 ONNX graph (names the layer)."""


class _Builder:
    def __init__(self, net: ir.Network):
        self.net = net
        self.nodes, self.inits = [], []
        self.layer_outputs = []
        self._names = set()

    def const(self, name: str, value, dtype=np.float32) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def pm1_const(self, name: str, value) -> str:
        """A +-1 weight tensor stored as int8 and cast to float32 in the graph: a quarter of the
        bytes of float32 (the importer folds the Cast back into a constant; onnxruntime folds it
        at load time)."""
        self.const(f"{name}.int8", value, np.int8)
        return self.node("Cast", [f"{name}.int8"], name, to=TensorProto.FLOAT)

    def node(self, op: str, inputs: list, name: str, **attrs) -> str:
        if name in self._names:
            raise ExportError(f"duplicate node name {name!r}")
        self._names.add(name)
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name


def _prefix(i: int, layer: ir.Layer) -> str:
    label = "".join(ch if ch.isalnum() or ch in "_." else "_" for ch in layer.name)
    return f"l{i}_{layer.type_name}" + (f"_{label}" if label else "")


def _conv3x3(b: _Builder, x: str, layer, p: str) -> str:
    w = b.pm1_const(f"{p}.weight", layer.weight)
    bias = b.const(f"{p}.bias", layer.bias)
    pad = int(layer.padding)
    return b.node(
        "Conv",
        [x, w, bias],
        p,
        kernel_shape=[3, 3],
        pads=[pad] * 4,
        strides=[1, 1],
        dilations=[1, 1],
        group=1,
    )


def _step(b: _Builder, x: str, layer: ir.Step, p: str) -> str:
    t = layer.threshold.astype(np.float64)
    d = layer.direction.astype(np.float64)
    c = t.shape[0]
    # x >= t  <=>  (x - (t - 1/2)) > 0 ;  x <= t  <=>  -(x - (t + 1/2)) > 0
    mean = t - 0.5 * d
    bn = b.node(
        "BatchNormalization",
        [
            x,
            b.const(f"{p}.scale", d),
            b.const(f"{p}.bias", np.zeros(c)),
            b.const(f"{p}.mean", mean),
            b.const(f"{p}.var", np.ones(c)),
        ],
        f"{p}.bn",
        epsilon=1e-5,
    )
    gt = b.node("Greater", [bn, b.const(f"{p}.zero", 0.0)], f"{p}.gt")
    return b.node("Where", [gt, b.const(f"{p}.plus", [1.0]), b.const(f"{p}.minus", [-1.0])], p)


def _shift(b: _Builder, x: str, layer: ir.ChannelShift, p: str) -> str:
    c = layer.directions.shape[0]
    k = np.zeros((c, 1, 9), dtype=np.float32)
    k[np.arange(c), 0, layer.directions.astype(np.int64)] = 1.0
    kernel = b.const(f"{p}.kernel", k.reshape(c, 1, 3, 3))
    pads = [1] * 4
    if int(layer.fill) != 0:
        x = b.node(
            "Pad",
            [
                x,
                b.const(f"{p}.pads", [0, 0, 1, 1, 0, 0, 1, 1], np.int64),
                b.const(f"{p}.fill", float(layer.fill)),
            ],
            f"{p}.pad",
            mode="constant",
        )
        pads = [0] * 4
    return b.node("Conv", [x, kernel], p, kernel_shape=[3, 3], pads=pads, strides=[1, 1], group=c)


def _pointwise(b: _Builder, x: str, layer: ir.PointwiseConv, p: str) -> str:
    w = layer.dense()
    acc = b.node(
        "Conv",
        [x, b.const(f"{p}.weight", w[:, :, None, None]), b.const(f"{p}.bias", layer.bias)],
        f"{p}.acc" if layer.mode != OutputMode.RAW else p,
        kernel_shape=[1, 1],
        pads=[0] * 4,
        strides=[1, 1],
        group=1,
    )
    if layer.mode == OutputMode.RELU_QUANT:
        q = b.node("Div", [acc, b.const(f"{p}.unit", float(1 << QUANT_SHIFT))], f"{p}.div")
        q = b.node("Floor", [q], f"{p}.floor")
        return b.node("Clip", [q, b.const(f"{p}.lo", 0.0), b.const(f"{p}.hi", 255.0)], p)
    if layer.mode == OutputMode.BINARY:
        ge = b.node("GreaterOrEqual", [acc, b.const(f"{p}.zero", 0.0)], f"{p}.ge")
        return b.node("Cast", [ge], p, to=TensorProto.FLOAT)
    return acc


def _check_exact(net: ir.Network, ranges) -> None:
    for i, layer in enumerate(net.layers):
        r = ranges[i + 1]
        if r.bound >= F32_EXACT:
            raise ExportError(
                f"{layer.label(i)}: values or partial sums reach {r.bound}, not "
                f"exact in float32 (limit 2^24 = {F32_EXACT})"
            )
        if isinstance(layer, ir.Step) and ranges[i].bound >= STEP_INPUT_LIMIT:
            raise ExportError(
                f"{layer.label(i)}: step inputs reach {ranges[i].bound}; the "
                f"exported batch norm is exact only below 2^21"
            )


def _checked_scale(net: ir.Network, input_range, input_scale):
    """The input scale to record (the argument, else an imported network's), checked against
    the input range the exactness proof covers: the scaled pixels must lie inside it."""
    scale = input_scale if input_scale is not None else net.meta.get("input_scale")
    if scale is None:
        return None
    try:
        scale = check_scale(scale)
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    if net.input_kind == "binary":
        raise ExportError(f"input scale {scale}: {net.name} takes +-1 input, not pixels")
    lo, hi = input_range if input_range is not None else (0, 255)
    need = input_range_for(scale)[1]
    if lo > 0 or hi < need:
        raise ExportError(
            f"input scale {scale}: the scaled pixels reach {need}, but {net.name} is exported for "
            f"input {lo}..{hi} (import it with the scale, or give input_range=(0, {need}))"
        )
    return scale


def build_model(net: ir.Network, input_range=None, input_scale=None) -> onnx.ModelProto:
    """The ONNX model for `net` (input float32 [N, *input_shape], output the last layer);
    `input_scale`: the factor on 0..255 pixels its input expects (recorded in the metadata)."""
    if not isinstance(net, ir.Network):
        raise ExportError(f"export_onnx needs an ir.Network, got {type(net).__name__}")
    if input_range is None and net.input_kind == "int" and "input_range" in net.meta:
        input_range = net.meta["input_range"]  # an imported integer-input network
    scale = _checked_scale(net, input_range, input_scale)
    try:
        ranges = network_ranges(net, input_range)
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    _check_exact(net, ranges)
    b = _Builder(net)
    x = "input"
    groups = {}
    for i, layer in enumerate(net.layers):
        p = _prefix(i, layer)
        if isinstance(layer, (ir.IntConv2d, ir.BinConv2d)):
            x = _conv3x3(b, x, layer, p)
        elif isinstance(layer, ir.Step):
            x = _step(b, x, layer, p)
        elif isinstance(layer, ir.MaxPool2d):
            x = b.node("MaxPool", [x], p, kernel_shape=[2, 2], strides=[2, 2], pads=[0] * 4)
        elif isinstance(layer, ir.Flatten):
            x = b.node("Reshape", [x, b.const(f"{p}.shape", [0, -1], np.int64)], p)
        elif isinstance(layer, ir.BinDense):
            x = b.node(
                "Gemm",
                [x, b.pm1_const(f"{p}.weight", layer.weight), b.const(f"{p}.bias", layer.bias)],
                p,
                transB=1,
            )
        elif isinstance(layer, ir.SpaceToDepth):
            x = b.node("SpaceToDepth", [x], p, blocksize=int(layer.factor))
        elif isinstance(layer, ir.ChannelShift):
            x = _shift(b, x, layer, p)
        elif isinstance(layer, ir.PointwiseConv):
            x = _pointwise(b, x, layer, p)
            groups[x if layer.mode == OutputMode.RAW else f"{p}.acc"] = int(layer.weights.group)
        elif isinstance(layer, ir.PixelSum):
            x = b.node("ReduceSum", [x, b.const(f"{p}.axes", [2, 3], np.int64)], p, keepdims=0)
        else:
            raise ExportError(f"{layer.label(i)}: no ONNX pattern for {layer.type_name}")
        b.layer_outputs.append(x)
    b.nodes.append(helper.make_node("Identity", [x], ["scores"], name="scores"))
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", *net.input_shape])
    out = helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", *net.output_shape])
    graph = helper.make_graph(b.nodes, net.name, [inp], [out], initializer=b.inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="sacbnn-workbench"
    )
    model.ir_version = 8
    meta = {
        "workbench.network": net.name,
        "workbench.input_kind": net.input_kind,
        "workbench.layer_outputs": json.dumps(b.layer_outputs),
    }
    if groups:
        meta["workbench.sac_groups"] = json.dumps(groups)
    if input_range is not None:
        meta["workbench.input_range"] = json.dumps([int(v) for v in input_range])
    if scale is not None:
        meta[META_SCALE] = json.dumps(scale)
    helper.set_model_props(model, meta)
    onnx.checker.check_model(model, full_check=True)
    return model


def export_onnx(net: ir.Network, path=None, input_range=None, input_scale=None) -> onnx.ModelProto:
    """Write `net` as ONNX to `path` (if given) and return the model."""
    model = build_model(net, input_range, input_scale)
    if path is not None:
        write_bytes_atomic(path, model.SerializeToString())
    return model
