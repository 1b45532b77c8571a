"""Bench for rtl/channel_shift.v (the data-buffer address generator): for every pixel of
frames of several shapes and a random direction per bank (including the unused codes 9..15),
the bank's address and fill flag must point at the pixel models.numerics.sac.channel_shift
reads. The golden shift runs on an image whose values are pixel numbers + 1, so its output
names the source pixel (0 = fill)."""

import os

import cocotb
import numpy as np
import pytest
from cocotb.triggers import Timer

from models.numerics import sac
from tb.bitserial import bus_bits
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run


@cocotb.test()
async def every_pixel(dut):
    banks, aw = int(os.environ["PARAM_BANKS"]), int(os.environ["PARAM_AW"])
    rng = seeded_rng(dut._log)
    for h, w in [(1, 1), (1, 5), (4, 1), (3, 3), (5, 7), (8, 8)]:
        p_count = h * w
        in_addr = int(rng.integers(0, (1 << aw) - p_count + 1))
        codes = rng.integers(0, 16, size=banks)
        dirs = sac.table_directions(codes)
        index_image = (np.arange(p_count) + 1).reshape(1, h, w).repeat(banks, axis=0)
        src = sac.channel_shift(index_image.astype(np.uint8), dirs, fill=0)
        dut.height.value = h
        dut.width.value = w
        dut.dir.value = sum(int(c) << (4 * b) for b, c in enumerate(codes))
        for y in range(h):
            for x in range(w):
                p = y * w + x
                dut.y.value = y
                dut.x.value = x
                dut.base.value = in_addr + p
                await Timer(1, "ns")
                fill = bus_bits(dut.fill.value, banks)
                addr = bus_bits(dut.addr.value, banks * aw)
                for b in range(banks):
                    v = int(src[b, y, x])
                    assert fill[b] == int(v == 0), (h, w, y, x, b)
                    if v:
                        got = sum(bit << i for i, bit in enumerate(addr[b * aw : (b + 1) * aw]))
                        assert got == in_addr + v - 1, (h, w, y, x, b, got, in_addr + v - 1)
        dut._log.info(f"{h}x{w}: {banks} banks match")


@pytest.mark.parametrize("banks", [9, 16], ids=lambda b: f"{b}banks")
@pytest.mark.parametrize("sim", SIMULATORS)
def test_channel_shift(sim, banks):
    run(
        "channel_shift",
        "test_channel_shift",
        sim,
        {"BANKS": banks, "AW": 8, "DW": 12},
        seed=bench_seed("channel_shift", banks),
    )
