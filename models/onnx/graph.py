"""A small mutable view of an ONNX graph for the import passes (models/onnx/passes.py):
nodes in topological order, constant tensors as numpy arrays, producer/consumer look-ups, and
the error type that names the offending node."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

# Opsets of the default domain ("" = "ai.onnx") the importer accepts: those onnxruntime runs and
# whose operator versions the passes and the lowering read (Clip bounds as attributes or inputs,
# ReduceSum/Squeeze/Unsqueeze axes as attributes or inputs, the softmax axis default of 13).
# OPSET_MIN: onnxruntime only guarantees opsets 7 and up (its warning on loading an older file).
# OPSET_MAX: found with onnxruntime 1.32.0 (and onnx 1.23.2, whose newest opset is also 28) by
# creating an InferenceSession for a one-node Relu model at opsets 1..31: 28 loads, 29 fails
# with "Current official support for domain ai.onnx is till opset 28".
# tests/test_onnx_bad_models.py repeats that probe with the installed onnxruntime.
OPSET_MIN, OPSET_MAX = 7, 28
DEFAULT_DOMAINS = ("", "ai.onnx")
# One image (the input without its batch axis, and every layer output the import derives from
# it) holds at most this many elements: 4096 x 4096 pixels, 100x an ImageNet image. The value
# ranges of a flattened tensor hold three int64 numbers per element (384 MB at this limit), so
# the limit also bounds what the import allocates for a declared shape.
MAX_IMAGE_ELEMENTS = 1 << 24
# A constant tensor (initializer, Constant node) declares at most this many elements: a
# protobuf file holds at most 2 GB, i.e. 2^29 float32 values.
MAX_TENSOR_ELEMENTS = 1 << 29
# Element types a constant may have: numbers numpy holds (no strings, complex or packed types).
TENSOR_TYPES = (
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.DOUBLE,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.BFLOAT16,
    onnx.TensorProto.INT8,
    onnx.TensorProto.UINT8,
    onnx.TensorProto.INT16,
    onnx.TensorProto.UINT16,
    onnx.TensorProto.INT32,
    onnx.TensorProto.UINT32,
    onnx.TensorProto.INT64,
    onnx.TensorProto.UINT64,
    onnx.TensorProto.BOOL,
)


class OnnxImportError(ValueError):
    """An ONNX file the importer cannot represent exactly (names the node and the value)."""


def node_label(node) -> str:
    return f"node {node.name!r} ({node.op_type})" if node.name else f"a {node.op_type} node"


def node_error(node, msg: str) -> OnnxImportError:
    return OnnxImportError(f"{node_label(node)}: {msg}")


def attrs(node) -> dict:
    """Attribute name -> value; an attribute onnx cannot decode names the node."""
    try:
        return {a.name: helper.get_attribute_value(a) for a in node.attribute}
    except ValueError as exc:  # an attribute of type UNDEFINED or an unknown type
        raise node_error(node, f"unreadable attribute ({exc})") from None


def int_list(node, arr, what: str, max_len: int = 64) -> list[int]:
    """A constant that must be a short 1-D list of integers (a shape, pads, axes): anything
    else (a scalar, a matrix, fractions, NaN, thousands of values) names the node."""
    a = np.asarray(arr)
    if a.ndim != 1 or a.size > max_len:
        raise node_error(
            node, f"{what} must be a list of at most {max_len} integers, got shape {list(a.shape)}"
        )
    if a.dtype.kind not in "iub":
        f = a.astype(np.float64)
        if not (np.isfinite(f).all() and (f == np.round(f)).all() and (np.abs(f) < 2.0**62).all()):
            raise node_error(node, f"{what} {f.tolist()} are not all integers")
    return [int(v) for v in a]


def type_name(elem_type: int) -> str:
    """'FLOAT' for TensorProto.FLOAT; the number for a type onnx does not know."""
    try:
        return onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:
        return str(elem_type)


def tensor_array(t: onnx.TensorProto, what: str) -> np.ndarray:
    """A constant tensor as numpy. Checks first, without allocating, that the element type is a
    number type, that the declared shape is sane and that the data holds exactly the declared
    number of elements (numpy_helper would raise a bare ValueError, or allocate what the
    shape declares)."""
    if t.data_location == onnx.TensorProto.EXTERNAL:
        raise OnnxImportError(f"{what}: its data is in an external file that was not loaded")
    if t.data_type not in TENSOR_TYPES:
        raise OnnxImportError(
            f"{what}: element type {type_name(t.data_type)} is not supported "
            f"(the importer reads number tensors)"
        )
    dims = list(t.dims)
    if any(d < 0 for d in dims):
        raise OnnxImportError(f"{what}: shape {dims} has a negative dimension")
    count = math.prod(dims)
    if count > MAX_TENSOR_ELEMENTS:
        raise OnnxImportError(
            f"{what}: shape {dims} declares {count} elements, more than {MAX_TENSOR_ELEMENTS}"
        )
    if t.HasField("raw_data"):
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
        held, unit = len(t.raw_data), f"bytes of {itemsize}-byte elements"
        want = count * itemsize
    else:
        held, unit = len(getattr(t, helper.tensor_dtype_to_field(t.data_type))), "values"
        want = count
    if held != want:
        raise OnnxImportError(f"{what}: shape {dims} needs {want} {unit}, the data holds {held}")
    return numpy_helper.to_array(t)


def model_label(model: onnx.ModelProto) -> str:
    """An in-memory model is named by its graph name, when that is a short printable line."""
    name = model.graph.name
    return name if name and len(name) <= 200 and name.isprintable() else "<model>"


def load_model(path_or_model) -> tuple[onnx.ModelProto, str]:
    """The model and a description of where it came from. Unreadable files, and models that
    onnx.checker rejects, raise OnnxImportError naming the file and the problem."""
    if isinstance(path_or_model, onnx.ModelProto):
        model, source = path_or_model, model_label(path_or_model)
    else:
        path = Path(path_or_model)
        if not path.exists():
            raise OnnxImportError(f"{path}: no such file")
        if path.is_dir():
            raise OnnxImportError(f"{path}: is a directory, not an ONNX file")
        if path.stat().st_size == 0:
            raise OnnxImportError(f"{path}: empty file, not an ONNX model")
        try:
            model = onnx.load(str(path))
        except Exception as exc:  # noqa: BLE001 - protobuf raises several types for bad files
            raise OnnxImportError(f"{path}: not a readable ONNX file ({type(exc).__name__}: {exc})") from None
        source = str(path)
    if not model.graph.node:
        raise OnnxImportError(f"{source}: not an ONNX model with a graph (no nodes)")
    check_opsets(model, source)  # first: the clearer message for a file too new
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as exc:  # ValueError: over 2 GB
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid"
        raise OnnxImportError(f"{source}: onnx.checker rejects the model: {first}") from None
    return model, source


def check_opsets(model: onnx.ModelProto, source: str) -> None:
    """The default domain's opset must be one onnxruntime and the importer both read
    (OPSET_MIN..OPSET_MAX); a node of another domain (custom operators such as com.microsoft's)
    is refused, since the lowering goes by the operator name alone."""
    versions = {}
    for o in model.opset_import:
        domain = o.domain or ""
        if domain in DEFAULT_DOMAINS:
            if not OPSET_MIN <= o.version <= OPSET_MAX:
                raise OnnxImportError(
                    f"{source}: opset {o.version} of the default domain "
                    f"{domain or 'ai.onnx'!r} is not supported (the importer "
                    f"and onnxruntime read opsets {OPSET_MIN}..{OPSET_MAX})"
                )
            domain = ""
        versions[domain] = o.version
    if "" not in versions:
        raise OnnxImportError(f"{source}: the model imports no opset of the default domain 'ai.onnx'")
    for n in model.graph.node:
        if (n.domain or "") not in DEFAULT_DOMAINS:
            version = versions.get(n.domain, "not imported")
            raise OnnxImportError(
                f"{source}: {node_label(n)}: domain {n.domain!r} (opset "
                f"{version}) is not supported; the importer reads standard "
                f"ONNX operators (domain 'ai.onnx', opsets "
                f"{OPSET_MIN}..{OPSET_MAX})"
            )


def _dims(value_info) -> list:
    return [d.dim_value if d.HasField("dim_value") else None for d in value_info.type.tensor_type.shape.dim]


def check_input_shape(value_info, source: str) -> None:
    """The data input is [N, ...] with a symbolic or positive batch N and at least one more
    axis, every other axis a positive number, and at most MAX_IMAGE_ELEMENTS per image: the
    importer derives the network's input shape and its value ranges from these numbers."""
    dims = _dims(value_info)
    shown = [d if d is not None else "?" for d in dims]

    def refuse(why):
        return OnnxImportError(f"{source}: input {value_info.name!r} has shape {shown}: {why}")

    if not value_info.type.tensor_type.HasField("shape") or len(dims) < 2:
        raise refuse("the importer needs [N, C, H, W] (or [N, K]) with known sizes")
    if dims[0] is not None and dims[0] <= 0:
        raise refuse(f"batch dimension {dims[0]} is not positive")
    for i, d in enumerate(dims[1:], start=1):
        if d is None:
            raise refuse(f"dimension {i} is symbolic or unknown; only the batch may be")
        if d <= 0:
            raise refuse(f"dimension {i} is {d}, not positive")
    count = math.prod(dims[1:])
    if count > MAX_IMAGE_ELEMENTS:
        raise refuse(f"{count} elements per image, more than {MAX_IMAGE_ELEMENTS}")


class Graph:
    def __init__(self, model: onnx.ModelProto, source: str = "<model>"):
        self.model = model
        self.source = source
        g = model.graph
        self.nodes = [n for n in g.node]
        self.consts: dict[str, np.ndarray] = {
            t.name: tensor_array(t, f"{source}: initializer {t.name!r}") for t in g.initializer
        }
        inputs = [i for i in g.input if i.name not in self.consts]
        if len(inputs) != 1:
            raise OnnxImportError(
                f"{source}: the graph must have exactly one data input, has {[i.name for i in inputs]}"
            )
        if len(g.output) != 1:
            raise OnnxImportError(
                f"{source}: the graph must have exactly one output, has {[o.name for o in g.output]}"
            )
        self.input = inputs[0]
        elem = self.input.type.tensor_type.elem_type
        if elem != onnx.TensorProto.FLOAT:
            raise OnnxImportError(
                f"{source}: the input {self.input.name!r} is "
                f"{type_name(elem)}; the importer reads "
                f"FLOAT inputs (integers held in float32, as exported)"
            )
        self.output = g.output[0].name
        check_input_shape(self.input, source)
        self.meta = {p.key: p.value for p in model.metadata_props}
        self.opset = max(
            (o.version for o in model.opset_import if (o.domain or "") in DEFAULT_DOMAINS), default=0
        )
        self.record: dict = {"dropped": []}

    # -- look-ups ------------------------------------------------------------------------------
    def producer(self, name: str):
        for n in self.nodes:
            if name in n.output:
                return n
        return None

    def consumers(self, name: str) -> list:
        return [n for n in self.nodes if name in n.input]

    def const(self, name: str):
        return self.consts.get(name)

    def input_shape(self) -> list:
        """Dims of the data input: ints, or None for symbolic/unknown dims (only the batch,
        after check_input_shape)."""
        return _dims(self.input)

    # -- edits ------------------------------------------------------------------------------------
    def remove(self, node) -> None:
        self.nodes = [n for n in self.nodes if n is not node]

    def bypass(self, node, keep_input: str) -> None:
        """Remove a one-output node, making its consumers (or the graph output) read
        `keep_input` instead."""
        out = node.output[0]
        for n in self.consumers(out):
            for i, name in enumerate(n.input):
                if name == out:
                    n.input[i] = keep_input
        if self.output == out:
            self.output = keep_input
        self.remove(node)

    def sole_consumer(self, name: str, what: str):
        """The one node reading `name`; a branch or a dead end is an error."""
        cons = self.consumers(name)
        if len(cons) != 1:
            prod = self.producer(name)
            where = node_label(prod) if prod is not None else f"tensor {name!r}"
            if not cons:
                raise OnnxImportError(f"{where}: its output {name!r} is not used, expected {what}")
            raise OnnxImportError(
                f"{where}: its output {name!r} feeds {len(cons)} nodes "
                f"({', '.join(node_label(c) for c in cons)}); only a chain of "
                f"layers is supported"
            )
        return cons[0]
