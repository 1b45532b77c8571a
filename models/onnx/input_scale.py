"""The input scale of a model: the factor its input expects on the data sets' 0..255 pixels.

Every data set delivers integer pixels p in 0..255 (models/datasets.py: its own quantization,
e.g. digits' 0..16 gray levels to 0..255, happens first). A model trained on other numbers, e.g.
HEP-BNN's Fashion model on pixels x 255, says so with an input scale S; the network's input is
then

    x = floor(p * S + 1/2)        (p * S rounded half up; exact, no rounding, for a whole S)

an integer in 0..:func:`input_range_for` (S)[1], and the network is imported for that range
(its steps exact for every such x). S travels in the ONNX metadata as
:data:`META_SCALE` (export writes it, import reads it; the compare job's ``--input-scale``
overrides it). docs/conventions.md ("Network input") and docs/models.md state the convention.

The SAC array takes 0..255 data only, so a whole scale S > 1 in front of an integer-input first
convolution followed by a step is folded into those two layers (:func:`fold_input_scale`):
conv(S p) + b = S conv(p) + b, so the step x >= t becomes conv(p) >= ceil((t - b) / S) (x <= t:
floor), exact for every pixel image. The folded network takes the pixels themselves on every
path. This module imports numpy and the network description only (no onnx).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from models import ir
from models.checks import INT32_MAX

META_SCALE = "workbench.input_scale"
PIXEL_MAX = 255
MAX_INPUT_SCALE = INT32_MAX // PIXEL_MAX  # 8,421,504: 255 * S still fits int32


def check_scale(value, what: str = "input scale"):
    """`value` as an input scale: a positive finite number at most MAX_INPUT_SCALE, returned as
    an int when it is whole (255, not 255.0); else ValueError naming `what`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{what} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v <= 0 or v > MAX_INPUT_SCALE:
        raise ValueError(
            f"{what} must be a positive finite number at most {MAX_INPUT_SCALE:,}, got {value!r}"
        )
    return int(v) if v.is_integer() else v


def _top(scale) -> int:
    """The largest scaled pixel, floor(255 * S + 1/2)."""
    return math.floor(PIXEL_MAX * scale + 0.5)


def input_range_for(scale) -> tuple[int, int]:
    """The integer input range the network is imported for: (0, 255 S rounded), or (0, 255)
    (uint8 input) when that is no more than 255."""
    return 0, max(PIXEL_MAX, _top(check_scale(scale)))


def scale_pixels(pixels, scale) -> np.ndarray:
    """floor(p * S + 1/2) of integer pixels 0..255: uint8 when every result fits 0..255 (S at
    most about 1), else int32 (the input kinds of a network imported with the same S)."""
    s = check_scale(scale)
    p = np.asarray(pixels)
    if p.dtype.kind not in "iu":
        raise ValueError(f"pixels must be integers, got dtype {p.dtype}")
    if p.size and (p.min() < 0 or p.max() > PIXEL_MAX):
        raise ValueError(f"pixels must lie in 0..{PIXEL_MAX}, got {p.min()}..{p.max()}")
    if isinstance(s, int):
        x = p.astype(np.int64) * s
    else:
        x = np.floor(p.astype(np.float64) * s + 0.5).astype(np.int64)
    return x.astype(np.uint8 if input_range_for(s)[1] == PIXEL_MAX else np.int32)


def fold_input_scale(net: ir.Network, scale) -> ir.Network | None:
    """`net` (imported for input S * pixels) as a network on the pixels themselves, or None where
    the scale cannot be folded: S not a whole number above 1, or the network does not start with
    an IntConv2d and a Step. Layer 0 keeps its weights with bias 0, layer 1's thresholds become
    ceil((t - b) / S) (direction +1) or floor((t - b) / S) (-1); the meta records
    ``input_scale_folded`` = S instead of ``input_scale``."""
    s = check_scale(scale)
    if not isinstance(s, int) or s == 1 or len(net.layers) < 2 or net.input_kind != "int":
        return None
    conv, step = net.layers[:2]
    if not (isinstance(conv, ir.IntConv2d) and isinstance(step, ir.Step)):
        return None
    lo, hi = net.meta.get("input_range", (0, _top(s)))
    if lo > 0 or hi < _top(s):  # its steps are exact only inside the range it was imported for
        return None
    num = step.threshold.astype(np.int64) - conv.bias.astype(np.int64)
    up = step.direction == 1
    threshold = np.where(up, -((-num) // s), num // s)
    layers = [
        ir.IntConv2d(weight=conv.weight, bias=np.zeros_like(conv.bias), padding=conv.padding, name=conv.name),
        ir.Step(threshold=threshold, direction=step.direction, name=step.name),
        *net.layers[2:],
    ]
    meta = {k: v for k, v in net.meta.items() if k != "input_scale"}
    meta.update(input_range=[0, PIXEL_MAX], input_scale_folded=s)
    return ir.Network(net.input_shape, "uint8", layers, name=net.name, meta=meta)
