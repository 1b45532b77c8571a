"""fpga/interpreter.py, the instruction-level interpreter, by its own contract: the memories it
models (their widths and what loading a program or a tile leaves in them), what `run` charges
for every instruction (the cycle model's counts, FETCH and no activity for HALT and errors), its
errors (the pc and the word of the failing instruction, PC_OVERFLOW without HALT), results that
do not depend on the block size of a MATMUL or on the batch size (per-image activity), and the
caches it keeps across runs (decoded words, the dense weights of a tile) without ever running a
stale word. Outputs are compared with the golden executor (models.golden)."""

import numpy as np
import pytest

from fpga import interpreter
from fpga.arch import ArrayConfig
from fpga.compiler import compile_network
from fpga.cycle_model import FETCH, lw_cycles, mm_cycles
from fpga.execute import InterpretedDevice, _run_to_end, execute, interpret
from fpga.interpreter import Machine, RunStats
from fpga.isa import ErrorCode, Halt, IsaError, LoadWeights, Matmul, encode
from models import golden
from models.numerics import sac
from models.numerics.sac import OutputMode
from models.random_networks import random_images, random_sac_network

SEED = 4100
ARRAY = ArrayConfig(rows=4, cols=3, cmax=32, ddepth=256, pdepth=64)


def sac_net(final="pixel_sum", shift=True):
    rng = np.random.default_rng(SEED)
    return random_sac_network(
        rng, in_shape=(6, 5, 4), widths=(7,), groups=(2, 3), shift=shift, final=final, classes=5
    )


def images(net, n, seed=SEED + 1):
    return random_images(np.random.default_rng(seed), n, net.input_shape, zero_fraction=0.4)


def assert_equals_golden(net, prog, x, **kw):
    res = interpret(prog, x, **kw)
    ref = golden.run(net, x)
    assert res.outputs
    for i, out in res.outputs.items():
        assert np.array_equal(out, ref.outputs[i]), f"layer {i}"
    return res


SMALL = ArrayConfig(rows=2, cols=2, imem_depth=8)


def hand_machine(*instructions, cfg=SMALL):
    mach = Machine(cfg)
    for pc, ins in enumerate(instructions):
        mach.imem[pc] = encode(ins)
    return mach


# -- the memories -------------------------------------------------------------------------------
def test_memories_have_the_accelerators_word_widths_and_shapes():
    cfg = ArrayConfig(rows=4, cols=3, cmax=16, ddepth=32, pdepth=8, wdepth=24, bdepth=20, sdepth=6)
    mach = Machine(cfg)
    assert mach.batch == 1
    assert (mach.wmem.dtype, mach.wmem.shape) == (np.uint8, (24, 3))  # one cell byte per column
    assert (mach.bmem.dtype, mach.bmem.shape) == (np.int32, (20,))
    assert (mach.smem.dtype, mach.smem.shape) == (np.uint8, (6, 24))  # cols x 8 directions
    assert (mach.window_dirs.dtype, mach.window_dirs.shape) == (np.uint8, (24,))
    assert (mach.smem == sac.SHIFT_IDENTITY).all() and (mach.window_dirs == sac.SHIFT_IDENTITY).all()
    assert (mach.dbuf.dtype, mach.dbuf.shape) == (np.uint8, (1, 16, 32))  # batch first
    assert (mach.pbuf.dtype, mach.pbuf.shape) == (np.int32, (1, 4, 8))
    assert (mach.cells.dtype, mach.cells.shape) == (np.uint8, (4, 3))
    assert (mach.bias.dtype, mach.bias.shape) == (np.int32, (4,))
    assert Machine(cfg, batch=3).dbuf.shape == (3, 16, 32)


def test_clear_buffers_zeroes_data_and_partial_sums_and_keeps_the_program():
    net = sac_net()
    prog = compile_network(net, ARRAY)
    mach = Machine(ARRAY)
    mach.load_program(prog)
    mach.dbuf[:] = 9
    mach.pbuf[:] = -9
    mach.clear_buffers()
    assert not mach.dbuf.any() and not mach.pbuf.any()
    assert list(mach.imem[: len(prog.words)]) == list(prog.words)


def test_load_program_refuses_another_arrays_program():
    prog = compile_network(sac_net(), ARRAY)
    other = ArrayConfig(rows=2, cols=2)
    with pytest.raises(
        ValueError, match=r"program compiled for ArrayConfig\(rows=4, .*machine is ArrayConfig\(rows=2"
    ):
        Machine(other).load_program(prog)


