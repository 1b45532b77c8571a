"""Bench for rtl/host_write_enable.v: random requests and `ok` flags, cycle by cycle; the write
enable is high exactly in the cycle after one in which both were high (the port's write lands
at the second rising edge after it is presented, and only when the accelerator took writes in
the cycle it was presented)."""

import cocotb
import pytest
from cocotb.triggers import FallingEdge

from tb.bitserial import start_clock
from tb.seeds import bench_seed, seeded_rng, stimulus_digest
from tb.sim import SIMULATORS, run


@cocotb.test()
async def random_requests(dut):
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    dut.req.value = 0
    dut.ok.value = 0
    await FallingEdge(dut.clk)
    traffic, taken = [], 0
    for cycle in range(400):
        req, ok = (bool(rng.random() < 0.5) for _ in range(2))
        traffic.append((req, ok))
        dut.req.value = int(req)
        dut.ok.value = int(ok)
        await FallingEdge(dut.clk)
        got = bool(int(dut.we.value))
        assert got == (req and ok), f"cycle {cycle}: req {req}, ok {ok} -> we {got} a cycle later"
        taken += got
    # the fingerprint tests/test_seeds.py compares between a run and its replay
    dut._log.info(f"{len(traffic)} cycles, {taken} writes taken, stimulus {stimulus_digest(traffic)}: match")


@pytest.mark.parametrize("sim", SIMULATORS)
def test_host_write_enable(sim):
    run("host_write_enable", "test_host_write_enable", sim, {}, seed=bench_seed("host_write_enable"))
