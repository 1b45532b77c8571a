"""ONNX in and out of the network description (models/ir.py).

    from models.onnx import import_onnx, export_onnx, load_network
    net = import_onnx("model.onnx")          # an ir.Network, exact (docs/models.md)
    export_onnx(net, "out.onnx")              # an ONNX graph onnxruntime agrees with

A transformation pipeline in the style of qonnx: `graph` wraps the ONNX graph, `passes`
normalises it (constants, shape arithmetic, identities, reshapes, softmax), `steps` reads
integer thresholds off BatchNormalization/comparison chains, `ranges` propagates integer value
ranges, `importer` lowers the result to layers, `export` goes the other way and `ort` runs
models in onnxruntime for the equality checks. `input_scale` is the factor on 0..255 pixels a
model's input expects (metadata `workbench.input_scale`; no onnx import).

Importing this package does not import `onnx` itself: the names below load their modules on
first use, so code that only passes ir.Network objects around (the GPU path on a machine with
numpy alone) can call :func:`load_network`.
"""

from __future__ import annotations

import importlib

from models import ir

_LAZY = {
    "import_onnx": "importer",
    "export_onnx": "export",
    "ExportError": "export",
    "OnnxImportError": "graph",
}

__all__ = sorted(_LAZY) + ["load_network"]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f"models.onnx.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'models.onnx' has no attribute {name!r}")


def load_network(net) -> ir.Network:
    """An ir.Network as is; a path to an .onnx file or an onnx.ModelProto through
    :func:`import_onnx` (imports onnx only then)."""
    if isinstance(net, ir.Network):
        return net
    from models.onnx.importer import import_onnx  # noqa: PLC0415

    return import_onnx(str(net) if not hasattr(net, "graph") else net)
