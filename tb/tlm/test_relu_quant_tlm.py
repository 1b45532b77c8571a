"""Transaction-level bench of rtl/relu_quant.v (tb.tlm.relu_quant): bursts of random
accumulator words, with the int32 extremes, the quantizer's edges and a single set bit at every
position, in every mode, each
with a random initial value (so the block's addition wraps); the scoreboard asks
models.numerics.sac for every result and checks each arrives in its documented cycle."""

import cocotb
import pytest

from models.checks import INT32_MAX, INT32_MIN
from tb.bitserial import start_clock
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run
from tb.tlm.relu_quant import AccWord, ReluQuantEnv

SEED = 2718  # the default seed (plus an offset per parameter set, if any); tb/seeds.py
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
    16319,
    16320,
    16383,
    16384,
    INT32_MAX - 1,
    INT32_MAX,
]
# one set bit at every position: the saturation test must look at every bit above the byte
# (a mutant reading bits 29..14 instead of 30..14 passed words drawn at random)
SINGLE_BITS = [1 << k for k in range(31)] + [-(1 << k) for k in range(32)]


def random_words(rng, n: int) -> list[AccWord]:
    words = []
    for _ in range(n):
        kind = int(rng.integers(3))
        acc = (
            int(rng.choice(EDGES))
            if kind == 0
            else int(rng.integers(-20000, 20000))
            if kind == 1
            else int(rng.integers(INT32_MIN, INT32_MAX + 1))
        )
        init = (
            int(rng.choice([INT32_MIN, INT32_MAX, -1, 0]))
            if rng.random() < 0.2
            else int(rng.integers(INT32_MIN, INT32_MAX + 1))
        )
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


@pytest.mark.parametrize("sim", SIMULATORS)
def test_relu_quant_tlm(sim):
    run(
        "relu_quant",
        "tb.tlm.test_relu_quant_tlm",
        sim,
        {"LANES": 4, "ACC_BITS": 32, "SHIFT": 6},
        seed=bench_seed(SEED),
    )
