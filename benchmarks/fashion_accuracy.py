#!/usr/bin/env python3
"""Test accuracy on the real Fashion-MNIST (10,000 t10k images, Debian package
dataset-fashion-mnist) of HEP-BNN's own trained model and of this project's zoo models.

HEP-BNN's model (tests/fixtures/hepbnn_fashion.onnx) is evaluated as published, nothing tuned,
under three input conventions: raw pixels 0..255, and pixels x 255 and x 256. Its first batch
norm's running statistics are those of its first convolution on pixels scaled by about 256
(printed: the fitted scale), and with raw pixels its first-layer thresholds (|mean| up to about
1.7e5) are never crossed. Each convention runs through onnxruntime (the file as written) and
through the golden executor (imported with the matching integer input range); the two must
agree on every prediction.

The zoo models (bnn_fashion, sac_fashion) run through the golden executor on the same images;
their cards record the same numbers at training time.

    .venv/bin/python benchmarks/fashion_accuracy.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from models import zoo
from models.datasets import DatasetError, load_dataset, load_for_network
from models.numerics.bnn import argmax
from models.onnx.importer import import_onnx
from models.onnx.ort import session
from models.train.recipes import golden_scores
from safeio import write_text_atomic

ROOT = Path(__file__).resolve().parents[1]
HEPBNN = ROOT / "tests" / "fixtures" / "hepbnn_fashion.onnx"
SCALES = (1, 255, 256)


def first_bn_scale(train_images: np.ndarray) -> float:
    """The input scale s that makes the first convolution's output statistics on s * pixels
    match the first batch norm's running variance (least squares over channels)."""
    import onnx
    import torch
    from onnx import numpy_helper

    model = onnx.load(str(HEPBNN))
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    bn = next(n for n in model.graph.node if n.op_type == "BatchNormalization")
    x = torch.from_numpy(train_images.astype(np.float32))
    w = torch.from_numpy(init[conv.input[1]].copy())
    y = torch.nn.functional.conv2d(x, w, padding=1).double()
    var = y.var(dim=(0, 2, 3)).numpy()
    running_var = init[bn.input[4]].astype(np.float64)
    return float(np.sqrt((var @ running_var) / (var @ var)))


def hepbnn(test) -> list[dict]:
    sess = session(HEPBNN)
    name = sess.get_inputs()[0].name
    flat = test.images.reshape(len(test), -1).astype(np.float32)
    rows = []
    for s in SCALES:
        ort_pred = np.concatenate(
            [  # in chunks: 10,000 images at once need ~8 GB
                np.argmax(sess.run(None, {name: flat[i : i + 1000] * s})[0], axis=1)
                for i in range(0, len(flat), 1000)
            ]
        )
        net = import_onnx(HEPBNN, input_range=None if s == 1 else (0, 255 * s))
        x = test.images.astype(np.int64 if s > 1 else np.uint8) * s
        x = x.reshape(len(test), *net.input_shape).astype(np.uint8 if s == 1 else np.int32)
        gold = argmax(golden_scores(net, x).reshape(len(test), -1))
        rows.append(
            {
                "input": "pixels 0..255" if s == 1 else f"pixels x {s}",
                "onnxruntime": float((ort_pred == test.labels).mean()),
                "golden": float((gold == test.labels).mean()),
                "golden_equals_onnxruntime": bool(np.array_equal(gold, ort_pred)),
                "distinct_predictions": int(np.unique(ort_pred).size),
            }
        )
    return rows


def zoo_models() -> list[dict]:
    rows = []
    for name in ("bnn_fashion", "sac_fashion"):
        if name not in zoo.names():
            continue
        net = zoo.load(name)
        x, labels = load_for_network("fashion", net, "test")
        t0 = time.perf_counter()
        pred = argmax(golden_scores(net, x).reshape(len(x), -1))
        card = zoo.card(name)["accuracy_percent"]
        rows.append(
            {
                "model": name,
                "golden": float((pred == labels).mean()),
                "card_golden_test_percent": card["golden_test"],
                "card_float_twin_test_percent": card["float_twin_test"],
                "golden_s": time.perf_counter() - t0,
            }
        )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    try:
        test = load_dataset("fashion", "test")
        train = load_dataset("fashion", "train")
    except DatasetError as exc:
        print(f"fashion_accuracy: {exc}", file=sys.stderr)
        return 2
    scale = first_bn_scale(train.images[:20000])
    print(f"Fashion-MNIST test set: {len(test)} images")
    print(
        f"HEP-BNN fixture {HEPBNN.name}: input scale fitted to its first batch norm's "
        f"running variance (20,000 training images): {scale:.1f}"
    )
    rows = hepbnn(test)
    for r in rows:
        print(
            f"  {r['input']:14s} onnxruntime {100 * r['onnxruntime']:6.2f}%  golden "
            f"{100 * r['golden']:6.2f}%  same predictions: {r['golden_equals_onnxruntime']}  "
            f"distinct predicted classes: {r['distinct_predictions']}"
        )
    zoo_rows = zoo_models()
    for r in zoo_rows:
        print(
            f"zoo {r['model']}: golden {100 * r['golden']:.2f}% (card: golden "
            f"{r['card_golden_test_percent']:.2f}%, float twin "
            f"{r['card_float_twin_test_percent']:.2f}%), {r['golden_s']:.1f} s"
        )
    if args.json:
        write_text_atomic(
            args.json,
            json.dumps({"hepbnn_input_scale": scale, "hepbnn": rows, "zoo": zoo_rows}, indent=1) + "\n",
        )
    bad = [r for r in rows if not r["golden_equals_onnxruntime"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
