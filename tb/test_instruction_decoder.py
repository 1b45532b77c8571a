"""Bench for rtl/instruction_decoder.v, with the instruction memory played by the bench.

Programs: compiled from random networks (valid), the same with one random bit flipped in one
random word (valid or not), every opcode 0..15 as a word of its own, hand-made malformed
words for every error code, and random valid instructions with every field drawn over its
legal range (compiled programs leave fill at 0 and many fields at a few values). For each, the
expected outcome comes from fpga.isa.check_program (error code and the index of the failing
word) and fpga.cycle_model (the cycle every instruction retires), and the RTL must match both
exactly; every instruction it executes must present the fields fpga.isa.decode reads from the
same word.
"""

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

from fpga.arch import ArrayConfig
from fpga.compiler import compile_network
from fpga.cycle_model import program_timeline
from fpga.isa import (
    DecoderState,
    ErrorCode,
    Halt,
    IsaError,
    LoadWeights,
    Matmul,
    check,
    check_program,
    decode,
    encode,
)
from models.numerics.sac import OutputMode
from models.random_networks import random_sac_network
from tb.bitserial import start_clock
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run

# decoder outputs per instruction type: port name -> fpga.isa field (the RTL's `pixels` is the
# decoded instruction's height x width, `tile_rows`/`tile_cols` the last LOAD_WEIGHTS' shape)
LW_PORTS = {name: name for name in ("rows", "cols", "w_addr", "b_addr", "s_addr")}
MM_PORTS = {
    name: name
    for name in (
        "mode",
        "acc_in",
        "shift_en",
        "group",
        "fill",
        "height",
        "width",
        "in_addr",
        "out_addr",
        "in_ch",
        "out_ch",
        "acc_addr",
        "pixels",
    )
}


def expected(words, cfg):
    """(error code or None, failing index, retire cycles, executed instructions' decoded
    fields) as the models say."""
    image = list(words) + [0] * (cfg.imem_depth - len(words))
    try:
        instrs = check_program(image, cfg)
    except IsaError as exc:
        # check_program accepted every word before the failing one
        ok = [decode(w, i) for i, w in enumerate(image[: exc.index])]
        return (
            exc.code,
            exc.index,
            [s.end for s in program_timeline(ok + [Halt()], cfg)][:-1],
            decoded_fields(ok),
        )
    return None, None, [s.end for s in program_timeline(instrs, cfg)], decoded_fields(instrs)


def decoded_fields(instrs):
    """The field values of every executed instruction (HALT has none), as fpga.isa decodes
    them: what the decoder must present while it executes that instruction."""
    out, tile = [], (0, 0)
    for ins in instrs:
        if isinstance(ins, LoadWeights):
            tile = (ins.rows, ins.cols)
            out.append({port: int(getattr(ins, f)) for port, f in LW_PORTS.items()})
        elif isinstance(ins, Matmul):
            out.append({port: int(getattr(ins, f)) for port, f in MM_PORTS.items()})
        else:
            continue
        out[-1]["tile_rows"], out[-1]["tile_cols"] = tile
    return out


# what the decoder hands over in the cycle before an instruction's FETCH (mm_pre, lw_pre): port
# -> fpga.isa field, which the top starts the MATMUL's bank reads and the shift word's read from
PRE_MM_PORTS = {
    "pre_in_ch": "in_ch",
    "pre_shift_en": "shift_en",
    "pre_in_addr": "in_addr",
    "pre_height": "height",
    "pre_width": "width",
}
PRE_LW_PORTS = {"pre_s_addr": "s_addr"}


def sample_pre(dut, cycle, pres):
    """Record (cycle, fields) when mm_pre or lw_pre is high, the fields named as fpga.isa's."""
    for flag, ports in (("mm_pre", PRE_MM_PORTS), ("lw_pre", PRE_LW_PORTS)):
        if str(getattr(dut, flag).value) == "1":
            pres.append((cycle, {f: int(getattr(dut, port).value) for port, f in ports.items()}))