def test_load_program_replaces_the_whole_instruction_memory():
    cfg = ArrayConfig(rows=2, cols=2, imem_depth=32)
    mach = Machine(cfg)
    mach.imem[:] = encode(Halt()) + 5
    prog = compile_network(
        random_sac_network(np.random.default_rng(3), in_shape=(2, 2, 2), widths=(), groups=(1,), final="raw"),
        cfg,
    )
    mach.load_program(prog)
    n = len(prog.words)
    assert list(mach.imem[:n]) == list(prog.words)
    assert all(w == 0 for w in mach.imem[n:]) and all(isinstance(w, int) for w in mach.imem[n:])


def test_load_weights_leaves_only_the_tile_in_the_array():
    mach = hand_machine(
        LoadWeights(rows=2, cols=2, w_addr=0, b_addr=0),
        LoadWeights(rows=1, cols=1, w_addr=2, b_addr=2),
        Halt(),
    )
    mach.wmem[:4] = [[11, 12], [13, 14], [21, 22], [23, 24]]
    mach.bmem[:4] = [-5, 6, 70, 80]
    mach.smem[0] = 3
    stats = mach.run()
    assert stats.error is None
    assert mach.cells.tolist() == [[21, 0], [0, 0]]
    assert mach.bias.tolist() == [70, 0]
    assert (mach.window_dirs == 3).all()


# -- what run charges ---------------------------------------------------------------------------
def test_run_charges_the_cycle_model_and_no_activity_for_loads_and_halt():
    cfg = ArrayConfig(rows=2, cols=2, imem_depth=8)
    mm = Matmul(height=1, width=3, in_addr=0, out_addr=0, mode=OutputMode.RAW)
    mach = hand_machine(LoadWeights(rows=2, cols=2), mm, Halt(), cfg=cfg)
    stats = mach.run()
    assert stats.error is None
    assert stats.cycles == [lw_cycles(2), mm_cycles(cfg, 3, 2, OutputMode.RAW), FETCH]
    assert stats.total_cycles == sum(stats.cycles)
    assert stats.activity[0] == 0 and stats.activity[2] == 0
    assert isinstance(stats.activity[1], int)


def test_run_starts_at_pc_0_by_default_and_at_start_pc_when_given():
    # pc 0 is a HALT, pc 1 a MATMUL before any LOAD_WEIGHTS (an error if it ran)
    mach = hand_machine(Halt(), Matmul(height=1, width=1, in_addr=0, out_addr=0), Halt())
    stats = mach.run()
    assert (stats.error, stats.cycles, stats.activity) == (None, [FETCH], [0])
    assert mach.run(start_pc=1).error.code == ErrorCode.NO_WEIGHTS


def test_a_checked_error_names_its_pc_and_word_and_charges_a_fetch():
    mm = Matmul(height=1, width=1, in_addr=0, out_addr=0)
    mach = hand_machine(Halt(), Halt(), mm, Halt())
    mach.dbuf[:] = 7
    stats = mach.run(start_pc=2)
    err = stats.error
    assert isinstance(err, IsaError)
    assert (err.code, err.index, err.word) == (ErrorCode.NO_WEIGHTS, 2, encode(mm))
    assert str(err).startswith(f"instruction 2 (0x{encode(mm):032x}): NO_WEIGHTS")
    assert (stats.cycles, stats.activity) == ([FETCH], [0])
    assert (mach.dbuf == 7).all() and not mach.pbuf.any()


def test_a_program_without_halt_ends_in_pc_overflow_at_the_memory_end():
    cfg = ArrayConfig(rows=2, cols=2, imem_depth=4)
    mach = hand_machine(*[LoadWeights(rows=1, cols=1)] * 4, cfg=cfg)
    stats = mach.run(start_pc=1)
    err = stats.error
    assert (err.code, err.index, err.word, err.detail) == (ErrorCode.PC_OVERFLOW, 4, None, "no HALT")
    assert str(err) == "instruction 4: PC_OVERFLOW: no HALT"
    assert stats.cycles == [lw_cycles(1)] * 3 + [FETCH]
    assert stats.activity == [0, 0, 0, 0]


def test_the_machine_runs_the_words_in_memory_after_they_change():
    mach = hand_machine(Halt(), Halt())
    assert mach.run().cycles == [FETCH]
    mach.imem[0] = encode(LoadWeights(rows=1, cols=1))
    assert mach.run().cycles == [lw_cycles(1), FETCH]
    mach.imem[0] = encode(Matmul(height=1, width=1, in_addr=0, out_addr=0))
    assert mach.run().error.code == ErrorCode.NO_WEIGHTS


