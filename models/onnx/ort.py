"""onnxruntime as the reference evaluator of ONNX files, and the helpers that feed it.

The reference session evaluates the graph *as written*: graph optimizations are off, because
onnxruntime's default fusions (e.g. a Conv followed by BatchNormalization becomes one Conv with
rescaled float weights) change float rounding, and for inputs within float32 rounding of a
threshold the fused and unfused graphs can disagree. Every equality claim of the importer is
against this session; files written by models/onnx/export.py give the same numbers with the
default optimizations too (their thresholds sit half-way between integers).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper


def session(model, optimized: bool = False) -> ort.InferenceSession:
    """An onnxruntime CPU session; `optimized=False` (the reference) disables graph fusions."""
    so = ort.SessionOptions()
    so.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    if not isinstance(data, (bytes, str)):
        data = str(data)
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def with_outputs(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """A copy of `model` that also returns the tensors `names` (typed by shape inference;
    float where inference cannot tell)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(m)
        types = {v.name: v.type.tensor_type.elem_type for v in inferred.graph.value_info}
    except Exception:  # noqa: BLE001 - inference is only a convenience here
        types = {}
    have = {o.name for o in m.graph.output}
    for n in names:
        if n not in have:
            m.graph.output.append(helper.make_tensor_value_info(n, types.get(n) or TensorProto.FLOAT, None))
            have.add(n)
    return m


def onnx_input(net, x) -> np.ndarray:
    """A golden-convention batch [N, *net.input_shape] as the float32 tensor the ONNX file takes
    (its recorded input shape, e.g. [N, 784] for the HEP-BNN files; NCHW-flat order)."""
    a = np.asarray(x)
    shape = net.meta.get("onnx", {}).get("input_shape") if hasattr(net, "meta") else None
    if shape is not None:
        a = a.reshape(a.shape[0], *shape[1:])
    return a.astype(np.float32)


def run(model, net, x, outputs: list[str] | None = None, optimized: bool = False) -> list:
    """Run `model` on the golden-convention batch `x`; returns the graph output(s) or the named
    tensors."""
    if outputs:
        model = with_outputs(model if isinstance(model, onnx.ModelProto) else onnx.load(model), outputs)
    sess = session(model, optimized)
    feed = {sess.get_inputs()[0].name: onnx_input(net, x)}
    return sess.run(outputs or None, feed)


def layer_outputs(model, net, x, optimized: bool = False) -> list[np.ndarray]:
    """ORT's value of the tensor that corresponds to each golden layer output."""
    names = net.meta["onnx"]["layer_outputs"]
    return run(model, net, x, outputs=names, optimized=optimized)
