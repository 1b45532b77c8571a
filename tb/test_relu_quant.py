"""Bench for rtl/relu_quant.v, every output mode. Expected values come only from the golden
model, models.numerics.sac (`apply_mode`, through tb.tlm.relu_quant.expected_result): `raw` is
the accumulator in every mode, `result` its ReLU & quantization (mode 0) or binarization
(mode 1). Each target word arrives as a serial word plus an initial value that the block adds
when the word completes: serial = target - init modulo 2^32, so the addition wraps.

Two cocotb tests, one simulation, each with its own stream of the bench's seed:

* `random_bursts` (transaction level, tb.tlm.relu_quant): EDGES and SINGLE_BITS in every mode
  with initial value 0, then 6 bursts of random words that change mode word by word (edges,
  small and full-range words, the extremes as initial values one time in five); the scoreboard
  also holds every result to its documented cycle (8p + 31 from the burst's first bit) and
  counts that `valid` rises once per word.
* `every_mode_with_a_running_phase`: the phase counter runs freely, as in the array (every 8th
  cycle completes some lane's word, before the first word too) and `init` carries junk in every
  cycle that completes no word of the test; per mode, EDGES and SINGLE_BITS then random words
  (full range and small), with random initial values, the int32 extremes first.
"""

import cocotb
import numpy as np
import pytest
from cocotb.triggers import FallingEdge

from models.checks import INT32_MAX, INT32_MIN
from tb.bitserial import LaneStreams, pack_bits, start_clock
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run
from tb.tlm.relu_quant import AccWord, ReluQuantEnv, expected_result

# the quantizer's and the binarizer's edges (SHIFT 6: 64 per step, 255 << 6 = 16320 saturates)
# and the int32 extremes. 1 << 30: bit 30 alone must saturate (a saturation test that skips
# bit 30 survived the random words: `make mutants`, mutant rq_saturate_slice)
EDGES = [
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
# one set bit at every position: the saturation test must look at every bit above the byte
# (a mutant reading bits 29..14 instead of 30..14 passed words drawn at random)
SINGLE_BITS = [1 << k for k in range(31)] + [-(1 << k) for k in range(32)]
EXTREME_INITS = [INT32_MIN, INT32_MAX, -1, 0]


def random_int32(rng) -> int:
    return int(rng.integers(INT32_MIN, INT32_MAX + 1))


def random_words(rng, n: int) -> list[AccWord]:
    words = []
    for _ in range(n):
        kind = int(rng.integers(3))
        acc = (
            int(rng.choice(EDGES))
            if kind == 0
            else int(rng.integers(-20000, 20000))
            if kind == 1
            else random_int32(rng)
        )
        init = int(rng.choice(EXTREME_INITS)) if rng.random() < 0.2 else random_int32(rng)
        words.append(AccWord(acc, init, int(rng.integers(4))))
    return words


@cocotb.test()
async def random_bursts(dut):
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    env = ReluQuantEnv(dut, rng)
    env.start()
    await env.send([AccWord(a, 0, m) for m in range(4) for a in EDGES + SINGLE_BITS])  # every mode
    for _ in range(6):
        await env.send(random_words(rng, int(rng.integers(1, 40))))
    matched = await env.check()
    assert matched == len(env.sent) == env.monitor.seen, (matched, len(env.sent), env.monitor.seen)


@cocotb.test()
async def every_mode_with_a_running_phase(dut):
    rng = seeded_rng(dut._log, stream=1)
    words = np.array(
        EDGES
        + SINGLE_BITS
        + list(rng.integers(INT32_MIN, INT32_MAX + 1, size=20))
        + list(rng.integers(-20000, 20000, size=20)),
        dtype=np.int64,
    )
    inits = rng.integers(INT32_MIN, INT32_MAX + 1, size=len(words))
    inits[: len(EXTREME_INITS)] = EXTREME_INITS
    serial = (words - inits + 2**31) % 2**32 - 2**31
    await start_clock(dut)
    for mode in range(4):
        want = [expected_result(AccWord(int(w), int(i), mode), 0) for w, i in zip(words, inits, strict=True)]
        dut.mode.value = mode
        lanes = LaneStreams(serial, 0)
        raws, results = [], []
        for cycle in range(8 * len(words) + 40):
            dut.serial_in.value = pack_bits(lanes.bits_at(cycle))
            dut.phase.value = cycle % 32
            # word p shows bit 31 at cycle 8p + 31; other cycles carry junk the block must ignore
            p, rem = divmod(cycle - 31, 8)
            ready = rem == 0 and 0 <= p < len(words)
            dut.init.value = (int(inits[p]) if ready else random_int32(rng)) & 0xFFFFFFFF
            # lane L's word p completes at cycle 8p + 31; earlier pulses are pre-start lanes
            if str(dut.valid.value) == "1" and 32 <= cycle < 32 + 8 * len(words):
                raws.append(dut.raw.value.to_signed())
                results.append(int(dut.result.value))
            await FallingEdge(dut.clk)
        assert raws == [r.raw for r in want], f"mode {mode}: raw words differ"
        if mode in (0, 1):  # the result byte is unused in modes 2 and 3
            assert results == [r.result for r in want], f"mode {mode}: results differ"
        dut._log.info(f"mode {mode}: {len(words)} words match")


@pytest.mark.parametrize("sim", SIMULATORS)
def test_relu_quant(sim):
    run(
        "relu_quant",
        "test_relu_quant",
        sim,
        {"LANES": 4, "ACC_BITS": 32, "SHIFT": 6},
        seed=bench_seed("relu_quant"),
    )
