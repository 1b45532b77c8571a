"""The compiler at the edges of its memories and banks (`make mutants` found no test
that compiled at exactly full memories, nor at exactly CMAX channels).

For every memory (instruction, weight, bias, shift, data and partial-sum buffer) a network
compiles when the memory holds exactly what it needs, and runs equal to the golden model there,
and is refused one entry short, with the message naming that memory. `fitted_config` and
`roomy_config` (the cost models' configurations) and `Program.cycles_per_image` are checked
here too, on non-square arrays. Expected values come from the golden model or from the
compiler's own report of what it used (a roomy compile), never from a second computation.
"""

from dataclasses import replace

import numpy as np
import pytest

from fpga import isa
from fpga.arch import ArrayConfig
from fpga.compiler import CompileError, compile_network, fitted_config, roomy_config
from fpga.execute import interpret
from fpga.isa import Halt
from models import golden, ir
from models.numerics import sac
from models.numerics.sac import OutputMode
from models.random_networks import build_bnn, random_combined, random_images

SEED = 5150
RAW, RELU = OutputMode.RAW, OutputMode.RELU_QUANT


def conv(rng, f, k, g, mode=RELU, name=""):
    return ir.PointwiseConv(
        weights=random_combined(rng, f, k, g), bias=rng.integers(-400, 400, f), mode=mode, name=name
    )


def shift(rng, c):
    return ir.ChannelShift(directions=rng.integers(0, 9, c))


# name -> (array, input shape, layers(rng)); each needs the partial-sum buffer, and between
# them the largest partial-sum need comes from an op with 1, 2 and more K-tiles, a raw and a
# pixel-sum output, and the last data-buffer tensor is an output in some, an input in others
NETS = {
    # shift + relu (3 K-tiles) then raw in place (4 K-tiles): one segment
    "shift_relu_raw": ("3x2", (10, 3, 2), lambda r: [shift(r, 10), conv(r, 7, 10, 2), conv(r, 5, 7, 1, RAW)]),
    # one raw op with a single K-tile: its partial sums are its output only
    "raw_one_k_tile": ("3x5", (4, 2, 3), lambda r: [conv(r, 7, 4, 1, RAW)]),
    # raw with exactly two K-tiles
    "raw_two_k_tiles": ("3x2", (8, 2, 2), lambda r: [conv(r, 5, 8, 2, RAW)]),
    # pixel sum after two K-tiles: scratch after the sums
    "pixel_sum": ("3x2", (10, 2, 3), lambda r: [conv(r, 7, 10, 2, RAW), ir.PixelSum()]),
    # two segments, host pooling between; the last data-buffer tensor is the second's input
    "two_segments": (
        "2x3",
        (3, 4, 4),
        lambda r: [conv(r, 6, 3, 1), ir.MaxPool2d(name="pool"), conv(r, 5, 6, 3, RAW, name="head")],
    ),
}
# layer label in the data- and partial-sum-buffer messages (the op that goes past the end)
LABELS = {
    "shift_relu_raw": ("layer 0 (ChannelShift)", "layer 2 (PointwiseConv)"),
    "raw_one_k_tile": ("layer 0 (PointwiseConv)", "layer 0 (PointwiseConv)"),
    "raw_two_k_tiles": ("layer 0 (PointwiseConv)", "layer 0 (PointwiseConv)"),
    "pixel_sum": ("layer 0 (PointwiseConv)", "layer 0 (PointwiseConv)"),
    "two_segments": ("layer 2 (PointwiseConv 'head')", "layer 2 (PointwiseConv 'head')"),
}
MEMORIES = ("imem_depth", "wdepth", "bdepth", "sdepth", "ddepth", "pdepth")


def make(name, seed_offset=0):
    array, shape, layers = NETS[name]
    seed = SEED + list(NETS).index(name) + seed_offset
    print("seed", seed)
    rng = np.random.default_rng(seed)
    net = ir.Network(shape, "uint8", layers(rng), name=name)
    return net, ArrayConfig.parse(array, cmax=16), rng


def usage(prog) -> dict:
    """What a compiled program occupies, per memory, as the compiler reports it."""
    return {
        "imem_depth": len(prog.instructions),
        "wdepth": len(prog.wmem),
        "bdepth": len(prog.bmem),
        "sdepth": len(prog.smem),
        "ddepth": prog.dbuf_used,
        "pdepth": prog.pbuf_used,
    }


