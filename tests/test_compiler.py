"""Compiled programs run by the instruction-level interpreter equal the golden executor, for
networks larger than the array (several filter and channel tiles), in every output mode."""

import numpy as np
import pytest

from fpga.arch import ArrayConfig
from fpga.compiler import CompileError, compile_network
from fpga.cycle_model import program_timeline, seed_tile_cycles, total_cycles
from fpga.execute import interpret
from fpga.interpreter import Machine
from fpga.isa import ErrorCode, Halt, LoadWeights, Matmul, encode
from models import golden, ir
from models.numerics import sac
from models.numerics.sac import OutputMode
from models.random_networks import random_combined, random_images, random_sac_network

SEED = 4242


@pytest.mark.parametrize("array", ["4x3", "8x8", "3x5"])
@pytest.mark.parametrize("final", ["pixel_sum", "raw", "binary", "relu_quant"])
@pytest.mark.parametrize("shift", [True, False])
def test_program_equals_golden(array, final, shift):
    seed = (
        SEED
        + ["4x3", "8x8", "3x5"].index(array) * 10
        + ["pixel_sum", "raw", "binary", "relu_quant"].index(final) * 2
        + shift
    )
    print("seed", seed)
    rng = np.random.default_rng(seed)
    net = random_sac_network(
        rng, in_shape=(6, 8, 8), widths=(13, 22), groups=(1, 3, 2), shift=shift, final=final, s2d=2
    )
    cfg = ArrayConfig.parse(array)
    prog = compile_network(net, cfg)
    assert max(lp.n_tiles for lp in prog.layers) > 1 and max(lp.k_tiles for lp in prog.layers) > 1
    x = random_images(rng, 3, net.input_shape, zero_fraction=0.5)
    ref = golden.run(net, x)
    res = interpret(prog, x)
    assert sorted(res.outputs) == sorted({0} | {lp.layer_index for lp in prog.layers})
    for i, out in res.outputs.items():
        assert np.array_equal(out, ref.outputs[i]), i
    assert sum(st.total_cycles for st in res.segments) == total_cycles(prog.instructions, cfg)
    # activity of each layer = golden count of nonzero (weight, datum) pairs, per image
    _, activity = res.instruction_stats(prog)
    for lp in prog.layers:
        conv_i = lp.op.first + (lp.op.shift is not None)
        data = ref.outputs[conv_i - 1]
        want = sac.count_active_per_image(net.layers[conv_i].dense(), data.reshape(len(x), data.shape[1], -1))
        got = sum(np.asarray(a) for a in activity[lp.first_instr : lp.first_instr + lp.n_instr])
        assert np.array_equal(got, want), lp.layer_index


def test_wide_tensors_are_chunked():
    """More channels than data-buffer banks: tensors are stored in chunks of channels."""
    rng = np.random.default_rng(SEED)
    net = random_sac_network(
        rng, in_shape=(40, 4, 4), widths=(36,), groups=(3, 1), shift=True, final="relu_quant"
    )
    cfg = ArrayConfig(rows=4, cols=4, cmax=16)
    prog = compile_network(net, cfg)
    # input: windows of 4 cols x G=3 channels -> chunks of 12; output: rows 4, next G=1 -> 16
    assert prog.layers[0].input.chunk == 12 and prog.layers[0].output.chunk == 16
    x = random_images(rng, 2, net.input_shape, zero_fraction=0.5)
    ref = golden.run(net, x)
    res = interpret(prog, x)
    for i, out in res.outputs.items():
        assert np.array_equal(out, ref.outputs[i]), i


def test_tiling_shape_and_order():
    rng = np.random.default_rng(SEED)
    conv = ir.PointwiseConv(
        weights=random_combined(rng, 10, 20, 2), bias=np.zeros(10, dtype=int), mode=OutputMode.RELU_QUANT
    )
    net = ir.Network((20, 2, 2), "uint8", [conv])
    prog = compile_network(net, ArrayConfig(rows=4, cols=4))
    ins = prog.instructions
    # 3 N-tiles (4, 4, 2 rows) x 3 K-tiles (4, 4, 2 columns of 10) = 9 LW/MM pairs + HALT
    assert len(ins) == 19 and isinstance(ins[-1], Halt)
    lws, mms = ins[0:-1:2], ins[1:-1:2]
    assert [(lw.rows, lw.cols) for lw in lws] == [(r, c) for r in (4, 4, 2) for c in (4, 4, 2)]
    assert [m.acc_in for m in mms] == [False, True, True] * 3
    assert [m.mode for m in mms] == [OutputMode.RAW, OutputMode.RAW, OutputMode.RELU_QUANT] * 3
    assert [m.in_ch for m in mms] == [0, 8, 16] * 3
    assert [m.out_ch for m in mms[2::3]] == [0, 4, 8]


