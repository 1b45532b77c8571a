"""Functional coverage of the instruction set (cocotb-coverage covergroups), sampled from the
instructions a bench really ran on the RTL and from the error codes it reported.

Cover points and crosses (under "isa."):
* opcode: LOAD_WEIGHTS, MATMUL, HALT;
* matmul.mode x matmul.shift x matmul.acc_in (the cross "matmul.mode_shift_acc": 4 x 2 x 2
  bins; pixel-sum is mode 3);
* matmul.group: column-group sizes 1, 2, 4, 8; matmul.tile_rows / matmul.tile_cols: 1, mid
  (between 1 and the array's size), max; matmul.in_ch / matmul.out_ch offset zero or not;
  matmul.pixels: 1 pixel or several; matmul.fill: a shifted MATMUL filling with 0 and with a
  nonzero value;
* weights.code x weights.sign (cross "weights.code_sign"): every exponent code 1..7 with both
  signs, plus weights.zero (code 0: a gated cell) in the loaded tile;
* data.zeros: an input tensor with no zero byte, some, or only zeros;
* error: every error code the decoder reports (1..10);
* acc.wrap: an accumulator that wraps at the int32 extremes in a run (the exact sum of a
  MATMUL's bias and products above INT32_MAX or below INT32_MIN, a pixel sum outside int32),
  found from the golden layer inputs;
* lowering (BNN and SAC layers on the array, from fpga.lowering via the compiled program):
  in_code uint8 / pm1 (0/2 activations) / bit, out_code uint8 / bit / int, im2col_pad 0 / 1,
  chunked input layouts, in-place inputs, segments starting at pc 0 and later.
"""

from __future__ import annotations

import numpy as np
from cocotb_coverage.coverage import CoverCross, CoverPoint, coverage_db

from fpga.isa import ErrorCode, Halt, LoadWeights, Matmul, Opcode
from models import golden, ir
from models.checks import INT32_MAX, INT32_MIN
from models.numerics.sac import decode_byte, sac_matmul

GROUPS = [1, 2, 4, 8]
SIZES = ["1", "mid", "max"]


def size_bin(n: int, most: int) -> str:
    return "1" if n == 1 else "max" if n == most else "mid"


@CoverPoint(
    "isa.opcode",
    xf=lambda op: op,
    bins=[Opcode.LOAD_WEIGHTS, Opcode.MATMUL, Opcode.HALT],
    bins_labels=["LOAD_WEIGHTS", "MATMUL", "HALT"],
)
def sample_opcode(op) -> None:
    pass


@CoverPoint(
    "isa.matmul.mode",
    xf=lambda m, rows, cols, most_r, most_c: int(m.mode),
    bins=[0, 1, 2, 3],
    bins_labels=["relu_quant", "binary", "raw", "pixel_sum"],
)
@CoverPoint("isa.matmul.shift", xf=lambda m, rows, cols, most_r, most_c: bool(m.shift_en), bins=[False, True])
@CoverPoint("isa.matmul.acc_in", xf=lambda m, rows, cols, most_r, most_c: bool(m.acc_in), bins=[False, True])
@CoverCross("isa.matmul.mode_shift_acc", items=["isa.matmul.mode", "isa.matmul.shift", "isa.matmul.acc_in"])
@CoverPoint("isa.matmul.group", xf=lambda m, rows, cols, most_r, most_c: m.group, bins=GROUPS)
@CoverPoint(
    "isa.matmul.tile_rows", xf=lambda m, rows, cols, most_r, most_c: size_bin(rows, most_r), bins=SIZES
)
@CoverPoint(
    "isa.matmul.tile_cols", xf=lambda m, rows, cols, most_r, most_c: size_bin(cols, most_c), bins=SIZES
)
@CoverPoint(
    "isa.matmul.in_ch",
    xf=lambda m, rows, cols, most_r, most_c: m.in_ch > 0,
    bins=[False, True],
    bins_labels=["0", ">0"],
)
@CoverPoint(
    "isa.matmul.out_ch",
    xf=lambda m, rows, cols, most_r, most_c: m.out_ch > 0,
    bins=[False, True],
    bins_labels=["0", ">0"],
)
@CoverPoint(
    "isa.matmul.fill",
    xf=lambda m, rows, cols, most_r, most_c: (m.shift_en, m.fill > 0),
    bins=[(True, False), (True, True)],
    bins_labels=["shift, fill 0", "shift, fill > 0"],
)
@CoverPoint(
    "isa.matmul.pixels",
    xf=lambda m, rows, cols, most_r, most_c: m.height * m.width > 1,
    bins=[False, True],
    bins_labels=["1", ">1"],
)
def sample_matmul(m: Matmul, rows: int, cols: int, most_r: int, most_c: int) -> None:
    pass


@CoverPoint("isa.weights.code", xf=lambda code, sign: code, bins=list(range(1, 8)))
@CoverPoint("isa.weights.sign", xf=lambda code, sign: sign, bins=[0, 1], bins_labels=["negative", "positive"])
@CoverCross("isa.weights.code_sign", items=["isa.weights.code", "isa.weights.sign"])
def sample_weight(code: int, sign: int) -> None:
    pass


@CoverPoint("isa.weights.zero", xf=lambda present: present, bins=[True], bins_labels=["gated cell"])
def sample_zero_weight(present: bool) -> None:
    pass


@CoverPoint("isa.data.zeros", xf=lambda kind: kind, bins=["none", "some", "all"])
def sample_data(kind: str) -> None:
    pass


