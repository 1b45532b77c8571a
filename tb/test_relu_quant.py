"""Bench for rtl/relu_quant.v: every mode at the 32-bit extremes; expected values from
models.numerics.sac.relu_quant / binarize (raw words pass unchanged). Each target word arrives
as a serial word plus an initial value (random, with the int32 extremes) that the block adds
when the word completes: serial = target - init modulo 2^32, so the wrap is exercised."""

import cocotb
import numpy as np
import pytest
from cocotb.triggers import FallingEdge

from models.checks import INT32_MAX, INT32_MIN
from models.numerics import sac
from tb.bitserial import LaneStreams, pack_bits, start_clock
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run

SEED = 1618  # the default seed (plus an offset per parameter set, if any); tb/seeds.py
# 1 << 30: bit 30 alone must saturate (a saturation test that skips bit 30 survived the random
# words: `make mutants`, mutant rq_saturate_slice)
EXTREMES = [
    INT32_MIN,
    INT32_MIN + 1,
    -65,
    -64,
    -63,
    -1,
    0,
    1,
    63,
    64,
    65,
    127,
    128,
    16319,
    16320,
    16383,
    16384,
    1 << 24,
    1 << 30,
    INT32_MAX - 1,
    INT32_MAX,
]


@cocotb.test()
async def every_mode(dut):
    rng = seeded_rng(dut._log)
    words = np.array(
        EXTREMES
        + list(rng.integers(INT32_MIN, INT32_MAX + 1, size=20))
        + list(rng.integers(-20000, 20000, size=20)),
        dtype=np.int64,
    )
    inits = rng.integers(INT32_MIN, INT32_MAX + 1, size=len(words))
    inits[:4] = [INT32_MIN, INT32_MAX, -1, 0]
    serial = (words - inits + 2**31) % 2**32 - 2**31
    await start_clock(dut)
    for mode in range(4):
        dut.mode.value = mode
        lanes = LaneStreams(serial, 0)
        raws, results = [], []
        for cycle in range(8 * len(words) + 40):
            dut.serial_in.value = pack_bits(lanes.bits_at(cycle))
            dut.phase.value = cycle % 32
            # word p shows bit 31 at cycle 8p + 31; other cycles carry junk the block must ignore
            p, rem = divmod(cycle - 31, 8)
            ready = rem == 0 and 0 <= p < len(words)
            dut.init.value = int(inits[p] if ready else rng.integers(INT32_MIN, INT32_MAX + 1)) & 0xFFFFFFFF
            # lane L's word p completes at cycle 8p + 31; earlier pulses are pre-start lanes
            if str(dut.valid.value) == "1" and 32 <= cycle < 32 + 8 * len(words):
                raws.append(dut.raw.value.to_signed())
                results.append(int(dut.result.value))
            await FallingEdge(dut.clk)
        assert raws == words.tolist(), f"mode {mode}: raw words differ"
        if mode == 0:
            assert results == sac.relu_quant(words).tolist()
        elif mode == 1:
            assert results == sac.binarize(words).tolist()
        dut._log.info(f"mode {mode}: {len(words)} words match")


@pytest.mark.parametrize("sim", SIMULATORS)
def test_relu_quant(sim):
    run("relu_quant", "test_relu_quant", sim, {"LANES": 4, "ACC_BITS": 32, "SHIFT": 6}, seed=bench_seed(SEED))
