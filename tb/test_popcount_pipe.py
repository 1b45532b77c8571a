"""Bench for rtl/popcount_pipe.v, the array's pipelined activity count: a new random bit vector
every cycle (all zeros and all ones included, densities from sparse to full); the count that
comes out LATENCY cycles later must equal the golden activity count of those bits
(models.numerics.sac.count_active of one all-ones weight row against the bits as data), and the
latency must be the one the module documents (1 + its inner levels)."""

import os

import cocotb
import numpy as np
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

from models.numerics import sac
from tb.bitserial import pack_bits, start_clock
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run


def latency(n: int) -> int:
    """1 (leaves of 3 bits) + one cycle per level of 4-input nodes down to a single root."""
    nodes, levels = (n + 2) // 3, 0
    while nodes > 1:
        nodes, levels = (nodes + 3) // 4, levels + 1
    return 1 + levels


@cocotb.test()
async def counts(dut):
    n = int(os.environ["PARAM_N"])
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    vectors = [np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64)]
    vectors += [
        (rng.random(n) < density).astype(np.int64) for density in rng.choice([0.02, 0.2, 0.5, 0.9], size=60)
    ]
    delay = latency(n)
    got = []
    for cycle in range(len(vectors) + delay):
        dut.bits.value = pack_bits(vectors[cycle]) if cycle < len(vectors) else 0
        await ReadOnly()
        if cycle >= delay:
            got.append(int(dut.count.value))
        await FallingEdge(dut.clk)
    want = [sac.count_active(np.ones((1, n), dtype=np.int64), v[:, None]) for v in vectors]
    assert got == want, f"N={n}: counts {got[:6]}..., want {want[:6]}..."
    dut._log.info(f"N={n}: {len(vectors)} vectors, latency {delay}: match")


@pytest.mark.parametrize("n", [1, 4, 64, 257], ids=lambda n: f"{n}bit")
@pytest.mark.parametrize("sim", SIMULATORS)
def test_popcount_pipe(sim, n):
    run(
        "popcount_pipe",
        "test_popcount_pipe",
        sim,
        {"N": n, "W": max(2, n.bit_length()), "MAX_LATENCY": 20},
        seed=bench_seed("popcount_pipe", n),
    )
