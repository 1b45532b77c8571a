"""Bench for rtl/sdp_ram.v: random writes and reads; a read returns, one cycle later, the last
value written before it (read-before-write when both hit the same address in one cycle)."""
import os

import cocotb
import pytest
from cocotb.triggers import FallingEdge

from tb.bitserial import start_clock
from tb.seeds import bench_seed, seeded_rng, stimulus_digest
from tb.sim import SIMULATORS, run

SEED = 1732    # the default seed (plus an offset per parameter set, if any); tb/seeds.py


@cocotb.test()
async def random_traffic(dut):
    width, depth = int(os.environ["PARAM_WIDTH"]), int(os.environ["PARAM_DEPTH"])
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    contents, traffic = {}, []
    for _ in range(600):
        we = bool(rng.random() < 0.5)
        waddr, raddr = int(rng.integers(0, depth)), int(rng.integers(0, depth))
        wdata = int(rng.integers(0, 1 << width))
        traffic.append((we, waddr, raddr, wdata))
        dut.we.value = int(we)
        dut.waddr.value = waddr
        dut.wdata.value = wdata
        dut.raddr.value = raddr
        expected_now = contents.get(raddr)          # read sees memory before this write
        await FallingEdge(dut.clk)
        if expected_now is not None:
            assert int(dut.rdata.value) == expected_now, (raddr, expected_now)
        if we:
            contents[waddr] = wdata
    # the fingerprint tests/test_seeds.py compares between a run and its replay
    dut._log.info(f"{len(traffic)} cycles of traffic, stimulus {stimulus_digest(traffic)}: match")


@pytest.mark.parametrize("width, depth", [pytest.param(8, 16, id="16x8bit"),
                                          pytest.param(32, 64, id="64x32bit")])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_sdp_ram(sim, width, depth):
    run("sdp_ram", "test_sdp_ram", sim, {"WIDTH": width, "DEPTH": depth,
                                         "AW": max(1, (depth - 1).bit_length())},
        seed=bench_seed(SEED + depth))