def sample_fields(dut):
    """The decoder's field outputs of the instruction it is executing."""
    ports = LW_PORTS if str(dut.exec_lw.value) == "1" else MM_PORTS
    return {port: int(getattr(dut, port).value) for port in [*ports, "tile_rows", "tile_cols"]}


def draw(rng, lo, hi):
    """A random integer in lo..hi (both included)."""
    return int(rng.integers(lo, hi + 1))


def random_instructions(rng, cfg, n):
    """n random LOAD_WEIGHTS and MATMUL instructions that check_program accepts, then HALT:
    every field drawn over its legal range for `cfg` (fill 0..255 with the shift on), redrawn
    when the decoder's checks refuse the combination (overlaps)."""
    out, state = [], DecoderState()
    while len(out) < n:
        if not out or rng.random() < 0.3:
            rows, cols = draw(rng, 1, cfg.rows), draw(rng, 1, cfg.cols)
            ins = LoadWeights(
                rows=rows,
                cols=cols,
                w_addr=draw(rng, 0, cfg.wdepth - rows),
                b_addr=draw(rng, 0, cfg.bdepth - rows),
                s_addr=draw(rng, 0, cfg.sdepth - 1),
            )
        else:
            mode = OutputMode(draw(rng, 0, 3))
            group = draw(rng, 1, min(8, cfg.cmax // state.tile_cols))
            height, width = draw(rng, 1, 4), draw(rng, 1, 4)
            p = height * width
            shift_en, acc_in = bool(rng.random() < 0.7), bool(rng.random() < 0.5)
            byte_mode = mode in (OutputMode.RELU_QUANT, OutputMode.BINARY)
            n_out = 1 if mode == OutputMode.PIXEL_SUM else p
            ins = Matmul(
                height=height,
                width=width,
                in_addr=draw(rng, 0, cfg.ddepth - p),
                out_addr=draw(rng, 0, (cfg.ddepth if byte_mode else cfg.pdepth) - n_out),
                mode=mode,
                group=group,
                acc_in=acc_in,
                shift_en=shift_en,
                fill=draw(rng, 0, 255) if shift_en else 0,
                in_ch=draw(rng, 0, cfg.cmax - state.tile_cols * group),
                out_ch=draw(rng, 0, cfg.cmax - state.tile_rows) if byte_mode else 0,
                acc_addr=draw(rng, 0, cfg.pdepth - p) if acc_in else 0,
            )
        try:
            check(ins, cfg, state)
        except IsaError:
            continue
        out.append(ins)
    return [encode(ins) for ins in out] + [encode(Halt())]


async def run_program(dut, words, cfg, limit=200_000, start_pc=0, prefix=()):
    """Play the instruction memory (`prefix` words before the program, which starts at
    `start_pc`); return (error, code, pc, retire cycles, cycles, fields of every executed
    LOAD_WEIGHTS and MATMUL as sampled in its retire cycle, (cycle, fields) of every mm_pre or
    lw_pre, the start's cycle being -1)."""
    image = list(prefix) + list(words)
    image += [0] * (cfg.imem_depth - len(image))

    def word(addr):  # a registered read: the word at last cycle's address
        return image[addr] if addr < len(image) else 0

    addr_prev = 0  # the address the decoder presented in the cycle before

    async def memory_cycle():
        """One cycle of the memory: the word at last cycle's address, then this cycle's address
        once the decoder has settled on it."""
        nonlocal addr_prev
        dut.imem_data.value = word(addr_prev)
        await ReadOnly()
        addr_prev = int(dut.imem_addr.value)

    dut.start_pc.value = start_pc
    await ReadOnly()  # the decoder reads ahead: start_pc while idle
    addr_prev = int(dut.imem_addr.value)
    # the decoder's second word register must hold the word at start_pc in the cycle of
    # `start`: the memory's data are that word from two cycles before on (accelerator.v
    # registers `start` three times so that its memory has read start_pc by then)
    for _ in range(2):
        await FallingEdge(dut.clk)
        await memory_cycle()
    await FallingEdge(dut.clk)
    dut.start.value = 1
    await memory_cycle()
    pres = []
    sample_pre(dut, -1, pres)
    await FallingEdge(dut.clk)
    dut.start.value = 0
    retires, fields = [], []
    for cycle in range(limit):
        await memory_cycle()  # `retire` settles on this cycle's word
        sample_pre(dut, cycle, pres)
        if str(dut.retire.value) == "1":
            retires.append(cycle + 1)
            if "1" in (str(dut.exec_lw.value), str(dut.exec_mm.value)):
                fields.append(sample_fields(dut))
        if str(dut.done.value) == "1":
            result = (
                int(dut.error.value),
                int(dut.error_code.value),
                int(dut.pc.value),
                retires,
                cycle,
                fields,
                pres,
            )
            await FallingEdge(dut.clk)
            return result
        await FallingEdge(dut.clk)
    raise AssertionError("decoder never finished")


async def check_case(dut, cfg, words, label, prefix=()):
    """Run `words` placed after `prefix` (started at len(prefix)); compare with the models."""
    code, index, ends, want_fields = expected(words, cfg)
    if code is not None and index is not None:
        index += len(prefix)
    err, got_code, pc, retires, total, fields, pres = await run_program(
        dut, words, cfg, start_pc=len(prefix), prefix=prefix
    )
    # executed instruction j's mm_pre or lw_pre: in the cycle before its FETCH (the start's, or
    # instruction j - 1's retire), with the fields it executes with; a word that fails its
    # checks may have one more after them
    want_pres = [
        (
            -1 if j == 0 else retires[j - 1] - 1,
            {f: want[f] for f in (PRE_LW_PORTS if "rows" in want else PRE_MM_PORTS).values()},
        )
        for j, want in enumerate(want_fields)
    ]
    assert pres[: len(want_pres)] == want_pres, (
        f"{label}: (cycle, fields) of mm_pre/lw_pre: RTL {pres[: len(want_pres)][:3]}..., "
        f"want {want_pres[:3]}..."
    )
    assert len(pres) <= len(want_pres) + 1, (
        f"{label}: {len(pres)} mm_pre/lw_pre for {len(want_pres)} instructions"
    )
    for j, (got, want) in enumerate(zip(fields, want_fields, strict=True)):
        bad = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
        assert not bad, f"{label}: executed instruction {j}: (RTL, isa.decode) differ: {bad}"
    assert len(fields) == len(want_fields), (
        f"{label}: {len(fields)} instructions executed, the models say {len(want_fields)}"
    )
    if code is None:
        assert not err, f"{label}: unexpected error {ErrorCode(got_code).name} at {pc}"
        assert retires == ends, f"{label}: retires {retires} != model {ends}"
    else:
        assert err and got_code == code and pc == index, (
            f"{label}: got error={err} {ErrorCode(got_code).name} at {pc}, want {code.name} at {index}"
        )
        assert retires == ends, f"{label}: retires {retires} before the error != model {ends}"
        assert total == (ends[-1] if ends else 0) + 2, f"{label}: FETCH+DECODE of the bad word"


@cocotb.test()
async def programs_and_malformed_words(dut):
    cfg = ArrayConfig.from_env()
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    dut.rst.value = 1
    dut.start.value = 0
    dut.start_pc.value = 0
    dut.imem_data.value = 0
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    await FallingEdge(dut.clk)

    valid = []
    for final in ("pixel_sum", "raw", "binary", "relu_quant"):
        net = random_sac_network(
            rng,
            in_shape=(3 * cfg.cols + 1, 2, 3),
            widths=(cfg.rows + 1,),
            groups=(3, 2),
            final=final,
            classes=cfg.rows + 1,
        )
        words = compile_network(net, cfg).words
        valid.append(words)
        await check_case(dut, cfg, words, f"compiled {final}")
    # a program that starts mid-memory (segments): garbage before it is never fetched
    await check_case(dut, cfg, valid[0], "start_pc 3", prefix=[0x3, 0x0, encode(Halt())])
    n_flip = 0
    for trial in range(40):
        words = list(valid[trial % len(valid)])
        i = int(rng.integers(0, len(words)))
        words[i] ^= 1 << int(rng.integers(0, 128))
        n_flip += 1
        await check_case(dut, cfg, words, f"bit flip {trial} in word {i}")
    # every field of every executed instruction, over its range (compiled programs fill with 0)
    for trial in range(3):
        words = random_instructions(rng, cfg, min(12, cfg.imem_depth - 1))
        await check_case(dut, cfg, words, f"random instructions {trial}")
    lw = encode(LoadWeights(rows=1, cols=1))
    for opcode in range(16):
        await check_case(dut, cfg, [lw, opcode], f"opcode {opcode}")
    mm = dict(height=2, width=2, in_addr=0, out_addr=8, mode=OutputMode.RELU_QUANT)
    malformed = [
        encode(LoadWeights(rows=cfg.rows + 1, cols=1)),
        encode(LoadWeights(rows=1, cols=1)) & ~(0xFF << 16),  # cols = 0
        encode(LoadWeights(rows=2, cols=1, w_addr=cfg.wdepth - 1)),
        encode(LoadWeights(rows=2, cols=1, b_addr=cfg.bdepth - 1)),
        encode(LoadWeights(rows=1, cols=1, s_addr=cfg.sdepth)),
        encode(Matmul(**{**mm, "height": 0})),
        encode(Matmul(**{**mm, "height": min(cfg.ddepth, 4095), "width": 2})),  # 12-bit field
        encode(Matmul(**{**mm, "in_addr": cfg.ddepth - 3})),
        encode(Matmul(**{**mm, "in_ch": cfg.cmax})),
        encode(Matmul(**{**mm, "out_ch": cfg.cmax})),
        encode(Matmul(**{**mm, "out_addr": 2})),
        encode(Matmul(**{**mm, "mode": OutputMode.RAW, "out_addr": cfg.pdepth - 3})),
        encode(Matmul(**{**mm, "mode": OutputMode.PIXEL_SUM, "out_addr": cfg.pdepth})),
        encode(Matmul(**{**mm, "mode": OutputMode.RAW, "acc_in": True, "acc_addr": cfg.pdepth - 1})),
        encode(Matmul(**{**mm, "mode": OutputMode.RAW, "acc_in": True, "acc_addr": 0, "out_addr": 2})),
        encode(Matmul(**mm)) | (1 << 11),
        encode(Matmul(**mm)) | (1 << 12),  # fill without shift_en
        encode(Halt()) | (1 << 100),
    ]
    seen = set()
    for j, word in enumerate(malformed):
        words = [lw, word, encode(Halt())]
        code, _, _, _ = expected(words, cfg)
        seen.add(code)
        await check_case(dut, cfg, words, f"malformed {j}")
    await check_case(dut, cfg, [encode(Matmul(**mm)), encode(Halt())], "no weights")
    # legal words at the edges of the checks: ranges that end exactly at their memory's end,
    # and output channels right beside the input window's (same entries, so only the channels
    # keep them apart)
    lw2 = encode(LoadWeights(rows=2, cols=1))
    edge = dict(height=1, width=2, in_addr=0, out_addr=0, mode=OutputMode.RELU_QUANT, group=1)
    edges = {
        "weight rows end at the weight memory's end": [
            encode(LoadWeights(rows=2, cols=1, w_addr=cfg.wdepth - 2))
        ],
        "bias rows end at the bias memory's end": [
            encode(LoadWeights(rows=2, cols=1, b_addr=cfg.bdepth - 2))
        ],
        "output channels end at CMAX": [lw2, encode(Matmul(**edge, in_ch=0, out_ch=cfg.cmax - 2))],
        "output channels right after the input's": [lw2, encode(Matmul(**edge, in_ch=0, out_ch=1))],
        "input channels right after the output's": [lw2, encode(Matmul(**edge, in_ch=2, out_ch=0))],
    }
    # the input window's channels (tile_cols x G) ending exactly at CMAX for every group size,
    # and one channel past it (refused): the decoder's per-group bounds
    tile_cols = min(3, cfg.cols)
    lw_cols = encode(LoadWeights(rows=1, cols=tile_cols))
    window = dict(height=1, width=2, in_addr=0, out_addr=8, mode=OutputMode.RELU_QUANT, out_ch=0)
    past_cmax = 0
    for g in range(1, 9):
        last = cfg.cmax - tile_cols * g  # the highest in_ch that fits
        if last < 0:
            continue
        fits = encode(Matmul(**window, group=g, in_ch=last))
        edges[f"input channels end at CMAX, group {g}"] = [lw_cols, fits]
        words = [lw_cols, encode(Matmul(**window, group=g, in_ch=last + 1)), encode(Halt())]
        assert expected(words, cfg)[0] is not None, f"group {g}: the ISA takes a window past CMAX"
        await check_case(dut, cfg, words, f"input channels past CMAX, group {g}")
        past_cmax += 1
    for label, words in edges.items():
        words = [*words, encode(Halt())]
        assert expected(words, cfg)[0] is None, f"{label}: the ISA refuses it"
        await check_case(dut, cfg, words, label)
    filled = [lw] * cfg.imem_depth  # no HALT anywhere
    await check_case(dut, cfg, filled, "runs off the end")
    want = {
        c
        for c in ErrorCode
        if c not in (ErrorCode.NONE, ErrorCode.ILLEGAL_OPCODE, ErrorCode.NO_WEIGHTS, ErrorCode.PC_OVERFLOW)
    }
    assert want <= seen, f"error codes not exercised: {want - seen}"
    dut._log.info(
        f"{len(valid)} programs, {n_flip} bit flips, 3 random-instruction programs, "
        f"16 opcodes, {len(malformed)} malformed words, {len(edges)} legal edge cases, {past_cmax} "
        "windows past CMAX, no-weights and overflow cases: match"
    )


CONFIGS = {
    "8x8": ArrayConfig(
        rows=8, cols=8, cmax=64, ddepth=256, pdepth=128, wdepth=256, bdepth=128, sdepth=16, imem_depth=64
    ),
    "5x3": ArrayConfig(
        rows=5, cols=3, cmax=16, ddepth=64, pdepth=32, wdepth=64, bdepth=32, sdepth=8, imem_depth=32
    ),
    # the widest memories the instruction fields can address (the largest that still let the
    # malformed words one past the end be encoded): the executed-instruction registers' top
    # bits toggle only here (make coverage's toggle count)
    "wide": ArrayConfig(
        rows=5,
        cols=3,
        cmax=4095,
        ddepth=(1 << 20) - 1,
        pdepth=(1 << 20) - 1,
        wdepth=(1 << 24) - 1,
        bdepth=(1 << 24) - 1,
        sdepth=(1 << 24) - 1,
        imem_depth=32,
    ),
}


@pytest.mark.parametrize("array", list(CONFIGS))
@pytest.mark.parametrize("sim", SIMULATORS)
def test_instruction_decoder(sim, array):
    params = CONFIGS[array].hdl_parameters()
    params["IAW"] = max(1, (params["IMEM_DEPTH"] - 1).bit_length())
    run(
        "instruction_decoder", "test_instruction_decoder", sim, params, seed=bench_seed("instruction_decoder")
    )
