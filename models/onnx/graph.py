"""A small mutable view of an ONNX graph for the import passes (models/onnx/passes.py):
nodes in topological order, constant tensors as numpy arrays, producer/consumer look-ups, and
the error type that names the offending node."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper


class OnnxImportError(ValueError):
    """An ONNX file the importer cannot represent exactly (names the node and the value)."""


def node_label(node) -> str:
    return f"node {node.name!r} ({node.op_type})" if node.name else f"a {node.op_type} node"


def node_error(node, msg: str) -> OnnxImportError:
    return OnnxImportError(f"{node_label(node)}: {msg}")


def attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def load_model(path_or_model) -> tuple[onnx.ModelProto, str]:
    """The model and a description of where it came from. Unreadable files, and models that
    onnx.checker rejects, raise OnnxImportError naming the file and the problem."""
    if isinstance(path_or_model, onnx.ModelProto):
        model, source = path_or_model, path_or_model.graph.name or "<model>"
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
            raise OnnxImportError(f"{path}: not a readable ONNX file ({type(exc).__name__}: "
                                  f"{exc})") from None
        source = str(path)
    if not model.graph.node:
        raise OnnxImportError(f"{source}: not an ONNX model with a graph (no nodes)")
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid"
        raise OnnxImportError(f"{source}: onnx.checker rejects the model: {first}") from None
    return model, source


class Graph:
    def __init__(self, model: onnx.ModelProto, source: str = "<model>"):
        self.model = model
        self.source = source
        g = model.graph
        self.nodes = [n for n in g.node]
        self.consts: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t)
                                              for t in g.initializer}
        inputs = [i for i in g.input if i.name not in self.consts]
        if len(inputs) != 1:
            raise OnnxImportError(f"{source}: the graph must have exactly one data input, has "
                                  f"{[i.name for i in inputs]}")
        if len(g.output) != 1:
            raise OnnxImportError(f"{source}: the graph must have exactly one output, has "
                                  f"{[o.name for o in g.output]}")
        self.input = inputs[0]
        elem = self.input.type.tensor_type.elem_type
        if elem != onnx.TensorProto.FLOAT:
            raise OnnxImportError(f"{source}: the input {self.input.name!r} is "
                                  f"{onnx.TensorProto.DataType.Name(elem)}; the importer reads "
                                  f"FLOAT inputs (integers held in float32, as exported)")
        self.output = g.output[0].name
        self.meta = {p.key: p.value for p in model.metadata_props}
        self.opset = {o.domain or "": o.version for o in model.opset_import}.get("", 0)
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
        """Dims of the data input: ints, or None for symbolic/unknown dims."""
        dims = self.input.type.tensor_type.shape.dim
        return [d.dim_value if d.HasField("dim_value") else None for d in dims]

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
            raise OnnxImportError(f"{where}: its output {name!r} feeds {len(cons)} nodes "
                                  f"({', '.join(node_label(c) for c in cons)}); only a chain of "
                                  f"layers is supported")
        return cons[0]
