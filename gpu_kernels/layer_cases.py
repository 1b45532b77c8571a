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

from gpu_kernels.kernel_table import BLOCKED_PX
from gpu_kernels.runner import Runner
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


def make_case(kind: str, word_bits: int, variant: str, pad: int, batch: int, seed: int, width: int = 6):
    """(network, input batch) for one layer kind; the first (only) layer is the one tested.
    `width`: the image width of the convs' cases (5 x width images)."""
    rng = np.random.default_rng(seed)
    c = channels(variant, word_bits)
    f = 37  # output channels: not a multiple of 32 or a warp
    h, w = 5, width
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


# The fused kernels (layer_ops.fused_op): every case of the matrix of the layer they start with
# (int_conv: uint8 and int32 input; bin_conv; dense), both word sizes, channel variants, padding
# 0/1, batches, with a Step after it (and for the convs, a 2x2 MaxPool2d after that in the
# pooled kernels' cases); 37 filters / 70 neurons, so the last output word is partial and a
# word's channels are not a multiple of a warp.
FUSED_KINDS = ("int_conv_u8", "int_conv_i32")


def make_fused_case(
    kind: str,
    word_bits: int,
    variant: str,
    pad: int,
    batch: int,
    seed: int,
    pool: bool = False,
    width: int = 6,
):
    """(network conv or dense + Step (+ MaxPool2d with `pool`), input batch). The Step's
    thresholds are sums of the batch itself (golden executor), so that sums equal to a threshold
    occur: a random one per channel, or with `pool` the one a fifth from the top (direction +1)
    or from the bottom (-1), so that a fifth of the Step's outputs are +1 and both signs stay
    common after the pooling's OR of four; the first four channels get thresholds beyond int32
    (always / never on, both directions); directions are random. `width`: as make_case's."""
    net, x = make_case(kind, word_bits, variant, pad, batch, seed, width)
    rng = np.random.default_rng(seed + 1)
    sums = golden.run(net, x).outputs[0]  # [N, F, Ho, Wo] or [N, F]
    f = sums.shape[1]
    flat = np.moveaxis(sums, 1, 0).reshape(f, -1)
    if pool:
        d = _pm1(rng, f)
        ranked = np.sort(flat, axis=1)
        at = np.where(d > 0, (4 * flat.shape[1]) // 5, flat.shape[1] // 5)
        thr = ranked[np.arange(f), at].astype(np.int64)
    else:
        thr = flat[np.arange(f), rng.integers(0, flat.shape[1], f)].astype(np.int64)
        d = _pm1(rng, f)
    thr[:4] = [1 << 40, -(1 << 40), 1 << 40, -(1 << 40)]
    d[:4] = [1, 1, -1, -1]
    layers = [*net.layers, ir.Step(threshold=thr, direction=d)] + ([ir.MaxPool2d()] if pool else [])
    return ir.Network(net.input_shape, net.input_kind, layers), x


def fused_cases(configs):
    """Every (kind, config, word_bits, variant, pad, batch) of the fused kernel's matrix."""
    return [c for c in all_cases(configs) if c[0] in FUSED_KINDS]


def bin_fused_cases(configs):
    """Every bin_conv case of the matrix (32/64-bit words, 2B, B + 7 and 5 input channels, 37
    filters, padding 0/1, batches): the fused BinConv2d + Step kernel's (bin_conv_step_pack),
    made by make_fused_case like the integer ones."""
    return [c for c in all_cases(configs) if c[0] == "bin_conv"]


def dense_fused_cases(configs):
    """Every dense case of the matrix (32/64-bit words, 2B, B + 7 and 5 inputs, 70 neurons,
    batches): the fused BinDense + Step kernel's (bin_dense_step_pack)."""
    return [c for c in all_cases(configs) if c[0] == "dense"]


def pool_fused_cases(configs):
    """Every int_conv and bin_conv case of the matrix (5x6 images: padding 1 pools 5x6 to 2x3,
    dropping the odd last row; padding 0 pools 3x4 to 1x2): the conv + Step + MaxPool2d
    kernels' (int_conv_step_pool_pack, bin_conv_step_pool_pack), made by make_fused_case(...,
    pool=True)."""
    return [c for c in all_cases(configs) if c[0] in FUSED_KINDS + ("bin_conv",)]


# Each fused kernel family and the matrix it is checked on: (the first layer's case kinds, pool).
# The register-blocked binary families (bin_conv_step_pack_px2, ...: PX output pixels of a row per
# warp, family_px) take the bin_conv matrix with images of BLOCKED_WIDTHS[batch] columns, so that
# the output rows of every padding, word size and pooling end in a tail of fewer than PX pixels
# in some cases and not in others.
FUSED_FAMILIES = {
    "int_conv_step_pack": (FUSED_KINDS, False),
    "bin_conv_step_pack": (("bin_conv",), False),
    "bin_dense_step_pack": (("dense",), False),
    "int_conv_step_pool_pack": (FUSED_KINDS, True),
    "bin_conv_step_pool_pack": (("bin_conv",), True),
    **{
        f"{family}_px{px}": (("bin_conv",), family.endswith("_pool_pack"))
        for family, pxs in BLOCKED_PX.items()
        for px in pxs
    },
}
# image width by batch size of the blocked families' cases: output widths (pad 1 / pad 0) 8 / 6,
# 9 / 7 and 6 / 4, pooled 4 / 3, 4 / 3 and 3 / 2: rows with and without a tail at PX = 2 and 4
BLOCKED_WIDTHS = {1: 8, 2: 9, 5: 6}
FUSED_THREADS = (256, 100, 48, 20)  # threads per block the fused cases take in turn: whole
#                                     warps, a partial last warp (100 = 3 x 32 + 4, 48 = 32 + 16),
#                                     fewer than a warp (the plan's own smaller blocks occur too)


def fused_family_cases(family: str, configs) -> list[tuple]:
    """Every (kind, config, word_bits, variant, pad, batch) the fused kernel family is checked
    on (FUSED_FAMILIES)."""
    kinds, _ = FUSED_FAMILIES[family]
    return [c for c in all_cases(configs) if c[0] in kinds]


def family_px(family: str) -> int:
    """Output pixels of a row per warp of a fused kernel family: 'bin_conv_step_pack_px4' -> 4;
    1 for the unblocked families."""
    head, sep, px = family.rpartition("_px")
    return int(px) if sep and head in BLOCKED_PX and px.isdigit() else 1


def fused_case_width(family: str, case: tuple) -> int:
    """The image width of one fused case: 6, or BLOCKED_WIDTHS[batch] for a blocked family."""
    return BLOCKED_WIDTHS[case[5]] if family_px(family) > 1 else 6


def fused_case_seed(family: str, case: tuple) -> int:
    """The fixed seed of one fused case (the pair kernels' seeds are those the tests used
    before the pooled and dense kernels existed; a blocked family's add its pixels per warp)."""
    kind, _, bits, variant, pad, batch = case
    pool = FUSED_FAMILIES[family][1]
    px = family_px(family)
    extra = (("pool",) if pool else ()) + (("px", px) if px > 1 else ())
    return case_seed("fused", kind, bits, variant, pad, batch, *extra)


def fused_case_label(family: str, case: tuple, threads: int) -> str:
    kind, config, bits, variant, pad, batch = case
    width = f" 5x{fused_case_width(family, case)}" if family_px(family) > 1 else ""
    return (
        f"{family} {kind} {config} w{bits} {variant} pad{pad} n{batch}{width} "
        f"seed {fused_case_seed(family, case)} threads {threads}"
    )


def check_fused_case(gpu, family: str, case: tuple, threads: int, op_check=None) -> str | None:
    """One fused case against the golden model on `gpu` (a device object or backend name): the
    network of make_fused_case run with its layers fused into one kernel in the case's
    configuration, blocks of `threads`. None when the kernel taken is `family`'s, passes
    `op_check(op)` (when given), writes no tensor but its last layer's and that equals golden;
    else what differs, in one line."""
    kind, config, bits, variant, pad, batch = case
    pool = FUSED_FAMILIES[family][1]
    seed, width = fused_case_seed(family, case), fused_case_width(family, case)
    net, x = make_fused_case(kind, bits, variant, pad, batch, seed, pool, width)
    ref = golden.run(net, x).outputs[-1]
    last = len(net.layers) - 1
    runner = Runner(
        net,
        [config] * len(net.layers),
        gpu,
        bits,
        threads=threads,
        fuse=[(0, last)],
        fused_px={0: family_px(family)},
    )
    op = runner.fused.get(0)
    if op is None or op.family != family or (op_check is not None and not op_check(op)):
        return f"the kernel taken is {getattr(op, 'kernel', None)!r}, not {family}'s"
    res = runner.run(x)
    if any(o is not None for o in res.outputs[:-1]):
        return "a tensor inside the fused kernel was written"
    out = res.outputs[-1]
    if out.dtype != ref.dtype or out.shape != ref.shape:
        return f"dtype {out.dtype} shape {out.shape}, golden {ref.dtype} {ref.shape}"
    bad = np.argwhere(out != ref)
    if bad.size:
        first = tuple(int(i) for i in bad[0])
        return (
            f"{len(bad)} of {out.size} values differ; first at {first}: got {out[first]}, golden {ref[first]}"
        )
    return None
