"""Bench for rtl/sdp_ram.v: random writes and reads; a read returns, one cycle later, the last
value written before it (read-before-write when both hit the same address in one cycle). Where
the address width reaches past DEPTH (the 64x32bit instance has AW = 7), one access in eight
goes out of range: such a write changes nothing and such a read returns 0 (the RAM's guards;
the accelerator never produces these addresses). With READ_OLD_ON_COLLISION = 0 a read of the
address being written is undefined: every other read is checked as before, and on Icarus the
colliding one must be x (so that a design which uses it sees x, not a plausible word)."""

import os

import cocotb
import pytest
from cocotb.triggers import FallingEdge

from tb.bitserial import start_clock
from tb.seeds import bench_seed, seeded_rng, stimulus_digest
from tb.sim import SIMULATORS, run


@cocotb.test()
async def random_traffic(dut):
    width, depth = int(os.environ["PARAM_WIDTH"]), int(os.environ["PARAM_DEPTH"])
    read_old = os.environ["PARAM_READ_OLD_ON_COLLISION"] == "1"
    four_state = cocotb.SIM_NAME.lower().startswith("icarus")  # Verilator has no x
    span = 1 << int(os.environ["PARAM_AW"])  # addresses the ports can carry
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    contents, traffic = {}, []
    for _ in range(600):
        we = bool(rng.random() < 0.5)
        waddr, raddr = (
            int(rng.integers(depth, span))
            if span > depth and rng.random() < 0.125
            else int(rng.integers(0, depth))
            for _ in range(2)
        )
        wdata = int(rng.integers(0, 1 << width))
        traffic.append((we, waddr, raddr, wdata))
        dut.we.value = int(we)
        dut.waddr.value = waddr
        dut.wdata.value = wdata
        dut.raddr.value = raddr
        # read sees memory before this write; out of range: 0
        expected_now = contents.get(raddr) if raddr < depth else 0
        collision = we and waddr == raddr and not read_old
        await FallingEdge(dut.clk)
        if collision:
            if four_state:
                assert not dut.rdata.value.is_resolvable, (raddr, str(dut.rdata.value))
        elif expected_now is not None:
            assert int(dut.rdata.value) == expected_now, (raddr, expected_now)
        if we and waddr < depth:
            contents[waddr] = wdata
    # the fingerprint tests/test_seeds.py compares between a run and its replay
    dut._log.info(f"{len(traffic)} cycles of traffic, stimulus {stimulus_digest(traffic)}: match")


# address width per depth: 64 words get one bit more than they need, so that the bench can
# drive addresses past DEPTH (the guards in rtl/sdp_ram.v); 16 words get exactly 4
ADDRESS_BITS = {16: 4, 64: 7}


# READ_OLD_ON_COLLISION = 0 on the 16-word RAM, where random addresses collide most often
@pytest.mark.parametrize(
    "width, depth, read_old",
    [
        pytest.param(8, 16, 1, id="16x8bit"),
        pytest.param(32, 64, 1, id="64x32bit"),
        pytest.param(8, 16, 0, id="16x8bit_collision_x"),
    ],
)
@pytest.mark.parametrize("sim", SIMULATORS)
def test_sdp_ram(sim, width, depth, read_old):
    run(
        "sdp_ram",
        "test_sdp_ram",
        sim,
        {"WIDTH": width, "DEPTH": depth, "AW": ADDRESS_BITS[depth], "READ_OLD_ON_COLLISION": read_old},
        seed=bench_seed("sdp_ram", depth),
    )