# -- results ------------------------------------------------------------------------------------
@pytest.mark.parametrize("final", ["pixel_sum", "raw", "relu_quant", "binary"])
@pytest.mark.parametrize("block_macs", [1, 100, 1 << 19])
def test_results_do_not_depend_on_the_matmul_block_size(monkeypatch, final, block_macs):
    """Pixels are cut into blocks of about BLOCK_MACS multiply-accumulates (one pixel a block at
    1); a pixel sum is always one block. Every block size gives golden's outputs and the same
    cycles and activity."""
    net = sac_net(final=final)
    prog = compile_network(net, ARRAY)
    x = images(net, 3)
    whole = interpret(prog, x)
    monkeypatch.setattr(interpreter, "BLOCK_MACS", block_macs)
    res = assert_equals_golden(net, prog, x)
    for a, b in zip(res.segments, whole.segments, strict=True):
        assert a.cycles == b.cycles
        assert all(np.array_equal(p, q) for p, q in zip(a.activity, b.activity, strict=True))


def test_accumulating_k_tiles_in_blocks_equal_golden(monkeypatch):
    # more input channels than the array's columns x G: partial sums over K-tiles (acc_in)
    rng = np.random.default_rng(SEED + 2)
    net = random_sac_network(rng, in_shape=(20, 4, 5), widths=(6,), groups=(1,), shift=False, final="raw")
    cfg = ArrayConfig(rows=2, cols=2, cmax=32, ddepth=256, pdepth=256)
    prog = compile_network(net, cfg)
    assert any(isinstance(i, Matmul) and i.acc_in for i in prog.instructions)
    monkeypatch.setattr(interpreter, "BLOCK_MACS", 7)
    assert_equals_golden(net, prog, images(net, 2))


def test_activity_is_counted_per_image_in_a_batch():
    net = sac_net()
    prog = compile_network(net, ARRAY)
    x = images(net, 2)
    x[1] = 0  # the second image: no active pairs at its first layer
    both = interpret(prog, x, batch=2)
    for k in range(2):
        alone = interpret(prog, x[k : k + 1], batch=1)
        for a, b in zip(both.segments, alone.segments, strict=True):
            for pa, pb in zip(a.activity, b.activity, strict=True):
                assert np.broadcast_to(pa, (2,))[k] == pb
    first = next(a for a in both.segments[0].activity if not np.isscalar(a))
    assert first.shape == (2,) and first[0] != first[1]


def test_one_image_gives_int_activity_and_a_batch_an_array():
    net = sac_net()
    prog = compile_network(net, ARRAY)
    one = interpret(prog, images(net, 1), batch=1)
    assert all(type(a) is int for st in one.segments for a in st.activity)
    two = interpret(prog, images(net, 2), batch=2)
    matmuls = [a for st in two.segments for a in st.activity if not (isinstance(a, int) and a == 0)]
    assert matmuls and all(isinstance(a, np.ndarray) and a.shape == (2,) for a in matmuls)


# -- caches -------------------------------------------------------------------------------------
def test_words_are_decoded_once_and_tile_weights_expanded_once_across_runs(monkeypatch):
    net = sac_net()
    prog = compile_network(net, ARRAY)
    calls = {"decode": 0, "array_weights": 0}
    decode, array_weights = interpreter.decode, sac.array_weights

    def counting_decode(*a, **kw):
        calls["decode"] += 1
        return decode(*a, **kw)

    def counting_array_weights(*a, **kw):
        calls["array_weights"] += 1
        return array_weights(*a, **kw)

    monkeypatch.setattr(interpreter, "decode", counting_decode)
    monkeypatch.setattr(sac, "array_weights", counting_array_weights)
    mach = Machine(ARRAY)
    mach.load_program(prog)
    x = images(net, 1)
    results = []
    for _ in range(3):
        mach.clear_buffers()
        dev = InterpretedDevice(prog, 1, mach)
        results.append(_run_to_end(execute(prog, dev, x)))
    tiles = {(i.w_addr, i.rows, i.cols) for i in prog.instructions if isinstance(i, LoadWeights)}
    executed = sum(len(st.cycles) for st in results[0].segments)
    assert calls["decode"] == executed
    assert 0 < calls["array_weights"] <= len(tiles) * 8  # once per (tile, G), not once per run
    first = calls["array_weights"]
    mach.clear_buffers()
    _run_to_end(execute(prog, InterpretedDevice(prog, 1, mach), x))
    assert calls["array_weights"] == first
    ref = golden.run(net, x)
    for res in results:
        for i, out in res.outputs.items():
            assert np.array_equal(out, ref.outputs[i])
    # a new program clears both caches
    mach.load_program(prog)
    _run_to_end(execute(prog, InterpretedDevice(prog, 1, mach), x))
    assert calls["decode"] == 2 * executed
    assert calls["array_weights"] == 2 * first


def test_runstats_start_empty():
    st = RunStats()
    assert (st.cycles, st.activity, st.error, st.total_cycles) == ([], [], None, 0)
