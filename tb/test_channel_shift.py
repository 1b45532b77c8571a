"""Bench for rtl/channel_shift.v (the data-buffer address generator): after `start` with a
frame and its base entry, and after each `step`, for every pixel of frames of several shapes
and a random direction per bank (including the unused codes 9..15), the bank's address and
fill flag must point at the pixel models.numerics.sac.channel_shift reads. The golden shift
runs on an image whose values are pixel numbers + 1, so its output names the source pixel
(0 = fill). Frames follow each other without a gap, and a `step` lasts a random number of
cycles apart (the accelerator steps every 8), so the counters are checked across restarts.
While `host` is high every bank's address is `host_addr` whatever its direction, and the
counters resume where they were when it falls."""

import os

import cocotb
import numpy as np
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

from models.numerics import sac
from tb.bitserial import bus_bits, start_clock
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run


async def check_pixel(dut, src, banks, aw, in_addr, where):
    """Every bank's address and fill flag at pixel (y, x) of `where`; returns at the next
    falling edge."""
    _, _, y, x = where
    await ReadOnly()
    fill = bus_bits(dut.fill.value, banks)
    addr = bus_bits(dut.addr.value, banks * aw)
    for b in range(banks):
        v = int(src[b, y, x])
        assert fill[b] == int(v == 0), (*where, b)
        if v:
            got = sum(bit << i for i, bit in enumerate(addr[b * aw : (b + 1) * aw]))
            want = (in_addr + v - 1) % (1 << aw)
            assert got == want, (*where, b, got, want)
    await FallingEdge(dut.clk)


async def start_frame(dut, codes, h, w, in_addr):
    """Start an h x w frame at entry in_addr with direction `codes` per bank; returns the golden
    shift of a pixel-number image (0 = fill) at the falling edge after `start`."""
    banks = len(codes)
    dirs = sac.table_directions(codes)
    index_image = (np.arange(h * w) + 1).reshape(1, h, w).repeat(banks, axis=0)
    src = sac.channel_shift(index_image.astype(np.uint8), dirs, fill=0)
    dut.dir.value = sum(int(c) << (4 * b) for b, c in enumerate(codes))
    dut.height.value = h
    dut.width.value = w
    dut.base.value = in_addr
    dut.start.value = 1
    await FallingEdge(dut.clk)
    dut.start.value = 0
    return src


@cocotb.test()
async def every_pixel(dut):
    banks, aw = int(os.environ["PARAM_BANKS"]), int(os.environ["PARAM_AW"])
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    dut.start.value = 0
    dut.step.value = 0
    dut.host.value = 0
    dut.host_addr.value = 0
    for h, w in [(1, 1), (1, 5), (4, 1), (3, 3), (5, 7), (8, 8), (2, 120)]:
        # any base: the addresses wrap modulo 2^AW as the top's do (entries past the frame's
        # edges are filled, never read)
        in_addr = int(rng.integers(0, 1 << aw))
        codes = rng.integers(0, 16, size=banks)
        src = await start_frame(dut, codes, h, w, in_addr)
        # inputs other than start and step are don't-cares after start
        dut.height.value = int(rng.integers(0, 1 << 12))
        dut.width.value = int(rng.integers(0, 1 << 12))
        dut.base.value = int(rng.integers(0, 1 << aw))
        for y in range(h):
            for x in range(w):
                await check_pixel(dut, src, banks, aw, in_addr, (h, w, y, x))
                for _ in range(int(rng.integers(0, 3))):  # cycles without a step hold the pixel
                    await check_pixel(dut, src, banks, aw, in_addr, (h, w, y, x))
                dut.step.value = 1
                await FallingEdge(dut.clk)
                dut.step.value = 0
        dut._log.info(f"{h}x{w}: {banks} banks match")


@cocotb.test()
async def host_reads_take_every_bank(dut):
    """`host` high: every bank's address is host_addr, whichever direction (0..15) it has, in
    the middle of a frame; when `host` falls the frame's pixel is there again."""
    banks, aw = int(os.environ["PARAM_BANKS"]), int(os.environ["PARAM_AW"])
    rng = seeded_rng(dut._log, stream=1)
    await start_clock(dut)
    h, w = 3, 4
    in_addr = int(rng.integers(0, 1 << aw))
    codes = rng.integers(0, 16, size=banks)
    codes[: min(banks, 16)] = np.arange(min(banks, 16))  # every code on some bank
    dut.host.value = 0
    dut.step.value = 0
    src = await start_frame(dut, codes, h, w, in_addr)
    for _ in range(5):  # to pixel (1, 1)
        dut.step.value = 1
        await FallingEdge(dut.clk)
    dut.step.value = 0
    for _ in range(6):
        host_addr = int(rng.integers(0, 1 << aw))
        dut.host.value = 1
        dut.host_addr.value = host_addr
        await ReadOnly()
        addr = bus_bits(dut.addr.value, banks * aw)
        for b in range(banks):
            got = sum(bit << i for i, bit in enumerate(addr[b * aw : (b + 1) * aw]))
            assert got == host_addr, (b, int(codes[b]), got, host_addr)
        await FallingEdge(dut.clk)
    dut.host.value = 0
    await check_pixel(dut, src, banks, aw, in_addr, (h, w, 1, 1))
    dut._log.info(f"host reads: {banks} banks at the host's address, then the frame's again")


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
