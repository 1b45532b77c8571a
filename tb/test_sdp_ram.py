"""Bench for rtl/sdp_ram.v: random writes and reads; a read returns, one cycle later, the last
value written before it (read-before-write when both hit the same address in one cycle)."""
import os

import cocotb
import pytest
from cocotb.triggers import FallingEdge

from tb.bitserial import start_clock
from tb.cell_driver import seeded_rng
from tb.sim import SIMULATORS, run

SEED = int(os.environ.get("TB_SEED", "1732"))


@cocotb.test()
async def random_traffic(dut):
    width, depth = int(os.environ["PARAM_WIDTH"]), int(os.environ["PARAM_DEPTH"])
    rng = seeded_rng(SEED + depth, dut._log)
    await start_clock(dut)
    contents = {}
    for _ in range(600):
        we = bool(rng.random() < 0.5)
        waddr, raddr = int(rng.integers(0, depth)), int(rng.integers(0, depth))
        wdata = int(rng.integers(0, 1 << width))
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


@pytest.mark.parametrize("width, depth", [(8, 16), (32, 64)])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_sdp_ram(sim, width, depth):
    run("sdp_ram", "test_sdp_ram", sim, {"WIDTH": width, "DEPTH": depth,
                                         "AW": max(1, (depth - 1).bit_length())})