def refusal(net, cfg, memory, used, labels) -> str:
    """The message compile_network gives when `memory` is one entry short."""
    if memory == "imem_depth":
        return f"{net.name}: {used['imem_depth']} instructions; the instruction memory holds {cfg.imem_depth}"
    if memory in ("wdepth", "bdepth", "sdepth"):
        return (
            f"{net.name}: needs {used['wdepth']} weight words, {used['bdepth']} biases, "
            f"{used['sdepth']} shift words; the array has {cfg.wdepth}, {cfg.bdepth}, {cfg.sdepth}"
        )
    if memory == "ddepth":
        return (
            f"{labels[0]}: the data buffer needs {used['ddepth']} entries for all tensors; "
            f"the array has {cfg.ddepth}"
        )
    return f"{labels[1]}: needs {used['pdepth']} partial-sum entries; the array has {cfg.pdepth}"


@pytest.mark.parametrize("name", list(NETS))
def test_exactly_full_memories_compile_and_one_short_is_refused(name):
    net, base, rng = make(name)
    used = usage(compile_network(net, roomy_config(base.rows, base.cols, base.cmax)))
    assert min(used.values()) > 0, used
    exact = replace(base, **used)
    prog = compile_network(net, exact)
    assert usage(prog) == used
    x = random_images(rng, 2, net.input_shape, zero_fraction=0.3)
    ref, res = golden.run(net, x), interpret(prog, x)
    for i, out in res.outputs.items():
        assert np.array_equal(out, ref.outputs[i]), i
    for memory in MEMORIES:
        if used[memory] == 1:  # one shift word (the identity): no smaller table exists
            continue
        short = replace(exact, **{memory: used[memory] - 1})
        with pytest.raises(CompileError) as err:
            compile_network(net, short)
        assert str(err.value) == refusal(net, short, memory, used, LABELS[name]), memory


def test_outputs_in_the_data_buffer_use_no_partial_sums():
    """One K-tile, outputs in the data buffer: nothing in the partial-sum buffer."""
    rng = np.random.default_rng(SEED + 20)
    net = ir.Network((4, 3, 3), "uint8", [conv(rng, 5, 4, 1), conv(rng, 3, 5, 1)], name="relu2")
    prog = compile_network(net, ArrayConfig(rows=3, cols=5))
    assert prog.pbuf_used == 0 and prog.dbuf_used == 3 * 9


def test_program_structure():
    """Segments tile the program, each ends with its HALT, and the layers know theirs; the
    images have the buffer's types; inputs are in the data buffer; a pixel sum is one entry
    per filter."""
    net, cfg, _ = make("two_segments")
    prog = compile_network(net, cfg)
    assert [s.index for s in prog.segments] == [0, 1]
    pc = 0
    for s in prog.segments:
        assert s.start_pc == pc and s.n_instr > 1
        body = prog.instructions[s.start_pc : s.start_pc + s.n_instr]
        assert isinstance(body[-1], Halt) and not any(isinstance(i, Halt) for i in body[:-1])
        pc += s.n_instr
    assert pc == len(prog.instructions) == len(prog.words)
    assert [lp.segment for lp in prog.layers] == [0, 1]
    assert [s.layers for s in prog.segments] == [[0], [1]]
    assert all(lp.input.space == "dbuf" for lp in prog.layers)
    assert (prog.wmem.dtype, prog.bmem.dtype, prog.smem.dtype) == (np.uint8, np.int32, np.uint8)
    assert prog.smem.shape == (len(prog.smem), cfg.cols * 8) and prog.wmem.shape[1] == cfg.cols
    fast = compile_network(net, cfg, encode_words=False)
    assert fast.words == [] and fast.instructions == prog.instructions

    net, cfg, rng = make("pixel_sum")
    prog = compile_network(net, cfg)
    out = prog.layers[0].output
    assert (out.space, out.pixel_sum, out.pixels, out.channels) == ("pbuf", True, 1, 7)
    x = random_images(rng, 2, net.input_shape)
    assert interpret(prog, x).outputs[1].shape == (2, 7)


