"""Import passes: small rewrites of an ONNX graph (models.onnx.graph.Graph) that bring every file
to the plain chain of layer patterns that models/onnx/importer.py lowers to the network description.

In order (:data:`PIPELINE`):

1. ``name_nodes``            give unnamed nodes a name so errors can point at them
2. ``inline_constants``      Constant nodes become constant tensors
3. ``fold_constant_casts``   a Cast of a constant tensor becomes the constant in the target type
                             (our exporter stores +-1 weights as int8 and casts them to float)
4. ``fold_shape_arithmetic`` Shape/Gather/Unsqueeze/Concat/... subgraphs that compute a Reshape
                             target (PyTorch's dynamic batch) are evaluated with the batch as a
                             symbol; the Reshape gets a constant target ([0, ...] for the batch)
5. ``remove_identities``     Identity and Dropout (inference) are bypassed
6. ``strip_output_softmax``  a final LogSoftmax/Softmax is dropped (scores are pre-softmax),
                             recorded in ``record["dropped"]``
7. ``absorb_input_reshape``  a Reshape of the flat input to [N, C, H, W] becomes the network's
                             input shape; the ONNX input shape is recorded for callers
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper

from models.onnx.graph import (
    TENSOR_TYPES,
    Graph,
    OnnxImportError,
    attrs,
    int_list,
    node_error,
    node_label,
    tensor_array,
)

BATCH = "N"  # symbol for the batch dimension inside folded shape arithmetic
MAX_SHAPE_VALUES = 64  # a constant read by shape arithmetic holds at most this many values


def name_nodes(g: Graph) -> None:
    used = {n.name for n in g.nodes if n.name}
    for i, n in enumerate(g.nodes):
        if not n.name:
            name = f"{n.op_type}_{i}"
            while name in used:
                name += "_"
            n.name = name
            used.add(name)


def inline_constants(g: Graph) -> None:
    for n in list(g.nodes):
        if n.op_type != "Constant":
            continue
        a = attrs(n)
        if "value" in a:
            val = tensor_array(a["value"], f"{node_label(n)}: value")
        elif "value_float" in a:
            val = np.array(a["value_float"], dtype=np.float32)
        elif "value_floats" in a:
            val = np.array(a["value_floats"], dtype=np.float32)
        elif "value_int" in a:
            val = np.array(a["value_int"], dtype=np.int64)
        elif "value_ints" in a:
            val = np.array(a["value_ints"], dtype=np.int64)
        else:
            raise node_error(n, f"unsupported Constant attribute(s) {sorted(a)}")
        g.consts[n.output[0]] = val
        g.remove(n)


def fold_constant_casts(g: Graph) -> None:
    for n in list(g.nodes):
        if n.op_type != "Cast" or g.const(n.input[0]) is None:
            continue
        to = attrs(n).get("to")
        if to not in TENSOR_TYPES:  # strings, complex and packed types have no numpy twin
            raise node_error(n, f"Cast to unsupported type {to!r}")
        dtype = helper.tensor_dtype_to_np_dtype(to)
        g.consts[n.output[0]] = g.const(n.input[0]).astype(dtype)
        g.remove(n)


# -- shape arithmetic ------------------------------------------------------------------------------
_SHAPE_OPS = {"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Identity"}


def _axes(a: dict, vals: list):
    """Squeeze/Unsqueeze axes: the attribute (opset < 13) or the second input."""
    if "axes" in a:
        return list(a["axes"])
    if len(vals) > 1 and vals[1] is not None:
        return [int(v) for v in np.atleast_1d(vals[1])]
    return None


def _eval_shape_op(node, vals: list, shapes: dict):
    """Evaluate one shape-arithmetic node on object arrays (ints and the batch symbol). numpy
    errors (an index or axis out of range, mismatched pieces, the batch symbol where a number
    is needed) are the node's: it cannot be evaluated as written."""
    try:
        return _eval_shape_op_np(node, vals, shapes)
    except OnnxImportError:
        raise
    except (IndexError, ValueError, TypeError, OverflowError) as exc:
        raise node_error(node, f"cannot evaluate this shape arithmetic: {exc}") from None


def _eval_shape_op_np(node, vals: list, shapes: dict):
    op, a = node.op_type, attrs(node)
    if op == "Shape":
        dims = shapes.get(node.input[0])
        if dims is None:
            raise node_error(node, f"cannot fold the shape of {node.input[0]!r} (unknown)")
        start, end = a.get("start", 0), a.get("end", None)
        return np.array(dims[start:end], dtype=object)
    x = vals[0]
    if x is None:
        raise ValueError("its data input is missing")
    if op in ("Cast", "Identity"):
        return x
    if op == "Gather":
        idx = vals[1]
        return np.take(x, np.asarray(idx, dtype=np.int64), axis=a.get("axis", 0))
    if op == "Unsqueeze":
        out = x
        for ax in sorted(_axes(a, vals) or []):
            out = np.expand_dims(out, ax)
        return out
    if op == "Squeeze":
        ax = _axes(a, vals)
        return np.squeeze(x, axis=tuple(ax) if ax else None)
    if op == "Concat":
        return np.concatenate([np.atleast_1d(v) for v in vals], axis=a.get("axis", 0))
    if op == "Slice":
        if len(vals) < 3 or vals[1] is None or vals[2] is None:
            raise ValueError("Slice needs starts and ends")
        starts, ends = (np.atleast_1d(v) for v in vals[1:3])
        axes = np.atleast_1d(vals[3]) if len(vals) > 3 and vals[3] is not None else [0]
        steps = np.atleast_1d(vals[4]) if len(vals) > 4 and vals[4] is not None else [1]
        sl = [slice(None)] * x.ndim
        for s, e, ax, st in zip(starts, ends, axes, steps, strict=True):
            sl[int(ax)] = slice(int(s), int(e), int(st))
        return x[tuple(sl)]
    raise node_error(node, "unsupported shape operator")