def test_cycle_model_terms():
    cfg = ArrayConfig(rows=8, cols=8)
    prog = [
        LoadWeights(rows=5, cols=8),
        Matmul(height=2, width=3, in_addr=0, out_addr=6),
        Matmul(height=1, width=1, in_addr=0, out_addr=0, mode=OutputMode.PIXEL_SUM),
        Halt(),
    ]
    steps = program_timeline(prog, cfg)
    lens = [s.cycles for s in steps]
    assert lens == [2 + 5 + 1, 2 + 48 + 24 + 8 + 5 + 4, 2 + 8 + 24 + 8 + 5 + 4 + 1, 2]
    assert [s.start for s in steps] == [0, 8, 99, 151]
    # every step names its instruction and its place (the RTL benches report by them; `make
    # mutants` found nothing here checked either)
    assert [s.index for s in steps] == [0, 1, 2, 3]
    assert all(s.instr is ins for s, ins in zip(steps, prog, strict=True))
    assert [s.end for s in steps] == [8, 99, 151, 153]
    assert seed_tile_cycles(1024, 64, 128) == 8 * 1024 + 64 + 128 + 22


def test_cycle_model_refuses_what_is_not_an_instruction():
    with pytest.raises(TypeError, match="not an instruction: 'nop'"):
        total_cycles([LoadWeights(rows=1, cols=1), "nop", Halt()], ArrayConfig(rows=8, cols=8))


def test_cycle_model_terms_on_a_non_square_array():
    """COLS (the column skew and the row pipeline) and the tile's rows enter MATMUL
    separately: a 5x7 array and a 3-row tile tell them apart."""
    cfg = ArrayConfig(rows=5, cols=7)
    prog = [LoadWeights(rows=3, cols=2), Matmul(height=2, width=2, in_addr=0, out_addr=6), Halt()]
    assert [s.cycles for s in program_timeline(prog, cfg)] == [2 + 3 + 1, 2 + 8 * 4 + 24 + 7 + 3 + 4, 2]


# Tall and wide arrays (a cycle model with ROWS and COLS swapped passed every square
# test). The tile (3 rows x 2 or 5 columns) differs from both array sides, so any swap of
# COLS, ROWS, the tile's rows or its columns changes a number; expected values are the
# per-instruction terms of docs/microarchitecture.md ("Timing of one tile"), written out.
NON_SQUARE = {
    "8x4": (
        LoadWeights(rows=3, cols=2),
        [2 + 3 + 1, 2 + 8 * 6 + 24 + 4 + 3 + 4, 2 + 8 + 24 + 4 + 3 + 4 + 1, 2],
    ),
    "4x16": (
        LoadWeights(rows=3, cols=5),
        [2 + 3 + 1, 2 + 8 * 6 + 24 + 16 + 3 + 4, 2 + 8 + 24 + 16 + 3 + 4 + 1, 2],
    ),
}


@pytest.mark.parametrize("array", list(NON_SQUARE))
def test_cycle_model_on_tall_and_wide_arrays(array):
    cfg = ArrayConfig.parse(array)
    lw, want = NON_SQUARE[array]
    prog = [
        lw,
        Matmul(height=2, width=3, in_addr=0, out_addr=6),
        Matmul(height=1, width=1, in_addr=0, out_addr=0, mode=OutputMode.PIXEL_SUM),
        Halt(),
    ]
    assert [s.cycles for s in program_timeline(prog, cfg)] == want


@pytest.mark.parametrize("array", list(NON_SQUARE))
def test_interpreter_cycles_on_tall_and_wide_arrays(array):
    """The interpreter charges every instruction of a compiled program what the cycle model
    says on tall and wide arrays too (it reads the tile's rows from its own decoder state)."""
    seed = SEED + 7 + list(NON_SQUARE).index(array)
    print("seed", seed)
    rng = np.random.default_rng(seed)
    net = random_sac_network(
        rng, in_shape=(9, 4, 4), widths=(11,), groups=(2, 3), shift=True, final="pixel_sum"
    )
    cfg = ArrayConfig.parse(array)
    prog = compile_network(net, cfg)
    x = random_images(rng, 2, net.input_shape, zero_fraction=0.5)
    res = interpret(prog, x)
    for seg, stats in zip(prog.segments, res.segments, strict=True):
        steps = program_timeline(prog.instructions[seg.start_pc : seg.start_pc + seg.n_instr], cfg)
        assert stats.cycles == [s.cycles for s in steps], seg


