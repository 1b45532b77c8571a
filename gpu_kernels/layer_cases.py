"""Single-layer networks and inputs that exercise one kernel: the bit-exactness matrix of the
tests (tests/test_gpu_kernels.py, on the emulation and on a GPU through CuPy) and of
gpu_kernels.selfcheck. Expected values always come from the golden executor.

Channel variants, for word size B: "multiple" = 2B channels (whole words), "partial" = B + 7
(a partly used last word), and, for the popcount kernels, "few" = 5 (less than one word).
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np

from models import golden, ir
from models.checks import INT32_MAX, INT32_MIN

LAYER_KINDS = (
    "int_conv_u8",
    "int_conv_i32",
    "bin_conv",
    "step_spatial",
    "step_flat",
    "maxpool_int",
    "maxpool_packed",
    "flatten_int",
    "flatten_packed",
    "dense",
)
PADDED = ("int_conv_u8", "int_conv_i32", "bin_conv")  # take padding 0 and 1
FEW_CHANNELS = ("bin_conv", "dense", "step_spatial", "step_flat")  # also test < 1 word
BATCHES = (1, 2, 5)
WORD_BITS = (32, 64)


def channels(variant: str, word_bits: int) -> int:
    return {"multiple": 2 * word_bits, "partial": word_bits + 7, "few": 5}[variant]


def case_seed(*params) -> int:
    """A fixed seed per parameter combination (stable across runs and machines)."""
    return zlib.crc32(repr(params).encode()) & 0x7FFFFFFF


def _pm1(rng, *shape):
    return np.where(rng.random(shape) < 0.5, -1, 1).astype(np.int8)


def make_case(kind: str, word_bits: int, variant: str, pad: int, batch: int, seed: int):
    """(network, input batch) for one layer kind; the first (only) layer is the one tested."""
    rng = np.random.default_rng(seed)
    c = channels(variant, word_bits)
    f = 37  # output channels: not a multiple of 32 or a warp
    h, w = 5, 6
    if kind in ("int_conv_u8", "int_conv_i32"):
        cin = c if variant == "multiple" else 3
        layer = ir.IntConv2d(weight=_pm1(rng, f, cin, 3, 3), bias=rng.integers(-9, 10, f), padding=pad)
        if kind == "int_conv_u8":
            net = ir.Network((cin, h, w), "uint8", [layer])
            x = rng.integers(0, 256, (batch, cin, h, w)).astype(np.uint8)
        else:
            net = ir.Network((cin, h, w), "int", [layer])
            x = rng.integers(-1000, 1001, (batch, cin, h, w)).astype(np.int32)
    elif kind == "bin_conv":
        layer = ir.BinConv2d(weight=_pm1(rng, f, c, 3, 3), bias=rng.integers(-9, 10, f), padding=pad)
        net = ir.Network((c, h, w), "binary", [layer])
        x = _pm1(rng, batch, c, h, w)
    elif kind in ("step_spatial", "step_flat"):
        thr = rng.integers(-40, 41, c).astype(np.int64)
        d = _pm1(rng, c)
        # thresholds beyond int32: always on / never on, in both directions
        thr[:4] = [1 << 40, -(1 << 40), 1 << 40, -(1 << 40)]
        d[:4] = [1, 1, -1, -1]
        shape = (c, h, w) if kind == "step_spatial" else (c,)
        net = ir.Network(shape, "int", [ir.Step(threshold=thr, direction=d)])
        x = rng.integers(-50, 51, (batch, *shape)).astype(np.int32)
        x.reshape(batch, c, -1)[:, 4:, 0] = thr[4:]  # exactly at the threshold
    elif kind == "maxpool_int":
        net = ir.Network((c, 7, 5), "int", [ir.MaxPool2d()])  # odd sizes: floor mode
        x = rng.integers(INT32_MIN, INT32_MAX, (batch, c, 7, 5), dtype=np.int64).astype(np.int32)
    elif kind == "maxpool_packed":
        net = ir.Network((c, 7, 5), "binary", [ir.MaxPool2d()])
        x = np.where(rng.random((batch, c, 7, 5)) < 0.75, -1, 1).astype(np.int8)  # mostly -1
    elif kind == "flatten_int":
        net = ir.Network((c, 3, 5), "int", [ir.Flatten()])
        x = rng.integers(-1000, 1001, (batch, c, 3, 5)).astype(np.int32)
    elif kind == "flatten_packed":
        net = ir.Network((c, 3, 5), "binary", [ir.Flatten()])
        x = _pm1(rng, batch, c, 3, 5)
    elif kind == "dense":
        net = ir.Network(
            (c,), "binary", [ir.BinDense(weight=_pm1(rng, 70, c), bias=rng.integers(-9, 10, 70))]
        )
        x = _pm1(rng, batch, c)
    else:
        raise ValueError(f"unknown layer kind {kind!r}")
    return net, x


def all_cases(configs):
    """Every (kind, config, word_bits, variant, pad, batch) of the exactness matrix."""
    out = []
    for kind, config, bits in itertools.product(LAYER_KINDS, configs, WORD_BITS):
        variants = ("multiple", "partial") + (("few",) if kind in FEW_CHANNELS else ())
        pads = (0, 1) if kind in PADDED else (0,)
        for variant, pad, batch in itertools.product(variants, pads, BATCHES):
            out.append((kind, config, bits, variant, pad, batch))
    return out


# The fused IntConv2d + Step kernel (int_conv_step_pack): every int_conv case of the matrix
# (uint8 and int32 input, both word sizes, channel variants, padding 0/1, batches) with a Step
# after the conv; 37 filters, so the last output word is partial and a word's channels are not
# a multiple of a warp.
FUSED_KINDS = ("int_conv_u8", "int_conv_i32")


def make_fused_case(kind: str, word_bits: int, variant: str, pad: int, batch: int, seed: int):
    """(network IntConv2d + Step, input batch). The Step's thresholds are conv outputs of the
    batch itself (golden executor), so that sums equal to a threshold occur and both signs are
    common; the first four channels get thresholds beyond int32 (always / never on, both
    directions); directions are random."""
    net, x = make_case(kind, word_bits, variant, pad, batch, seed)
    rng = np.random.default_rng(seed + 1)
    sums = golden.run(net, x).outputs[0]  # [N, F, Ho, Wo]
    f = sums.shape[1]
    flat = sums.transpose(1, 0, 2, 3).reshape(f, -1)
    thr = flat[np.arange(f), rng.integers(0, flat.shape[1], f)].astype(np.int64)
    d = _pm1(rng, f)
    thr[:4] = [1 << 40, -(1 << 40), 1 << 40, -(1 << 40)]
    d[:4] = [1, 1, -1, -1]
    layers = [*net.layers, ir.Step(threshold=thr, direction=d)]
    return ir.Network(net.input_shape, net.input_kind, layers), x


def fused_cases(configs):
    """Every (kind, config, word_bits, variant, pad, batch) of the fused kernel's matrix."""
    return [c for c in all_cases(configs) if c[0] in FUSED_KINDS]


def bin_fused_cases(configs):
    """Every bin_conv case of the matrix (32/64-bit words, 2B, B + 7 and 5 input channels, 37
    filters, padding 0/1, batches): the fused BinConv2d + Step kernel's (bin_conv_step_pack),
    made by make_fused_case like the integer ones."""
    return [c for c in all_cases(configs) if c[0] == "bin_conv"]
