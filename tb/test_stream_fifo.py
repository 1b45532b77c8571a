"""Bench for rtl/stream_fifo.v: random pushes and pops, runs that fill it and drain it, pushes
while full and pops while empty (both ignored, as documented); the head, `empty` and `count`
follow the first-in first-out order of the values pushed (a Python deque of what was accepted)."""

import os
from collections import deque

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

from tb.bitserial import start_clock
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run


@cocotb.test()
async def random_traffic(dut):
    width, depth = int(os.environ["PARAM_WIDTH"]), int(os.environ["PARAM_DEPTH"])
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    dut.rst.value = 1
    dut.push.value = 0
    dut.pop.value = 0
    dut.push_data.value = 0
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    held = deque()
    full_pushes = empty_pops = 0
    for step in range(1500):
        phase = (step // 100) % 3  # 0: mostly push (fills), 1: mostly pop, 2: balanced
        p_push = (0.9, 0.1, 0.5)[phase]
        push, pop = bool(rng.random() < p_push), bool(rng.random() < 1 - p_push)
        data = int(rng.integers(0, 1 << width))
        dut.push.value, dut.pop.value, dut.push_data.value = int(push), int(pop), data
        await ReadOnly()
        assert int(dut.count.value) == len(held), (step, int(dut.count.value), len(held))
        assert int(dut.empty.value) == (not held), step
        if held:
            assert int(dut.head.value) == held[0], (step, int(dut.head.value), held[0])
        took_pop = pop and bool(held)
        took_push = push and len(held) < depth
        full_pushes += push and len(held) == depth
        empty_pops += pop and not held
        await FallingEdge(dut.clk)
        if took_pop:
            held.popleft()
        if took_push:
            held.append(data)
    assert full_pushes and empty_pops, (full_pushes, empty_pops)
    dut._log.info(
        f"1500 cycles: {full_pushes} pushes while full and {empty_pops} pops while "
        f"empty ignored; order, count and empty as pushed"
    )


@pytest.mark.parametrize("width, depth", [(33, 4), (8, 16)])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_stream_fifo(sim, width, depth):
    run(
        "stream_fifo",
        "test_stream_fifo",
        sim,
        {"WIDTH": width, "DEPTH": depth, "AW": (depth - 1).bit_length()},
        seed=bench_seed("stream_fifo", depth),
    )
