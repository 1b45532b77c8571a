"""Bench for rtl/instruction_decoder.v, with the instruction memory played by the bench.

Programs: compiled from random networks (valid), the same with one random bit flipped in one
random word (valid or not), every opcode 0..15 as a word of its own, and hand-made malformed
words for every error code. For each, the expected outcome comes from fpga.isa.check_program
(error code and the index of the failing word) and fpga.cycle_model (the cycle every
instruction retires), and the RTL must match both exactly.
"""

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

from fpga.arch import ArrayConfig
from fpga.compiler import compile_network
from fpga.cycle_model import program_timeline
from fpga.isa import ErrorCode, Halt, IsaError, LoadWeights, Matmul, check_program, decode, encode
from models.numerics.sac import OutputMode
from models.random_networks import random_sac_network
from tb.bitserial import start_clock
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run

SEED = 8086    # the default seed (plus an offset per parameter set, if any); tb/seeds.py
def expected(words, cfg):
    """(error code or None, failing index, retire cycles) as the models say."""
    image = list(words) + [0] * (cfg.imem_depth - len(words))
    try:
        instrs = check_program(image, cfg)
    except IsaError as exc:
        # check_program accepted every word before the failing one
        ok = [decode(w, i) for i, w in enumerate(image[:exc.index])]
        return exc.code, exc.index, [s.end for s in program_timeline(ok + [Halt()], cfg)][:-1]
    return None, None, [s.end for s in program_timeline(instrs, cfg)]


async def run_program(dut, words, cfg, limit=200_000, start_pc=0, prefix=()):
    """Play the instruction memory (`prefix` words before the program, which starts at
    `start_pc`); return (error, code, pc, retire cycles, cycles)."""
    image = list(prefix) + list(words)
    image += [0] * (cfg.imem_depth - len(image))
    dut.start_pc.value = start_pc
    dut.start.value = 1
    await FallingEdge(dut.clk)
    dut.start.value = 0
    retires = []
    addr_prev = 0
    for cycle in range(limit):
        # registered read: the word for the address seen last cycle
        dut.imem_data.value = image[addr_prev] if addr_prev < len(image) else 0
        await ReadOnly()                # let `retire` settle on this cycle's word
        addr_prev = int(dut.imem_addr.value)
        if str(dut.retire.value) == "1":
            retires.append(cycle + 1)
        if str(dut.done.value) == "1":
            result = (int(dut.error.value), int(dut.error_code.value), int(dut.pc.value),
                      retires, cycle)
            await FallingEdge(dut.clk)
            return result
        await FallingEdge(dut.clk)
    raise AssertionError("decoder never finished")


async def check_case(dut, cfg, words, label, prefix=()):
    """Run `words` placed after `prefix` (started at len(prefix)); compare with the models."""
    code, index, ends = expected(words, cfg)
    if code is not None and index is not None:
        index += len(prefix)
    err, got_code, pc, retires, total = await run_program(dut, words, cfg, start_pc=len(prefix),
                                                          prefix=prefix)
    if code is None:
        assert not err, f"{label}: unexpected error {ErrorCode(got_code).name} at {pc}"
        assert retires == ends, f"{label}: retires {retires} != model {ends}"
    else:
        assert err and got_code == code and pc == index, \
            f"{label}: got error={err} {ErrorCode(got_code).name} at {pc}, want {code.name} at {index}"
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
        net = random_sac_network(rng, in_shape=(3 * cfg.cols + 1, 2, 3), widths=(cfg.rows + 1,),
                                 groups=(3, 2), final=final, classes=cfg.rows + 1)
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
    lw = encode(LoadWeights(rows=1, cols=1))
    for opcode in range(16):
        await check_case(dut, cfg, [lw, opcode], f"opcode {opcode}")
    mm = dict(height=2, width=2, in_addr=0, out_addr=8, mode=OutputMode.RELU_QUANT)
    malformed = [
        encode(LoadWeights(rows=cfg.rows + 1, cols=1)),
        encode(LoadWeights(rows=1, cols=1)) & ~(0xFF << 16),    # cols = 0
        encode(LoadWeights(rows=2, cols=1, w_addr=cfg.wdepth - 1)),
        encode(LoadWeights(rows=2, cols=1, b_addr=cfg.bdepth - 1)),
        encode(LoadWeights(rows=1, cols=1, s_addr=cfg.sdepth)),
        encode(Matmul(**{**mm, "height": 0})),
        encode(Matmul(**{**mm, "height": cfg.ddepth, "width": 2})),
        encode(Matmul(**{**mm, "in_addr": cfg.ddepth - 3})),
        encode(Matmul(**{**mm, "in_ch": cfg.cmax})),
        encode(Matmul(**{**mm, "out_ch": cfg.cmax})),
        encode(Matmul(**{**mm, "out_addr": 2})),
        encode(Matmul(**{**mm, "mode": OutputMode.RAW, "out_addr": cfg.pdepth - 3})),
        encode(Matmul(**{**mm, "mode": OutputMode.PIXEL_SUM, "out_addr": cfg.pdepth})),
        encode(Matmul(**{**mm, "mode": OutputMode.RAW, "acc_in": True, "acc_addr": cfg.pdepth - 1})),
        encode(Matmul(**{**mm, "mode": OutputMode.RAW, "acc_in": True, "acc_addr": 0, "out_addr": 2})),
        encode(Matmul(**mm)) | (1 << 11),
        encode(Matmul(**mm)) | (1 << 12),                 # fill without shift_en
        encode(Halt()) | (1 << 100),
    ]
    seen = set()
    for j, word in enumerate(malformed):
        words = [lw, word, encode(Halt())]
        code, _, _ = expected(words, cfg)
        seen.add(code)
        await check_case(dut, cfg, words, f"malformed {j}")
    await check_case(dut, cfg, [encode(Matmul(**mm)), encode(Halt())], "no weights")
    filled = [lw] * cfg.imem_depth                         # no HALT anywhere
    await check_case(dut, cfg, filled, "runs off the end")
    want = {c for c in ErrorCode if c not in (ErrorCode.NONE, ErrorCode.ILLEGAL_OPCODE,
                                              ErrorCode.NO_WEIGHTS, ErrorCode.PC_OVERFLOW)}
    assert want <= seen, f"error codes not exercised: {want - seen}"
    dut._log.info(f"{len(valid)} programs, {n_flip} bit flips, 16 opcodes, {len(malformed)} "
                  "malformed words, no-weights and overflow cases: match")


CONFIGS = {
    "8x8": ArrayConfig(rows=8, cols=8, cmax=64, ddepth=256, pdepth=128, wdepth=256, bdepth=128,
                       sdepth=16, imem_depth=64),
    "5x3": ArrayConfig(rows=5, cols=3, cmax=16, ddepth=64, pdepth=32, wdepth=64, bdepth=32,
                       sdepth=8, imem_depth=32),
}


@pytest.mark.parametrize("array", list(CONFIGS))
@pytest.mark.parametrize("sim", SIMULATORS)
def test_instruction_decoder(sim, array):
    params = CONFIGS[array].hdl_parameters()
    params["IAW"] = max(1, (params["IMEM_DEPTH"] - 1).bit_length())
    run("instruction_decoder", "test_instruction_decoder", sim, params, seed=bench_seed(SEED))