def test_channel_shift_fill_reaches_the_array():
    """A nonzero fill value travels from the ChannelShift layer into every shifted MATMUL and
    the array's result equals the golden model, which differs from a zero fill."""
    rng = np.random.default_rng(SEED + 99)
    net = random_sac_network(rng, in_shape=(5, 6, 6), widths=(11,), groups=(2, 3), shift=True)
    shifts = [layer for layer in net.layers if isinstance(layer, ir.ChannelShift)]
    for layer in shifts:
        layer.fill = 77
    x = random_images(rng, 2, net.input_shape, zero_fraction=0.5)
    prog = compile_network(net, ArrayConfig(rows=4, cols=3))
    shifted = [m for m in prog.instructions if isinstance(m, Matmul) and m.shift_en]
    assert shifted and all(m.fill == 77 for m in shifted)
    ref = golden.run(net, x)
    res = interpret(prog, x)
    for i, out in res.outputs.items():
        assert np.array_equal(out, ref.outputs[i]), i
    for layer in shifts:
        layer.fill = 0
    assert not np.array_equal(golden.run(net, x).scores, ref.scores)


def test_compile_errors_name_the_layer():
    rng = np.random.default_rng(SEED)
    shift = ir.ChannelShift(directions=np.zeros(4, dtype=int))
    net = ir.Network((4, 4, 4), "uint8", [shift, shift])
    with pytest.raises(CompileError, match=r"layer 0 \(ChannelShift\) must be followed by a PointwiseConv"):
        compile_network(net)
    wide = ir.PointwiseConv(weights=random_combined(rng, 4, 64, 3), bias=np.zeros(4, dtype=int))
    with pytest.raises(
        CompileError, match="window of 24 channels and 1 rows cannot share chunks of at most 16 banks"
    ):
        compile_network(ir.Network((64, 2, 2), "uint8", [wide]), ArrayConfig(cmax=16))
    conv = ir.PointwiseConv(weights=random_combined(rng, 4, 4, 1), bias=np.zeros(4, dtype=int))
    with pytest.raises(CompileError, match="data buffer needs"):
        compile_network(ir.Network((4, 30, 30), "uint8", [conv]), ArrayConfig(ddepth=1000))
    pm = np.ones((2, 1, 3, 3), dtype=int)
    first = ir.IntConv2d(weight=pm, bias=np.zeros(2, dtype=int), padding=1)
    with pytest.raises(CompileError, match=r"layer 0 \(IntConv2d\): the array takes uint8 data"):
        compile_network(ir.Network((1, 4, 4), "int", [first]))
    raw = ir.PointwiseConv(
        weights=random_combined(rng, 4, 4, 1), bias=np.zeros(4, dtype=int), mode=OutputMode.RAW
    )
    with pytest.raises(ir.NetworkError, match="accepts uint8 input, but gets int"):
        ir.Network((4, 2, 2), "uint8", [raw, conv])  # raw int32 cannot feed the array


def test_host_layers_between_segments():
    """A SAC conv followed by max pooling and another conv: two segments, host work between."""
    rng = np.random.default_rng(SEED)
    c1 = ir.PointwiseConv(weights=random_combined(rng, 6, 3, 1), bias=rng.integers(-500, 500, 6))
    c2 = ir.PointwiseConv(weights=random_combined(rng, 5, 6, 2), bias=rng.integers(-500, 500, 5))
    net = ir.Network((3, 4, 4), "uint8", [c1, ir.MaxPool2d(name="pool"), c2])
    prog = compile_network(net, ArrayConfig(rows=4, cols=2))
    assert [type(s).__name__ for s in prog.plan] == ["Segment", "HostOp", "Segment"]
    assert prog.host_layers == [1] and len(prog.segments) == 2
    x = random_images(rng, 2, net.input_shape, zero_fraction=0.5)
    ref = golden.run(net, x)
    res = interpret(prog, x)
    for i in (0, 1, 2):
        assert np.array_equal(res.outputs[i], ref.outputs[i]), i


def test_interpreter_halts_on_error_and_writes_nothing():
    cfg = ArrayConfig(rows=2, cols=2)
    mach = Machine(cfg)
    mach.dbuf[:] = 7
    mach.imem[0] = encode(LoadWeights(rows=1, cols=1))
    mach.imem[1] = encode(Matmul(height=1, width=1, in_addr=0, out_addr=1)) | (1 << 11)
    stats = mach.run()
    assert stats.error.code == ErrorCode.RESERVED_BITS and stats.error.index == 1
    assert (mach.dbuf == 7).all()
