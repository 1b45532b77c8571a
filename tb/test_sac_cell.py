"""Bench for rtl/sac_cell.v: all 256 packed weight bytes against data including 0 and 255.

Every output word must equal models.numerics.sac.cell_step (the golden cell) and the active
cycles must equal the golden count of nonzero (weight, datum) pairs.
"""

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
async def all_codes(dut):
    """Every packed byte 0..255 against the same data patterns."""
    slots = int(os.environ["PARAM_SLOTS"])
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    data, psum = stimulus(rng, 6, slots)
    for byte in range(256):
        got, active = await drive_cell(dut, byte, data, psum, slots)
        want = sac.cell_step(byte, data[byte >> 5], psum)
        assert got == want.tolist(), f"byte 0x{byte:02x}: got {got}, want {want.tolist()}"
        pairs = sac.count_active(sac.array_weights(np.array([[byte]]), slots), data)
        assert active == pairs, f"byte 0x{byte:02x}: {active} active cycles, want {pairs}"


@pytest.mark.parametrize("sim", SIMULATORS)
def test_sac_cell(sim):
    run("sac_cell", "test_sac_cell", sim, {"SLOTS": 8, "TAPS": 7, "LANES": 4}, seed=bench_seed("sac_cell"))
