"""Drives one array cell (sac_cell or mac_cell, same ports) as its column and row would:
the bench plays the column's register chain (tap s shows the slot stream s cycles late) and
the row's partial-sum lanes."""
from __future__ import annotations

import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly

from tb.bitserial import DataStreams, LaneCapture, LaneStreams, bus_bits, pack_bits


def stimulus(rng, n_pixels: int, slots: int):
    """Per-slot data words (about half zeros; 255, 0, 1, 128 in every slot) and psum words
    including the int32 extremes."""
    data = rng.integers(0, 256, size=(slots, n_pixels))
    data[rng.random(data.shape) < 0.5] = 0
    data[:, :4] = [255, 0, 1, 128]
    psum = rng.integers(-(2 ** 31), 2 ** 31, size=n_pixels)
    psum[:4] = [2 ** 31 - 1, -(2 ** 31), 0, -1]
    return data, psum


async def drive_cell(dut, byte: int, data, psum, taps: int, slots: int):
    """Load weight `byte`, stream the words; return (output words, active cycles)."""
    dut.w_clear.value = 0
    dut.w_load.value = 1
    dut.w_in.value = int(byte)
    await FallingEdge(dut.clk)
    dut.w_load.value = 0
    streams = DataStreams(data, 0)
    lanes_in = LaneStreams(psum, 0)
    capture = LaneCapture(len(psum), 1)      # psum_out is registered: one cycle later
    history = []
    active = 0
    for cycle in range(capture.end + 1):
        history.insert(0, streams.at(cycle))
        tap_bits = []
        for s in range(taps):
            tap_bits += history[s] if s < len(history) else [0] * slots
        dut.taps.value = pack_bits(tap_bits)
        dut.phase.value = cycle % 32
        dut.psum_in.value = pack_bits(lanes_in.bits_at(cycle))
        await ReadOnly()            # `active` is combinational in this cycle's taps
        capture.sample(cycle, bus_bits(dut.psum_out.value, 4))
        active += 1 if str(dut.active.value) == "1" else 0
        await FallingEdge(dut.clk)
    return capture.words(), active


def seeded_rng(seed: int, log) -> np.random.Generator:
    log.info(f"seed {seed} (set TB_SEED to replay another)")
    return np.random.default_rng(seed)