def test_cycles_per_image_is_what_the_interpreter_counts():
    """Every segment of a three-segment program, by the interpreter's own count."""
    rng = np.random.default_rng(SEED + 30)
    print("seed", SEED + 30)
    net = ir.Network(
        (3, 4, 4),
        "uint8",
        [
            conv(rng, 6, 3, 1),
            ir.MaxPool2d(),
            conv(rng, 7, 6, 2),
            ir.SpaceToDepth(factor=2),
            conv(rng, 4, 28, 3, RAW),
        ],
    )
    cfg = ArrayConfig(rows=3, cols=2)
    prog = compile_network(net, cfg)
    assert len(prog.segments) == 3
    res = interpret(prog, random_images(rng, 1, net.input_shape))
    assert prog.cycles_per_image() == sum(st.total_cycles for st in res.segments)


# -- fitted_config and roomy_config -------------------------------------------------------------
FLOORS = {"ddepth": 64, "pdepth": 64, "wdepth": 64, "bdepth": 64, "sdepth": 8, "imem_depth": 16}


@pytest.mark.parametrize("filters", [3, 65, 128, 129])
def test_fitted_config_is_the_smallest_power_of_two(filters):
    """Every memory is a power of two at least its floor; a memory above its floor cannot be
    halved. 65 and 129 biases need 128 and 256 words, 128 exactly 128."""
    rng = np.random.default_rng(SEED + 40 + filters)
    print("seed", SEED + 40 + filters)
    net = ir.Network((5, 2, 2), "uint8", [shift(rng, 5), conv(rng, filters, 5, 1, RAW)], name=f"f{filters}")
    cfg = fitted_config(net, 3, 5, cmax=32)
    assert (cfg.rows, cfg.cols, cfg.cmax) == (3, 5, 32)
    compile_network(net, cfg)
    for memory, floor in FLOORS.items():
        depth = getattr(cfg, memory)
        assert depth >= floor and depth & (depth - 1) == 0, (memory, depth)
        if depth > floor:
            with pytest.raises(CompileError):
                compile_network(net, replace(cfg, **{memory: depth // 2}))
    assert cfg.bdepth == {3: 64, 65: 128, 128: 128, 129: 256}[filters]
    # without cmax: the default array's banks
    assert fitted_config(net, 3, 5).cmax == roomy_config(3, 5).cmax == ArrayConfig().cmax
    if filters == 3:
        assert {m: getattr(cfg, m) for m in FLOORS} == FLOORS


def test_fitted_config_of_a_bnn_on_a_wide_array():
    rng = np.random.default_rng(SEED + 50)
    print("seed", SEED + 50)
    net = build_bnn(rng, (2, 10, 10), [[5], [6]], [9], classes=4)
    cfg = fitted_config(net, 2, 7, cmax=16)
    prog = compile_network(net, cfg)
    x = random_images(rng, 2, net.input_shape)
    ref, res = golden.run(net, x), interpret(prog, x)
    assert np.array_equal(res.outputs[len(net.layers) - 1], ref.outputs[len(net.layers) - 1])
    for memory, floor in FLOORS.items():
        depth = getattr(cfg, memory)
        if depth > floor:
            with pytest.raises(CompileError):
                compile_network(net, replace(cfg, **{memory: depth // 2}))


def test_roomy_config():
    """The array's shape is kept; the data and partial-sum buffers are as deep as the 20-bit
    address fields reach; every memory is larger than the default one: a network that
    overflows each default memory compiles."""
    cfg = roomy_config(2, 3, cmax=32)
    assert (cfg.rows, cfg.cols, cfg.cmax) == (2, 3, 32)
    widths = {name: width for name, _, width in isa._MM_FIELDS}
    assert cfg.ddepth == 1 << widths["in_addr"] == 1 << widths["out_addr"]
    assert cfg.pdepth == 1 << widths["acc_addr"]
    rng = np.random.default_rng(SEED + 60)
    # 65 channels in 65 shifted K-tiles, 513 filters in 3 N-tiles, 520 pixels
    big = ir.PointwiseConv(
        weights=sac.combine_columns(np.ones((513, 65), np.int32), 1), bias=np.zeros(513, np.int32), mode=RAW
    )
    net = ir.Network((65, 1, 520), "uint8", [shift(rng, 65), big])
    prog = compile_network(net, roomy_config(255, 1), encode_words=False)
    default = ArrayConfig(rows=255, cols=1)
    for memory, used in usage(prog).items():
        assert used > getattr(default, memory), memory
    with pytest.raises(CompileError):
        compile_network(net, default, encode_words=False)


# -- chunks at exactly CMAX ---------------------------------------------------------------------
def run_equal(net, cfg, rng):
    prog = compile_network(net, cfg)
    x = random_images(rng, 2, net.input_shape, zero_fraction=0.3)
    ref, res = golden.run(net, x), interpret(prog, x)
    for i, out in res.outputs.items():
        assert np.array_equal(out, ref.outputs[i]), i
    return prog


def test_chunks_at_exactly_cmax():
    rng = np.random.default_rng(SEED + 70)
    print("seed", SEED + 70)
    # 16 channels, one per column: the tensor and every window fit the 16 banks exactly
    prog = run_equal(
        ir.Network((16, 2, 2), "uint8", [conv(rng, 5, 16, 1)]), ArrayConfig(rows=3, cols=4, cmax=16), rng
    )
    assert prog.layers[0].input.chunk == 0
    # 16 channels in groups of 3: the last window reaches channel 17, past the banks
    prog = run_equal(
        ir.Network((16, 2, 2), "uint8", [conv(rng, 5, 16, 3)]), ArrayConfig(rows=3, cols=4, cmax=16), rng
    )
    assert prog.layers[0].input.chunk == 12
    # a 16-channel window (8 columns x 2) and 20 channels: chunks of exactly CMAX
    prog = run_equal(
        ir.Network((20, 2, 2), "uint8", [conv(rng, 5, 20, 2)]), ArrayConfig(rows=3, cols=8, cmax=16), rng
    )
    assert prog.layers[0].input.chunk == 16


def test_output_chunks_follow_the_rows_and_the_next_window():
    """20 outputs of a 3-row array, over 16 banks: read by the host, chunks of 15 (the most
    rows that fit); read in place by a 4-channel window, chunks of 12 (lcm(4, 3))."""
    rng = np.random.default_rng(SEED + 80)
    print("seed", SEED + 80)
    cfg = ArrayConfig(rows=3, cols=4, cmax=16)
    prog = run_equal(ir.Network((4, 2, 2), "uint8", [conv(rng, 20, 4, 1)]), cfg, rng)
    assert prog.layers[0].output.chunk == 15
    prog = run_equal(
        ir.Network((4, 2, 2), "uint8", [conv(rng, 20, 4, 1), conv(rng, 6, 20, 1), conv(rng, 5, 6, 2, RAW)]),
        cfg,
        rng,
    )
    assert [lp.output.chunk for lp in prog.layers[:2]] == [12, 0]
    assert [lp.input.addr for lp in prog.layers] == [
        0,
        prog.layers[0].output.addr,
        prog.layers[1].output.addr,
    ]
    # 16 outputs read by a window of 3 x 3 = 9 channels that reaches channel 18
    prog = run_equal(
        ir.Network((4, 2, 2), "uint8", [conv(rng, 16, 4, 1), conv(rng, 5, 16, 3, RAW)]), cfg, rng
    )
    assert prog.layers[0].output.chunk == 12


def test_chunk_refusals_name_the_layer():
    rng = np.random.default_rng(SEED + 90)
    # the input's window: 8 columns x 3 = 24 channels > 16 banks
    net = ir.Network((20, 2, 2), "uint8", [conv(rng, 4, 20, 3, name="wide")])
    with pytest.raises(CompileError) as err:
        compile_network(net, ArrayConfig(rows=2, cols=8, cmax=16))
    assert str(err.value) == (
        "layer 0 (PointwiseConv 'wide'): a tile window of 24 channels and 1 "
        "rows cannot share chunks of at most 16 banks"
    )
    # the output's: 5 rows and the next op's 4-channel window need chunks of 20 > 16
    net = ir.Network((4, 2, 2), "uint8", [conv(rng, 20, 4, 1, name="tall"), conv(rng, 3, 20, 1)])
    with pytest.raises(CompileError) as err:
        compile_network(net, ArrayConfig(rows=5, cols=4, cmax=16))
    assert str(err.value) == (
        "layer 0 (PointwiseConv 'tall'): a tile window of 4 channels and 5 "
        "rows cannot share chunks of at most 16 banks"
    )
