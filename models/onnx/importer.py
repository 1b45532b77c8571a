"""ONNX -> network description (models/ir.py), for both families.

``import_onnx(path_or_model, input_range=None)`` runs the import passes of
models/onnx/passes.py, then walks the chain of nodes from the input and lowers each pattern to a
layer:

=====================================================  ==========================================
ONNX pattern                                           layer
=====================================================  ==========================================
Conv 3x3, group 1, +-1 weights, integer bias           IntConv2d (integer input) / BinConv2d
BatchNormalization -> Greater/Less[OrEqual](c) ->      Step (threshold, direction read off
Where(+-1, -+1)                                        onnxruntime's own evaluation)
MaxPool 2x2 stride 2                                   MaxPool2d
Reshape [N, -1] / Flatten(axis=1)                      Flatten
Gemm, +-1 weights, integer bias                        BinDense
SpaceToDepth                                           SpaceToDepth
[Pad(fill)] -> Conv 3x3 depthwise, one-hot kernels      ChannelShift
Conv 1x1, integer weights 0/+-2^k (k <= 6), int bias   PointwiseConv, mode from what follows:
  -> Div(64) -> Floor -> Clip(0, 255)                    RELU_QUANT
  -> GreaterOrEqual(0) -> Cast                           BINARY
  -> (nothing)                                           RAW
ReduceSum over H, W                                    PixelSum
=====================================================  ==========================================

A final LogSoftmax/Softmax is dropped (the golden scores are the pre-softmax values). What was
dropped, the ONNX input name and shape (e.g. [None, 784]) and the ONNX tensor that matches each
layer's output are recorded in ``net.meta["onnx"]`` so callers can feed and compare with
onnxruntime (models/onnx/ort.py).

``input_range``: None means uint8 pixels 0..255 (input kind "uint8"), unless the file was
written by models/onnx/export.py for another input (its metadata records the range); ``(lo,
hi)`` integer input of that range (kind "int", or "uint8" for (0, 255)); ``"binary"`` +-1
input. Step thresholds are exact for every input inside that range.

``input_scale``: the model takes the data sets' pixels times S (models/onnx/input_scale.py); the
argument, else the file's ``workbench.input_scale`` metadata. The network is then imported for
the scaled pixels' range (``input_range_for(S)``) and ``net.meta["input_scale"]`` records S. An
explicit ``input_range`` takes no scale (the caller feeds that input itself).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from models import ir
from models.checks import INT32_MAX, INT32_MIN, NumericsError
from models.numerics import sac
from models.numerics.sac import MAX_GROUP, QUANT_SHIFT, OutputMode
from models.onnx.graph import (
    MAX_IMAGE_ELEMENTS,
    Graph,
    OnnxImportError,
    attrs,
    int_list,
    load_model,
    node_error,
)
from models.onnx.input_scale import MAX_INPUT_SCALE, META_SCALE, check_scale, input_range_for
from models.onnx.passes import run_passes
from models.onnx.ranges import Range, propagate
from models.onnx.steps import StepEvaluator, derive_steps

SUPPORTED = (
    "Conv",
    "BatchNormalization",
    "Greater",
    "GreaterOrEqual",
    "Less",
    "LessOrEqual",
    "Where",
    "MaxPool",
    "Reshape",
    "Flatten",
    "Gemm",
    "SpaceToDepth",
    "Pad",
    "Div",
    "Mul",
    "Floor",
    "Clip",
    "Cast",
    "ReduceSum",
    "LogSoftmax",
    "Softmax",
    "Identity",
    "Dropout",
    "Constant",
    "Shape",
    "Gather",
    "Unsqueeze",
    "Squeeze",
    "Concat",
    "Slice",
)
COMPARE = ("Greater", "GreaterOrEqual", "Less", "LessOrEqual")
# metadata written by models/onnx/export.py (docs/models.md)
META_GROUPS, META_RANGE = "workbench.sac_groups", "workbench.input_range"
META_KIND, META_NETWORK = "workbench.input_kind", "workbench.network"
META_OUTPUTS = "workbench.layer_outputs"
MAX_META_CHARS = 1 << 20  # a metadata value longer than this is not one we wrote
MAX_NAME_CHARS = 200  # the network name appears in one-line messages and reports


# ---------------------------------------------------------------------------------------------
# value checks (each names the node, the tensor, the index and the value)
# ---------------------------------------------------------------------------------------------
def _const(g: Graph, node, idx: int, what: str) -> np.ndarray:
    if idx >= len(node.input) or not node.input[idx]:
        raise node_error(node, f"has no {what}")
    v = g.const(node.input[idx])
    if v is None:
        raise node_error(node, f"its {what} {node.input[idx]!r} is not a constant tensor")
    return np.asarray(v)


def _first_bad(arr: np.ndarray, bad: np.ndarray) -> str:
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    value = arr[idx]
    return f"[{', '.join(map(str, idx))}] = {value.item() if hasattr(value, 'item') else value!r}"


def _pm1(g, node, idx, what) -> np.ndarray:
    w = _const(g, node, idx, what)
    bad = (w != 1) & (w != -1)
    if bad.any():
        raise node_error(
            node,
            f"{what} {node.input[idx]!r}{_first_bad(w, bad)} is not +-1 (binary layers need +-1 weights)",
        )
    return w.astype(np.int8)


def _ints(g, node, idx, what, n: int) -> np.ndarray:
    if idx >= len(node.input) or not node.input[idx]:
        return np.zeros(n, dtype=np.int64)
    b = _const(g, node, idx, what).astype(np.float64)
    bad = (b != np.round(b)) | (np.abs(b) >= 2**31)
    if bad.any():
        raise node_error(
            node,
            f"{what} {node.input[idx]!r}{_first_bad(b, bad)} is not an "
            f"int32 integer (the golden layers hold integer biases)",
        )
    if b.size != n:
        raise node_error(node, f"{what} has shape {list(b.shape)}, expected [{n}]")
    return b.reshape(n).astype(np.int64)


def _pow2(g, node, idx, what) -> np.ndarray:
    w = _const(g, node, idx, what).astype(np.float64)
    mag = np.abs(w)
    ok = (mag == 0) | np.isin(mag, [float(1 << k) for k in range(-sac.EMIN + 1)])
    if not ok.all():
        raise node_error(
            node,
            f"{what} {node.input[idx]!r}{_first_bad(w, ~ok)} is not 0 or "
            f"+-2^k with k = 0..{-sac.EMIN} (SAC layers need power-of-two "
            f"weights in units of 2^{sac.EMIN})",
        )
    return w.astype(np.int32)


def _scalar(g, node, idx, what) -> float:
    v = _const(g, node, idx, what)
    if v.size != 1:
        raise node_error(node, f"{what} must be a single value, got shape {list(v.shape)}")
    return float(v.ravel()[0])


def _check_attrs(node, allowed: dict) -> dict:
    """Attributes must take the listed values (None: any)."""
    a = attrs(node)
    for k, v in a.items():
        if k not in allowed:
            raise node_error(node, f"attribute {k}={v!r} is not supported")
        want = allowed[k]
        if want is not None and v not in (want if isinstance(want, tuple) else (want,)):
            raise node_error(node, f"attribute {k}={v!r} is not supported (need {want})")
    return a


# ---------------------------------------------------------------------------------------------
# metadata (each problem names the key)
# ---------------------------------------------------------------------------------------------
@dataclass
class Metadata:
    """The workbench.* metadata, checked: each value has the JSON type export_onnx writes."""

    groups: dict = field(default_factory=dict)  # accumulator tensor -> column group G
    input_range: tuple | None = None
    input_kind: str | None = None
    network: str | None = None
    layer_outputs: list | None = None
    input_scale: int | float | None = None


def _meta_error(g: Graph, key: str, why: str) -> OnnxImportError:
    value = g.meta[key]
    shown = repr(value if len(value) <= 60 else value[:57] + "...")
    return OnnxImportError(f"{g.source}: metadata {key} = {shown}: {why}")


def _meta_json(g: Graph, key: str):
    """The JSON value of `key`; not JSON (or absurdly long or deep) names the key."""
    text = g.meta[key]
    if len(text) > MAX_META_CHARS:
        raise _meta_error(g, key, f"longer than {MAX_META_CHARS} characters")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError, 4300+ digits
        raise _meta_error(g, key, f"not valid JSON ({exc})") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _meta_groups(g: Graph) -> dict:
    groups = _meta_json(g, META_GROUPS)
    if not isinstance(groups, dict):
        raise _meta_error(g, META_GROUPS, "not a JSON object of tensor name -> group size")
    for name, grp in groups.items():
        if not _is_int(grp) or not 1 <= grp <= MAX_GROUP:
            raise _meta_error(
                g, META_GROUPS, f"group size of {name!r} is {grp!r}, not an integer in 1..{MAX_GROUP}"
            )
    return groups


def _meta_range(g: Graph) -> tuple:
    value = _meta_json(g, META_RANGE)
    if not (isinstance(value, list) and len(value) == 2 and all(map(_is_int, value))):
        raise _meta_error(g, META_RANGE, "not a JSON list of two integers [lo, hi]")
    lo, hi = value
    if lo > hi or lo < INT32_MIN or hi > INT32_MAX:
        raise _meta_error(g, META_RANGE, "not an int32 interval lo <= hi")
    return lo, hi


def _meta_text(g: Graph, key: str) -> str:
    text = g.meta[key]
    if not text or len(text) > MAX_NAME_CHARS or not text.isprintable():
        raise _meta_error(g, key, f"not a name of 1..{MAX_NAME_CHARS} printable characters")
    return text


def _meta_outputs(g: Graph) -> list:
    names = _meta_json(g, META_OUTPUTS)
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise _meta_error(g, META_OUTPUTS, "not a JSON list of tensor names")
    return names


def _meta_scale(g: Graph):
    value = _meta_json(g, META_SCALE)
    try:  # json reads NaN and Infinity as floats: check_scale refuses them
        return check_scale(value)
    except ValueError:
        raise _meta_error(
            g, META_SCALE, f"not a positive finite number at most {MAX_INPUT_SCALE:,} (the input scale)"
        ) from None


def read_metadata(g: Graph) -> Metadata:
    """The workbench.* keys present, each checked (a file from elsewhere has none)."""
    m = Metadata()
    if META_GROUPS in g.meta:
        m.groups = _meta_groups(g)
    if META_RANGE in g.meta:
        m.input_range = _meta_range(g)
    if META_KIND in g.meta:
        m.input_kind = g.meta[META_KIND]
        if m.input_kind not in ir.KINDS:
            raise _meta_error(g, META_KIND, f"not one of {', '.join(ir.KINDS)}")
        if m.input_kind == "int" and m.input_range is None:
            raise _meta_error(g, META_KIND, f"integer input needs {META_RANGE} (export_onnx writes both)")
    if META_NETWORK in g.meta:
        m.network = _meta_text(g, META_NETWORK)
    if META_OUTPUTS in g.meta:
        m.layer_outputs = _meta_outputs(g)
    if META_SCALE in g.meta:
        m.input_scale = _meta_scale(g)
        if m.input_kind == "binary":
            raise _meta_error(g, META_SCALE, "a scale of pixels, but the model takes +-1 input")
    return m


# ---------------------------------------------------------------------------------------------
# lowering
# ---------------------------------------------------------------------------------------------
class _Lowering:
    def __init__(self, g: Graph, kind: str, value_range: tuple, groups: dict):
        self.g = g
        self.layers: list[ir.Layer] = []
        self.outputs: list[str] = []
        self.shape = tuple(g.record["net_input_shape"])
        self.kind = kind
        self.input_shape, self.input_kind = self.shape, kind
        self.range = Range.uniform(self.shape[0], *value_range)
        self.groups = groups

    def add(self, layer: ir.Layer, out: str) -> None:
        if self.kind not in layer.accepts:
            raise OnnxImportError(
                f"node {layer.name!r}: lowered to {layer.type_name}, which "
                f"takes {'/'.join(layer.accepts)} input, but its input is "
                f"{self.kind}"
            )
        try:
            shape, kind = layer.infer(self.shape, self.kind)
        except (ir.NetworkError, NumericsError) as exc:
            raise OnnxImportError(f"node {layer.name!r}: {exc}") from None
        size = math.prod(shape)
        if size == 0 or size > MAX_IMAGE_ELEMENTS:  # before propagate allocates its ranges
            raise OnnxImportError(
                f"node {layer.name!r}: its output {list(shape)} holds {size} "
                f"elements per image, not 1..{MAX_IMAGE_ELEMENTS}"
            )
        self.range = propagate(layer, self.range, self.shape)
        self.layers.append(layer)
        self.outputs.append(out)
        self.shape, self.kind = shape, kind

    # -- BNN ---------------------------------------------------------------------------------------
    def conv3x3(self, node) -> str:
        a = _check_attrs(
            node,
            {
                "kernel_shape": [3, 3],
                "strides": [1, 1],
                "dilations": [1, 1],
                "group": 1,
                "auto_pad": (b"NOTSET", "NOTSET"),
                "pads": None,
            },
        )
        pads = list(a.get("pads", [0, 0, 0, 0]))
        if pads not in ([0] * 4, [1] * 4):
            raise node_error(node, f"pads {pads} are not supported (all 0 or all 1)")
        w = _pm1(self.g, node, 1, "weight")
        if w.ndim != 4 or w.shape[2:] != (3, 3):
            raise node_error(node, f"weight shape {list(w.shape)} is not [F, C, 3, 3]")
        b = _ints(self.g, node, 2, "bias", w.shape[0])
        cls = ir.BinConv2d if self.kind == "binary" else ir.IntConv2d
        self.add(cls(weight=w, bias=b, padding=pads[0], name=node.name), node.output[0])
        return node.output[0]

    def step(self, bn) -> str:
        g = self.g
        a = attrs(bn)
        if a.get("training_mode", 0):
            raise node_error(bn, "training_mode=1 is not an inference batch norm")
        for i, what in enumerate(("scale", "bias", "mean", "var"), start=1):
            v = _const(g, bn, i, what).astype(np.float64)
            if v.shape != (self.shape[0],):
                raise node_error(
                    bn, f"{what} has shape {list(v.shape)}, expected [{self.shape[0]}] (one per channel)"
                )
            if not np.all(np.isfinite(v)):
                raise node_error(bn, f"{what} {_first_bad(v, ~np.isfinite(v))} is not finite")
            if what == "var" and np.any(v < 0):
                raise node_error(bn, f"variance {_first_bad(v, v < 0)} is negative")
        cmp = g.sole_consumer(bn.output[0], "a comparison (Greater/Less) after the batch norm")
        if cmp.op_type not in COMPARE:
            raise node_error(
                cmp,
                f"follows batch norm {bn.name!r}; expected one of {COMPARE} "
                f"(the step pattern BatchNormalization -> Greater -> Where)",
            )
        if len(cmp.input) != 2 or bn.output[0] not in cmp.input:
            raise node_error(cmp, f"expected a comparison of batch norm {bn.name!r}'s output with a constant")
        other = 1 if cmp.input[0] == bn.output[0] else 0
        _scalar(g, cmp, other, "comparison constant")
        where = g.sole_consumer(cmp.output[0], "Where(+1, -1)")
        if where.op_type != "Where" or len(where.input) != 3 or where.input[0] != cmp.output[0]:
            raise node_error(where, f"follows {cmp.name!r}; expected Where(cond, +1, -1)")
        hi_v, lo_v = (_scalar(g, where, i, f"Where value {i}") for i in (1, 2))
        if {hi_v, lo_v} != {1.0, -1.0}:
            raise node_error(where, f"selects ({hi_v!r}, {lo_v!r}); a binary step needs +1 and -1")
        if self.kind not in ("int", "uint8"):
            raise node_error(bn, f"its input is {self.kind}; a step needs integer pre-activations")
        rank = len(self.shape) + 1
        ev = StepEvaluator(
            g,
            bn,
            cmp,
            bn.input[0],
            bn.output[0],
            plus_when_true=hi_v == 1.0,
            rank=rank,
            channels=self.shape[0],
        )
        if self.range.lo.shape[0] != self.shape[0]:
            raise node_error(bn, "per-channel ranges do not match the channel count")
        t, d = derive_steps(ev, self.range.lo, self.range.hi)
        self.add(ir.Step(threshold=t, direction=d, name=bn.name), where.output[0])
        return where.output[0]

    def maxpool(self, node) -> str:
        _check_attrs(
            node,
            {
                "kernel_shape": [2, 2],
                "strides": [2, 2],
                "pads": [0, 0, 0, 0],
                "ceil_mode": 0,
                "dilations": [1, 1],
                "storage_order": 0,
                "auto_pad": (b"NOTSET", "NOTSET"),
            },
        )
        if "kernel_shape" not in attrs(node) or attrs(node).get("strides") != [2, 2]:
            raise node_error(node, "only 2x2 max pooling with stride 2 is supported")
        if len([o for o in node.output if o]) > 1:
            raise node_error(node, "the Indices output is not supported")
        self.add(ir.MaxPool2d(name=node.name), node.output[0])
        return node.output[0]

    def flatten(self, node) -> str:
        if node.op_type == "Flatten":
            axis = attrs(node).get("axis", 1)
            if axis != 1:
                raise node_error(node, f"axis={axis}; only axis 1 (keep the batch) is supported")
        else:
            target = int_list(node, _const(self.g, node, 1, "shape"), "shape")
            size = int(np.prod(self.shape))
            keeps_batch = (0, -1) if not attrs(node).get("allowzero", 0) else (-1,)
            if len(target) != 2 or target[0] not in keeps_batch or target[1] not in (-1, size):
                raise node_error(
                    node,
                    f"reshape to {target} (allowzero="
                    f"{attrs(node).get('allowzero', 0)}) is not a flatten to "
                    f"[N, {size}]",
                )
        self.add(ir.Flatten(name=node.name), node.output[0])
        return node.output[0]

    def gemm(self, node) -> str:
        a = _check_attrs(node, {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": (0, 1)})
        w = _pm1(self.g, node, 1, "weight")
        if w.ndim != 2:
            raise node_error(node, f"weight shape {list(w.shape)} is not a matrix")
        if a.get("transB", 0) == 0:
            w = w.T
        b = _ints(self.g, node, 2, "bias", w.shape[0])
        self.add(ir.BinDense(weight=w, bias=b, name=node.name), node.output[0])
        return node.output[0]

    # -- SAC ---------------------------------------------------------------------------------------
    def space_to_depth(self, node) -> str:
        a = _check_attrs(node, {"blocksize": None})
        self.add(ir.SpaceToDepth(factor=int(a["blocksize"]), name=node.name), node.output[0])
        return node.output[0]

    def shift(self, node, fill: int | None = None) -> str:
        """Depthwise one-hot 3x3 Conv; `fill` is set when a Pad node already added the border."""
        a = _check_attrs(
            node,
            {
                "kernel_shape": [3, 3],
                "strides": [1, 1],
                "dilations": [1, 1],
                "group": None,
                "auto_pad": (b"NOTSET", "NOTSET"),
                "pads": None,
            },
        )
        pads = list(a.get("pads", [0] * 4))
        if pads != ([1] * 4 if fill is None else [0] * 4):
            raise node_error(
                node,
                f"pads {pads}: a channel shift pads by one pixel (in the Conv "
                f"or in a Pad before it, not both)",
            )
        k = _const(self.g, node, 1, "kernel").astype(np.float64)
        c = self.shape[0] if len(self.shape) == 3 else 0
        if k.shape != (c, 1, 3, 3) or a.get("group", 1) != c:
            raise node_error(
                node,
                f"kernel shape {list(k.shape)} with group {a.get('group', 1)} "
                f"is not a depthwise 3x3 kernel [{c}, 1, 3, 3] of group {c}",
            )
        flat = k.reshape(c, 9)
        one_hot = ((flat == 0) | (flat == 1)).all(1) & ((flat == 1).sum(1) == 1)
        if not one_hot.all():
            ch = int(np.flatnonzero(~one_hot)[0])
            raise node_error(
                node,
                f"kernel of channel {ch} is {flat[ch].tolist()}, not one-hot "
                f"(a channel shift moves each channel by one pixel)",
            )
        if len(node.input) > 2 and node.input[2]:
            bias = _const(self.g, node, 2, "bias")
            if np.any(bias != 0):
                raise node_error(node, "a channel shift has no bias")
        dirs = np.argmax(flat, axis=1).astype(np.uint8)
        self.add(ir.ChannelShift(directions=dirs, fill=fill or 0, name=node.name), node.output[0])
        return node.output[0]

    def pad(self, node) -> str:
        g = self.g
        a = attrs(node)
        mode = a.get("mode", b"constant")
        if mode not in (b"constant", "constant"):
            raise node_error(node, f"mode {mode!r}: only constant padding is supported")
        if len(node.input) > 3 and node.input[3]:
            raise node_error(node, "an axes input is not supported (pads must cover all four axes)")
        # opset < 11: pads and the fill value are attributes; from 11 on, inputs
        pads = int_list(node, a["pads"] if "pads" in a else _const(g, node, 1, "pads"), "pads")
        if pads != [0, 0, 1, 1, 0, 0, 1, 1]:
            raise node_error(node, f"pads {pads}: only the one-pixel border of a channel shift")
        has_fill = len(node.input) > 2 and node.input[2]
        fill = (
            float(a.get("value", 0.0))
            if "pads" in a
            else _scalar(g, node, 2, "constant value")
            if has_fill
            else 0.0
        )
        if not 0 <= fill <= 255 or fill != int(fill):
            raise node_error(node, f"fill value {fill!r} is not an integer in 0..255")
        conv = g.sole_consumer(node.output[0], "a depthwise Conv (channel shift)")
        if conv.op_type != "Conv" or attrs(conv).get("group", 1) != self.shape[0]:
            raise node_error(conv, "after a Pad the importer expects a depthwise 3x3 Conv")
        return self.shift(conv, int(fill))

    def pointwise(self, node) -> str:
        g = self.g
        _check_attrs(
            node,
            {
                "kernel_shape": [1, 1],
                "strides": [1, 1],
                "dilations": [1, 1],
                "group": 1,
                "pads": [0, 0, 0, 0],
                "auto_pad": (b"NOTSET", "NOTSET"),
            },
        )
        w = _pow2(g, node, 1, "weight")
        if w.ndim != 4 or w.shape[2:] != (1, 1):
            raise node_error(node, f"weight shape {list(w.shape)} is not [F, C, 1, 1]")
        w = w[:, :, 0, 0]
        b = _ints(g, node, 2, "bias", w.shape[0])
        acc = node.output[0]
        mode, out = OutputMode.RAW, acc
        cons = g.consumers(acc)
        if len(cons) == 1 and cons[0].op_type in ("Div", "Mul"):
            div = cons[0]
            k = _scalar(g, div, 1, "divisor" if div.op_type == "Div" else "factor")
            want = float(1 << QUANT_SHIFT) if div.op_type == "Div" else 2.0**-QUANT_SHIFT
            if k != want:
                raise node_error(
                    div,
                    f"{div.op_type} by {k!r}; ReLU & quantize divides the accumulator by {1 << QUANT_SHIFT}",
                )
            fl = g.sole_consumer(div.output[0], "Floor")
            if fl.op_type != "Floor":
                raise node_error(fl, "expected Floor after the division (ReLU & quantize)")
            clip = g.sole_consumer(fl.output[0], "Clip(0, 255)")
            if clip.op_type != "Clip":
                raise node_error(clip, "expected Clip(0, 255) after Floor (ReLU & quantize)")
            ca = attrs(clip)
            lo = ca.get("min", _scalar(g, clip, 1, "min") if len(clip.input) > 1 else None)
            hi = ca.get("max", _scalar(g, clip, 2, "max") if len(clip.input) > 2 else None)
            if (lo, hi) != (0.0, 255.0):
                raise node_error(clip, f"clips to ({lo!r}, {hi!r}); ReLU & quantize clips to (0, 255)")
            mode, out = OutputMode.RELU_QUANT, clip.output[0]
        elif len(cons) == 1 and cons[0].op_type == "GreaterOrEqual":
            ge = cons[0]
            if ge.input[0] != acc or _scalar(g, ge, 1, "comparison constant") != 0.0:
                raise node_error(ge, "the binary output mode is GreaterOrEqual(acc, 0)")
            cast = g.sole_consumer(ge.output[0], "Cast")
            if cast.op_type != "Cast":
                raise node_error(cast, "expected Cast after GreaterOrEqual (binary output mode)")
            mode, out = OutputMode.BINARY, cast.output[0]
        group = self.groups.get(acc)
        try:
            combined = sac.combine_columns(w, int(group)) if group is not None else _best_combination(w)
        except NumericsError as exc:
            raise node_error(node, f"column combining with G={group}: {exc}") from None
        self.add(ir.PointwiseConv(weights=combined, bias=b, mode=mode, name=node.name), out)
        return out

    def pixel_sum(self, node) -> str:
        g = self.g
        a = _check_attrs(node, {"keepdims": 0, "axes": None, "noop_with_empty_axes": 0})
        axes = a.get("axes")
        if axes is None:
            axes = int_list(node, _const(g, node, 1, "axes"), "axes")
        if sorted(int(v) % 4 for v in axes) != [2, 3]:
            raise node_error(
                node, f"sums over axes {list(axes)}; PixelSum sums over H and W (axes [2, 3]) with keepdims=0"
            )
        self.add(ir.PixelSum(name=node.name), node.output[0])
        return node.output[0]

    # -- dispatch -------------------------------------------------------------------------------
    def lower_node(self, node) -> str:
        op = node.op_type
        pattern = self._conv_kind(node) if op == "Conv" else op
        handlers = {
            "PointwiseConv": self.pointwise,
            "ChannelShift": self.shift,
            "Conv3x3": self.conv3x3,
            "BatchNormalization": self.step,
            "MaxPool": self.maxpool,
            "Reshape": self.flatten,
            "Flatten": self.flatten,
            "Gemm": self.gemm,
            "SpaceToDepth": self.space_to_depth,
            "Pad": self.pad,
            "ReduceSum": self.pixel_sum,
        }
        if pattern not in handlers:
            where = (
                "" if op in SUPPORTED else " (supported operators: " + ", ".join(s for s in SUPPORTED) + ")"
            )
            raise node_error(node, f"operator {op} is not supported here{where}")
        try:
            return handlers[pattern](node)
        except (ir.NetworkError, NumericsError) as exc:  # a layer refuses its parameters
            raise node_error(node, str(exc)) from None

    def _conv_kind(self, node) -> str:
        """Which Conv pattern (the weight shape and group decide)."""
        w = _const(self.g, node, 1, "weight")
        grp = attrs(node).get("group", 1)
        if w.ndim == 4 and w.shape[2:] == (1, 1) and grp == 1:
            return "PointwiseConv"
        if w.ndim == 4 and grp > 1 and grp == w.shape[0] and w.shape[1] == 1:
            return "ChannelShift"
        return "Conv3x3"

    def run(self) -> None:
        cur = self.g.record["first_tensor"]
        while cur != self.g.output:
            node = self.g.sole_consumer(cur, "the next layer")
            cur = self.lower_node(node)


def _best_combination(w: np.ndarray) -> sac.CombinedWeights:
    """No recorded group size: the largest G (fewest array columns) that keeps one nonzero per
    filter and group."""
    k = w.shape[1]
    best = None
    for grp in range(1, MAX_GROUP + 1):
        try:
            cw = sac.combine_columns(w, grp)
        except NumericsError:
            continue
        key = (-(-k // grp), grp)
        if best is None or key < best[0]:
            best = (key, cw)
    if best is None:
        raise NumericsError(f"no column group 1..{MAX_GROUP} holds these {list(w.shape)} weights")
    return best[1]


def _input_spec(input_range) -> tuple[str, tuple]:
    if input_range is None:
        return "uint8", (0, 255)
    if isinstance(input_range, str):
        if input_range != "binary":
            raise OnnxImportError(f"input_range must be None, (lo, hi) or 'binary', got {input_range!r}")
        return "binary", (-1, 1)
    try:
        values = list(input_range)
        if len(values) != 2 or any(isinstance(v, bool) or int(v) != v for v in values):
            raise ValueError
        lo, hi = (int(v) for v in values)
    except (TypeError, ValueError, OverflowError):
        raise OnnxImportError(
            f"input_range must be None, (lo, hi) with integer bounds or 'binary', got {input_range!r}"
        ) from None
    if lo > hi or lo < INT32_MIN or hi > INT32_MAX:
        raise OnnxImportError(f"input_range ({lo}, {hi}) is not an int32 interval")
    return ("uint8" if (lo, hi) == (0, 255) else "int"), (lo, hi)


def import_onnx(path_or_model, input_range=None, input_scale=None) -> ir.Network:
    """Import an ONNX file (or ModelProto) as a golden network description. Every problem with
    the file is an OnnxImportError that names the file (the commands print it as one line).
    `input_scale` (overrides the file's workbench.input_scale): see the module docstring."""
    if input_scale is not None:
        if input_range is not None:
            raise OnnxImportError("give input_range or input_scale, not both")
        try:
            input_scale = check_scale(input_scale)
        except ValueError as exc:
            raise OnnxImportError(str(exc)) from None
    source = None
    try:
        model, source = load_model(path_or_model)
        return _import(model, source, path_or_model, input_range, input_scale)
    except OnnxImportError as exc:
        if source is None or str(exc).startswith(f"{source}: "):
            raise
        raise OnnxImportError(f"{source}: {exc}") from None


def _import(model, source: str, path_or_model, input_range, input_scale) -> ir.Network:
    g = Graph(model, source)
    meta = read_metadata(g)
    run_passes(g)
    scale = None
    if input_range is None:
        scale = input_scale if input_scale is not None else meta.input_scale
    if scale is not None:
        if meta.input_kind == "binary":
            raise OnnxImportError(f"{source}: input scale {scale}: the model takes +-1 input, not pixels")
        input_range = input_range_for(scale)
    elif input_range is None:  # files from export_onnx record a non-pixel input range
        if meta.input_kind == "binary":
            input_range = "binary"
        elif meta.input_range is not None:
            input_range = meta.input_range
    kind, value_range = _input_spec(input_range)
    low = _Lowering(g, kind, value_range, meta.groups)
    low.run()
    if not low.layers:
        raise OnnxImportError(f"{source}: no layers between the input and the output")
    family = (
        "sac"
        if any(
            isinstance(layer, (ir.PointwiseConv, ir.ChannelShift, ir.SpaceToDepth, ir.PixelSum))
            for layer in low.layers
        )
        else "bnn"
    )
    info = {
        "family": family,
        "source": source,
        "input_range": list(value_range),
        **({"input_scale": scale} if scale is not None else {}),
        "onnx": {
            "input_name": g.input.name,
            "input_shape": g.record["onnx_input_shape"],
            "output_name": g.model.graph.output[0].name,
            "dropped": list(g.record["dropped"]),
            "layer_outputs": low.outputs,
        },
    }
    # a file from elsewhere is named after the file (HEP-BNN's graph is "torch-jit-export")
    from_file = not isinstance(path_or_model, onnx.ModelProto)
    graph_name = source if source != "<model>" else ""  # load_model's label of a proto
    name = meta.network or (Path(source).stem if from_file else graph_name) or "onnx_model"
    try:
        return ir.Network(low.input_shape, low.input_kind, low.layers, name=name, meta=info)
    except ir.NetworkError as exc:
        raise OnnxImportError(f"{source}: {exc}") from None
