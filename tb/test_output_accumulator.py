"""Bench for rtl/output_accumulator.v: sums over pixels with gaps between results and the
32-bit extremes; expected values from models.numerics.sac.pixel_sum. `sum_valid` must be the
one-cycle pulse the module promises, in the cycle after the last value and in no other."""

import cocotb
import numpy as np
import pytest
from cocotb.triggers import FallingEdge

from models.checks import INT32_MAX, INT32_MIN
from models.numerics import sac
from tb.bitserial import start_clock
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run


@cocotb.test()
async def sums(dut):
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    dut.in_valid.value = 0
    cases = [
        [INT32_MAX, 1],
        [INT32_MIN, -1],
        [INT32_MAX, INT32_MAX, INT32_MAX],
        [5],
        list(rng.integers(INT32_MIN, INT32_MAX + 1, size=50)),
        list(rng.integers(-1000, 1000, size=7)),
    ]
    for values in cases:
        got, pulses = None, 0
        after_last = []  # sum_valid in every cycle after the last value, in order
        for i, v in enumerate(values):
            dut.in_valid.value = 1
            dut.first.value = int(i == 0)
            dut.last.value = int(i == len(values) - 1)
            dut.value.value = int(v) & 0xFFFFFFFF
            await FallingEdge(dut.clk)
            # in_valid drops, `first` and `last` keep their values: the block must ignore them
            dut.in_valid.value = 0
            for _ in range(int(rng.integers(0, 8))):  # results arrive every few cycles
                assert str(dut.sum_valid.value) != "1" or i == len(values) - 1
                if i == len(values) - 1:
                    after_last.append(str(dut.sum_valid.value) == "1")
                if str(dut.sum_valid.value) == "1":
                    got, pulses = dut.sum.value.to_signed(), pulses + 1
                await FallingEdge(dut.clk)
        for _ in range(2):
            after_last.append(str(dut.sum_valid.value) == "1")
            if str(dut.sum_valid.value) == "1":
                got, pulses = dut.sum.value.to_signed(), pulses + 1
            await FallingEdge(dut.clk)
        # the module's contract: a one-cycle pulse in the cycle right after the last value
        # (a sum_valid that stays high, e.g. until the next input, would count a sum twice)
        assert after_last == [True] + [False] * (len(after_last) - 1), (
            f"{values[:4]}...: sum_valid in the cycles after the last value: {after_last}"
        )
        want = int(sac.pixel_sum(np.array(values, dtype=np.int64)))
        assert got == want, f"{values[:4]}...: got {got}, want {want}"
        # one cycle of sum_valid per sum, though `last` stays high while in_valid is low
        # (`make mutants`: sum_valid <= last survived without this)
        assert pulses == 1, f"{values[:4]}...: sum_valid high for {pulses} cycles, want 1"


@pytest.mark.parametrize("sim", SIMULATORS)
def test_output_accumulator(sim):
    run(
        "output_accumulator",
        "test_output_accumulator",
        sim,
        {"ACC_BITS": 32},
        seed=bench_seed("output_accumulator"),
    )
