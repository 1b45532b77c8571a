"""Trained models shipped with the repository (digits, Fashion-MNIST): ONNX files plus JSON
cards.

    from models import zoo
    net = zoo.load("sac_digits")          # golden network description (via the ONNX importer)
    card = zoo.card("sac_digits")         # accuracy, float baseline, training command, seed
"""

from __future__ import annotations

import json
from pathlib import Path

ZOO_DIR = Path(__file__).resolve().parent
MODELS = ("bnn_digits", "sac_digits", "bnn_fashion", "sac_fashion")


def path(name: str) -> Path:
    p = ZOO_DIR / f"{name}.onnx"
    if not p.exists():
        raise FileNotFoundError(f"no zoo model {name!r} (have: {', '.join(names())})")
    return p


def names() -> list[str]:
    return sorted(p.stem for p in ZOO_DIR.glob("*.onnx"))


def card(name: str) -> dict:
    path(name)
    return json.loads((ZOO_DIR / f"{name}.json").read_text())


def load(name: str):
    """The zoo model as a golden network description (models/ir.py)."""
    from models.onnx.importer import import_onnx

    return import_onnx(path(name))
