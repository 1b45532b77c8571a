"""Compiled programs run by the instruction-level interpreter equal the golden executor, for
networks larger than the array (several filter and channel tiles), in every output mode."""
import numpy as np
import pytest

from models import golden, ir
from models.arch import ArrayConfig
from models.compiler import CompileError, compile_network
from models.cycle_model import program_timeline, seed_tile_cycles, total_cycles
from models.interpreter import Machine, run_program
from models.isa import ErrorCode, Halt, LoadWeights, Matmul, encode
from models.numerics import sac
from models.numerics.sac import OutputMode
from models.random_networks import random_combined, random_images, random_sac_network

SEED = 4242


@pytest.mark.parametrize("array", ["4x3", "8x8", "3x5"])
@pytest.mark.parametrize("final", ["pixel_sum", "raw", "binary", "relu_quant"])
@pytest.mark.parametrize("shift", [True, False])
def test_program_equals_golden(array, final, shift):
    seed = SEED + hash((array, final, shift)) % 1000
    print("seed", seed)
    rng = np.random.default_rng(seed)
    net = random_sac_network(rng, in_shape=(6, 8, 8), widths=(13, 22), groups=(1, 3, 2),
                             shift=shift, final=final, s2d=2)
    cfg = ArrayConfig.parse(array)
    prog = compile_network(net, cfg)
    conv = [lp for lp in prog.layers]
    assert max(lp.n_tiles for lp in conv) > 1 and max(lp.k_tiles for lp in conv) > 1
    x = random_images(rng, 3, net.input_shape)
    ref = golden.run(net, x)
    for i in range(len(x)):
        outs, stats, mach = run_program(prog, x[i])
        for lp, out in zip(prog.layers, outs):
            assert np.array_equal(out, ref.outputs[lp.layer_index][i]), (i, lp.layer_index)
        assert stats.total_cycles == total_cycles(prog.instructions, cfg)
        # activity of each layer = golden count of nonzero (weight, datum) pairs
        for lp in prog.layers:
            conv_i = lp.layer_index - (1 if final == "pixel_sum" and lp is prog.layers[-1] else 0)
            layer = net.layers[conv_i]
            data = ref.outputs[conv_i - 1][i] if conv_i > 0 else x[i]
            want = sac.count_active(layer.dense(), data.reshape(data.shape[0], -1))
            got = sum(stats.activity[lp.first_instr:lp.first_instr + lp.n_instr])
            assert got == want, lp.layer_index


def test_tiling_shape_and_order():
    rng = np.random.default_rng(SEED)
    conv = ir.PointwiseConv(weights=random_combined(rng, 10, 20, 2), bias=np.zeros(10, dtype=int),
                            mode=OutputMode.RELU_QUANT)
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
    prog = [LoadWeights(rows=5, cols=8), Matmul(height=2, width=3, in_addr=0, out_addr=6),
            Matmul(height=1, width=1, in_addr=0, out_addr=0, mode=OutputMode.PIXEL_SUM), Halt()]
    steps = program_timeline(prog, cfg)
    lens = [s.cycles for s in steps]
    assert lens == [2 + 5 + 1, 2 + 48 + 24 + 8 + 5 + 2, 2 + 8 + 24 + 8 + 5 + 2 + 1, 2]
    assert [s.start for s in steps] == [0, 8, 97, 147]
    assert seed_tile_cycles(1024, 64, 128) == 8 * 1024 + 64 + 128 + 22


def test_compile_errors_name_the_layer():
    rng = np.random.default_rng(SEED)
    conv = ir.PointwiseConv(weights=random_combined(rng, 4, 4, 1), bias=np.zeros(4, dtype=int))
    net = ir.Network((4, 4, 4), "uint8", [conv, ir.MaxPool2d(name="pool")])
    with pytest.raises(CompileError, match=r"layer 1 \(MaxPool2d 'pool'\) cannot run on the SAC"):
        compile_network(net)
    shift = ir.ChannelShift(directions=np.zeros(4, dtype=int))
    net = ir.Network((4, 4, 4), "uint8", [shift, shift])
    with pytest.raises(CompileError, match="must be followed by a PointwiseConv"):
        compile_network(net)
    wide = ir.PointwiseConv(weights=random_combined(rng, 4, 64, 3), bias=np.zeros(4, dtype=int))
    with pytest.raises(CompileError, match="64 channels in groups of 3 need 66 data-buffer banks"):
        compile_network(ir.Network((64, 2, 2), "uint8", [wide]), ArrayConfig(cmax=64))
    with pytest.raises(CompileError, match="the input has 80 channels"):
        compile_network(ir.Network((80, 2, 2), "uint8", [
            ir.PointwiseConv(weights=random_combined(rng, 4, 80, 1), bias=np.zeros(4, dtype=int))]))
    many = ir.PointwiseConv(weights=random_combined(rng, 80, 4, 1), bias=np.zeros(80, dtype=int))
    with pytest.raises(CompileError, match="80 output channels"):
        compile_network(ir.Network((4, 2, 2), "uint8", [many]))
    with pytest.raises(CompileError, match="data buffer needs"):
        compile_network(ir.Network((4, 30, 30), "uint8", [conv]), ArrayConfig(ddepth=1000))
    raw = ir.PointwiseConv(weights=random_combined(rng, 4, 4, 1), bias=np.zeros(4, dtype=int),
                           mode=OutputMode.RAW)
    with pytest.raises(ir.NetworkError, match="accepts uint8 input, but gets int"):
        ir.Network((4, 2, 2), "uint8", [raw, conv])    # raw int32 cannot feed the array


def test_interpreter_halts_on_error_and_writes_nothing():
    cfg = ArrayConfig(rows=2, cols=2)
    mach = Machine(cfg)
    mach.dbuf[:] = 7
    mach.imem[0] = encode(LoadWeights(rows=1, cols=1))
    mach.imem[1] = encode(Matmul(height=1, width=1, in_addr=0, out_addr=1)) | (1 << 11)
    stats = mach.run()
    assert stats.error.code == ErrorCode.RESERVED_BITS and stats.error.index == 1
    assert (mach.dbuf == 7).all()
