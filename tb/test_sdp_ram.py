"""Bench for rtl/sdp_ram.v: random writes and reads; a read returns, one cycle later, the last
value written before it (read-before-write when both hit the same address in one cycle). Where
the address width reaches past DEPTH (the 64x32bit instance has AW = 7), one access in eight
goes out of range: such a write changes nothing and such a read returns 0 (the RAM's guards;
the accelerator never produces these addresses)."""
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
    span = 1 << int(os.environ["PARAM_AW"])         # addresses the ports can carry
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    contents, traffic = {}, []
    for _ in range(600):
        we = bool(rng.random() < 0.5)
        waddr, raddr = (int(rng.integers(depth, span)) if span > depth and rng.random() < 0.125
                        else int(rng.integers(0, depth)) for _ in range(2))
        wdata = int(rng.integers(0, 1 << width))
        traffic.append((we, waddr, raddr, wdata))
        dut.we.value = int(we)
        dut.waddr.value = waddr
        dut.wdata.value = wdata
        dut.raddr.value = raddr
        # read sees memory before this write; out of range: 0
        expected_now = contents.get(raddr) if raddr < depth else 0
        await FallingEdge(dut.clk)
        if expected_now is not None:
            assert int(dut.rdata.value) == expected_now, (raddr, expected_now)
        if we and waddr < depth:
            contents[waddr] = wdata
    # the fingerprint tests/test_seeds.py compares between a run and its replay
    dut._log.info(f"{len(traffic)} cycles of traffic, stimulus {stimulus_digest(traffic)}: match")


# address width per depth: 64 words get one bit more than they need, so that the bench can
# drive addresses past DEPTH (the guards in rtl/sdp_ram.v); 16 words get exactly 4
ADDRESS_BITS = {16: 4, 64: 7}


@pytest.mark.parametrize("width, depth", [pytest.param(8, 16, id="16x8bit"),
                                          pytest.param(32, 64, id="64x32bit")])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_sdp_ram(sim, width, depth):
    run("sdp_ram", "test_sdp_ram", sim, {"WIDTH": width, "DEPTH": depth,
                                         "AW": ADDRESS_BITS[depth]},
        seed=bench_seed(SEED + depth))
