"""Model cards: the JSON written next to every trained ONNX file (models/zoo/*.json)."""
from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

import numpy as np
import onnx
import torch

from models import golden
from models.datasets import load_dataset
from models.onnx.export import export_onnx
from models.onnx.ort import run as ort_run


def _pct(x: float) -> float:
    return round(100.0 * float(x), 2)


def _compile_summary(net) -> dict:
    from fpga.arch import ArrayConfig
    from fpga.compiler import CompileError, compile_network
    try:
        prog = compile_network(net, ArrayConfig())
    except CompileError as exc:
        return {"array": "default ArrayConfig (8x8)", "error": str(exc)}
    return {"array": "default ArrayConfig (8x8)", "instructions": len(prog.instructions),
            "weight_words": int(prog.wmem.shape[0]), "biases": int(prog.bmem.shape[0]),
            "dbuf_entries": int(prog.dbuf_used), "pbuf_entries": int(prog.pbuf_used)}


def write_model_and_card(result, out: Path, command: str) -> dict:
    """Export `result.net` to `out` (.onnx), check onnxruntime == golden on the test split, and
    write the card to `out` with suffix .json. Returns the card."""
    out = Path(out)
    model = export_onnx(result.net, out)
    test = load_dataset(result.settings["data"], "test")
    ref = golden.run(result.net, test.images)
    ort_scores = ort_run(model, result.net, test.images)[0]
    agree = bool(np.array_equal(ort_scores, ref.scores.astype(np.float32)))
    acc = result.accuracy
    card = {
        "name": result.net.name,
        "family": result.family,
        "file": out.name,
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
        "dataset": {"spec": result.settings["data"], "test_images": len(test),
                    "input": f"uint8 pixels {list(result.net.input_shape)} (NCHW)"},
        "architecture": {"summary": result.net.summary().splitlines(), "config": result.config},
        "accuracy_percent": {
            "quantized_test": _pct(acc["quantized_test"]),
            "float_twin_test": _pct(acc["float_test"]),
            "gap_points": round(_pct(acc["float_test"]) - _pct(acc["quantized_test"]), 2),
            "quantized_val": _pct(acc["quantized_val"]),
            "float_twin_val": _pct(acc["float_val"]),
            "golden_test": _pct(acc["golden_test"]),
        },
        "exactness": {"onnxruntime_equals_golden_on_test_scores": agree,
                      "scores": "pre-softmax integers: the last layer's int32 outputs"},
        "training": {"command": command, "seed": result.settings["seed"],
                     "seconds": round(result.seconds, 1),
                     "settings": result.settings,
                     "machine": f"{platform.machine()}, torch {torch.__version__}, "
                                f"{result.settings['threads']} thread(s); times measured on a "
                                f"shared 2-core machine (pessimistic)"},
        "onnx": {"opset": model.opset_import[0].version, "ir_version": model.ir_version,
                 "nodes": len(model.graph.node), "bytes": out.stat().st_size},
    }
    if result.family == "sac":
        card["column_combining"] = result.extra.get("column_combining")
        card["qat_stages"] = result.extra.get("stages")
        card["activation_scales"] = result.extra.get("activation_scales")
        card["compile"] = _compile_summary(result.net)
    if not agree:
        raise RuntimeError(f"{out}: onnxruntime scores differ from the golden executor")
    out.with_suffix(".json").write_text(json.dumps(card, indent=2) + "\n")
    onnx.checker.check_model(str(out))
    return card
