"""Bench for rtl/mac_cell.v, the 8-bit MAC baseline, with one multiplier per lane (the paper's)
and with one shared multiplier: every signed weight -128..127 against data including 0 and 255;
outputs equal models.numerics.sac.mac_cell_step, active cycles equal the golden count of nonzero
(weight, datum) pairs."""

import os

import cocotb
import numpy as np
import pytest

from models.numerics import sac
from tb.bitserial import start_clock
from tb.cell_driver import drive_cell, stimulus
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run


@cocotb.test()
async def all_weights(dut):
    slots = int(os.environ["PARAM_SLOTS"])
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    data, psum = stimulus(rng, 6, slots)
    for byte in range(256):
        weight = byte - 256 if byte >= 128 else byte
        got, active = await drive_cell(dut, byte, data, psum, slots)
        want = sac.mac_cell_step(weight, data[0], psum)  # no index: always slot 0
        assert got == want.tolist(), f"weight {weight}: got {got}, want {want.tolist()}"
        pairs = sac.count_active(np.array([[weight]]), data[:1])
        assert active == pairs, f"weight {weight}: {active} active cycles, want {pairs}"


@pytest.mark.parametrize("multipliers", [4, 1])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_mac_cell(sim, multipliers):
    run(
        "mac_cell",
        "test_mac_cell",
        sim,
        {"SLOTS": 8, "TAPS": 7, "LANES": 4, "MULTIPLIERS": multipliers},
        seed=bench_seed("mac_cell"),
    )