@CoverPoint(
    "isa.error",
    xf=lambda code: int(code),
    bins=[int(c) for c in ErrorCode if c],
    bins_labels=[c.name for c in ErrorCode if c],
)
def sample_error(code) -> None:
    pass


WRAPS = ["acc above INT32_MAX", "acc below INT32_MIN", "pixel sum outside int32"]


@CoverPoint("isa.acc.wrap", xf=lambda kind: kind, bins=WRAPS)
def sample_wrap(kind: str) -> None:
    pass


def sample_wraps(net: ir.Network, image) -> None:
    """Which accumulators wrapped at the int32 extremes when `image` ran through `net`: the
    exact (int64) bias-plus-products of every 1x1 convolution and the exact pixel sums, from
    the golden executor's layer inputs (the RTL's wrapped values are checked against the golden
    model by the bench; this only finds out whether wrapping happened)."""
    x = np.asarray(image)[None]
    ref = golden.run(net, x)
    for layer, xin in zip(net.layers, [x] + ref.outputs[:-1], strict=True):
        n, c = xin.shape[:2]
        if isinstance(layer, ir.PointwiseConv):
            # products alone (small: exact in int32), then the bias added in int64
            products = sac_matmul(layer.weights, xin.reshape(n, c, -1), np.zeros_like(layer.bias))
            exact = products.astype(np.int64) + layer.bias.astype(np.int64)[:, None]
            if exact.max() > INT32_MAX:
                sample_wrap(WRAPS[0])
            if exact.min() < INT32_MIN:
                sample_wrap(WRAPS[1])
        elif isinstance(layer, ir.PixelSum):
            sums = xin.reshape(n, c, -1).astype(np.int64).sum(axis=-1)
            if sums.max() > INT32_MAX or sums.min() < INT32_MIN:
                sample_wrap(WRAPS[2])


@CoverPoint("lowering.in_code", xf=lambda lp, seg_start: lp.op.in_code, bins=["uint8", "pm1", "bit"])
@CoverPoint("lowering.out_code", xf=lambda lp, seg_start: lp.op.out_code, bins=["uint8", "bit", "int"])
@CoverPoint(
    "lowering.im2col_pad",
    xf=lambda lp, seg_start: lp.op.im2col_pad,
    bins=[0, 1],
    bins_labels=["3x3, pad 0", "3x3, pad 1"],
)
@CoverPoint(
    "lowering.chunked",
    xf=lambda lp, seg_start: lp.input.chunk > 0,
    bins=[False, True],
    bins_labels=["one chunk", "chunked"],
)
@CoverPoint("lowering.in_place", xf=lambda lp, seg_start: lp.op.in_place, bins=[False, True])
@CoverPoint(
    "lowering.segment_start",
    xf=lambda lp, seg_start: seg_start > 0,
    bins=[False, True],
    bins_labels=["pc 0", "pc > 0"],
)
def sample_layer(lp, seg_start: int) -> None:
    pass


def sample_lowering(prog) -> None:
    """The lowering of every array layer of a program that ran: input/output encodings (0/2
    activations, bits, raw), 3x3 padding, chunked input layouts, in-place inputs, and whether
    its segment starts at pc 0 or later."""
    for lp in prog.layers:
        sample_layer(lp, prog.segments[lp.segment].start_pc)


def sample_program(prog, start_pc: int, n_instr: int) -> int:
    """Sample the instructions of one segment that ran; returns how many were sampled."""
    cfg = prog.config
    rows = cols = 0
    for ins in prog.instructions[start_pc : start_pc + n_instr]:
        if isinstance(ins, LoadWeights):
            sample_opcode(Opcode.LOAD_WEIGHTS)
            rows, cols = ins.rows, ins.cols
            tile = np.asarray(prog.wmem[ins.w_addr : ins.w_addr + ins.rows, : ins.cols])
            _, sign, code = decode_byte(tile.reshape(-1))
            for c, s in set(zip(code.tolist(), sign.tolist(), strict=True)):
                if 1 <= c <= 7:
                    sample_weight(c, s)
            if (code == 0).any():
                sample_zero_weight(True)
        elif isinstance(ins, Matmul):
            sample_opcode(Opcode.MATMUL)
            sample_matmul(ins, rows, cols, cfg.rows, cfg.cols)
        elif isinstance(ins, Halt):
            sample_opcode(Opcode.HALT)
    return n_instr


def sample_input(x) -> None:
    zeros = int((np.asarray(x) == 0).sum())
    sample_data("none" if zeros == 0 else "all" if zeros == np.asarray(x).size else "some")


def summary(exclude: tuple = ()) -> dict:
    """Every cover point and cross (but those named in `exclude`): bins hit, size, percent, the
    bins never hit."""
    items = {}
    for name in sorted(coverage_db.keys()):
        item = coverage_db[name]
        if not isinstance(item, (CoverPoint, CoverCross)) or name in exclude:
            continue
        detail = item.detailed_coverage
        missing = [str(b) for b, hits in detail.items() if hits < 1]
        items[name] = {
            "hit": item.coverage,
            "size": item.size,
            "percent": 100.0 * item.coverage / item.size if item.size else 100.0,
            "missing": missing,
        }
    hit = sum(i["hit"] for i in items.values())
    size = sum(i["size"] for i in items.values())
    return {"items": items, "hit": hit, "size": size, "percent": 100.0 * hit / size if size else 0.0}


def export(xml: str, yaml: str) -> None:
    coverage_db.export_to_xml(filename=xml)
    coverage_db.export_to_yaml(filename=yaml)