def fold_shape_arithmetic(g: Graph) -> None:
    try:
        inferred = onnx.shape_inference.infer_shapes(g.model)
        infos = list(inferred.graph.value_info) + list(inferred.graph.input)
    except Exception:  # noqa: BLE001 - without inference only the graph input's shape is known
        infos = list(g.model.graph.input)
    shapes = {}
    for vi in infos:
        dims = vi.type.tensor_type.shape.dim
        shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else BATCH for d in dims]
    known: dict[str, np.ndarray] = {}
    folded = []
    for n in g.nodes:
        if n.op_type not in _SHAPE_OPS:
            continue
        ins = []
        ok = True
        for name in n.input:
            if not name:
                ins.append(None)
            elif name in known:
                ins.append(known[name])
            elif name in g.consts and np.size(g.consts[name]) <= MAX_SHAPE_VALUES:
                ins.append(np.asarray(g.consts[name]).astype(object))
            elif n.op_type == "Shape":
                ins.append(None)
            else:
                ok = False
        if not ok:
            continue
        known[n.output[0]] = _eval_shape_op(n, ins, shapes)
        folded.append(n)
    if not folded:
        return
    for n in folded:
        g.remove(n)
    for name, val in known.items():
        users = g.consumers(name)
        for u in users:
            if u.op_type != "Reshape" or len(u.input) < 2 or u.input[1] != name:
                raise node_error(u, f"uses the folded shape value {name!r} in an unsupported way")
        if users:
            g.consts[name] = _reshape_target(users[0], name, val)


def _reshape_target(user, name: str, val) -> np.ndarray:
    """A folded shape value as a Reshape target: a 1-D list of integers, the batch symbol
    (only first) as 0, which makes Reshape copy the batch dimension."""
    flat = np.atleast_1d(val)
    if flat.ndim != 1 or flat.size > MAX_SHAPE_VALUES:
        raise node_error(user, f"its shape {name!r} has shape {list(flat.shape)}, not a list")
    target = []
    for i, v in enumerate(flat):
        if isinstance(v, str):
            if i != 0:
                raise OnnxImportError(
                    f"shape value {name!r} puts the batch at position "
                    f"{i}; only a leading batch dimension is supported"
                )
            target.append(0)
        else:
            target.append(v)
    return np.array(int_list(user, np.array(target, dtype=np.float64), f"shape {name!r}"), dtype=np.int64)


def remove_identities(g: Graph) -> None:
    for n in list(g.nodes):
        if n.op_type in ("Identity", "Dropout"):
            if n.op_type == "Dropout":
                _check_inference_dropout(g, n)
            g.bypass(n, n.input[0])


def _check_inference_dropout(g: Graph, n) -> None:
    """A Dropout is an identity only in inference: no used mask, no training_mode input that
    may be true (opset 12 on)."""
    if len([o for o in n.output if o]) > 1 and g.consumers(n.output[1]):
        raise node_error(n, "the Dropout mask output is used")
    if len(n.input) > 2 and n.input[2]:
        mode = g.const(n.input[2])
        if mode is None or np.size(mode) != 1 or bool(np.asarray(mode).ravel()[0]):
            raise node_error(n, f"training_mode {n.input[2]!r} is not a constant false")


def strip_output_softmax(g: Graph) -> None:
    while True:
        prod = g.producer(g.output)
        if prod is None or prod.op_type not in ("LogSoftmax", "Softmax"):
            return
        axis = attrs(prod).get("axis", -1 if g.opset >= 13 else 1)
        if axis not in (1, -1):
            raise node_error(prod, f"softmax over axis {axis}; only the class axis 1 is dropped")
        g.record["dropped"].append(f"{prod.name} ({prod.op_type})")
        g.bypass(prod, prod.input[0])


def absorb_input_reshape(g: Graph) -> None:
    dims = g.input_shape()
    g.record["onnx_input_shape"] = [None] + list(dims[1:])
    cons = g.consumers(g.input.name)
    if len(cons) == 1 and cons[0].op_type == "Reshape":
        r = cons[0]
        target = g.const(r.input[1]) if len(r.input) > 1 else None
        if target is None:
            raise node_error(r, "the input reshape target is not constant")
        target = int_list(r, target, "the input reshape target")
        keeps_batch = (0, -1) if not attrs(r).get("allowzero", 0) else (-1,)
        if len(target) >= 2 and target[0] in keeps_batch and all(v > 0 for v in target[1:]):
            size = math.prod(target[1:])
            known = [d for d in dims[1:]]
            if math.prod(known) != size:
                raise node_error(r, f"reshapes an input of {known} to {target[1:]}")
            g.record["net_input_shape"] = tuple(target[1:])
            g.record["first_tensor"] = r.output[0]
            g.remove(r)
            return
    if any(d is None for d in dims[1:]) or len(dims) < 2:
        raise OnnxImportError(
            f"{g.source}: input {g.input.name!r} has shape {dims}; the "
            f"importer needs [N, C, H, W] (or [N, K]) with known sizes"
        )
    g.record["net_input_shape"] = tuple(dims[1:])
    g.record["first_tensor"] = g.input.name


PIPELINE = [
    name_nodes,
    inline_constants,
    fold_constant_casts,
    fold_shape_arithmetic,
    remove_identities,
    strip_output_softmax,
    absorb_input_reshape,
]


def run_passes(g: Graph, passes=PIPELINE) -> Graph:
    for p in passes:
        p(g)
    return g
