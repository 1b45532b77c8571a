"""Drives one array cell (sac_cell or mac_cell, same ports) as its column, row and diagonal
would: the bench plays the column's register chain (`slots_next` shows the slot streams one
cycle before they reach the cell's base tap), the diagonal's phase signals (`phase_next`,
`word_end`) and the row's partial-sum lanes."""

from __future__ import annotations

from cocotb.triggers import FallingEdge, ReadOnly

from tb.bitserial import (
    ACC_BITS,
    DATA_BITS,
    LANES,
    DataStreams,
    LaneCapture,
    LaneStreams,
    bus_bits,
    pack_bits,
)

# Cycles of phase before the first word: the cell latches its data lane and clears its carries
# from the phase signals, as it would in the array before a MATMUL's first pixel arrives.
WARM_UP = DATA_BITS


def stimulus(rng, n_pixels: int, slots: int):
    """Per-slot data words (about half zeros; 255, 0, 1, 128 in every slot) and psum words
    including the int32 extremes."""
    data = rng.integers(0, 256, size=(slots, n_pixels))
    data[rng.random(data.shape) < 0.5] = 0
    data[:, :4] = [255, 0, 1, 128]
    psum = rng.integers(-(2**31), 2**31, size=n_pixels)
    psum[:4] = [2**31 - 1, -(2**31), 0, -1]
    return data, psum


async def drive_cell(dut, byte: int, data, psum, slots: int):
    """Load weight `byte`, stream the words; return (output words, active cycles)."""
    dut.w_clear.value = 0
    dut.w_load.value = 1
    dut.w_in.value = int(byte)
    await FallingEdge(dut.clk)
    dut.w_load.value = 0
    streams = DataStreams(data, WARM_UP)  # at the base tap: pixel p bit b at WARM_UP + 8p + b
    lanes_in = LaneStreams(psum, WARM_UP)
    capture = LaneCapture(len(psum), WARM_UP + 1)  # psum_out is registered: one cycle later
    active = 0
    for cycle in range(capture.end + 1):
        phase = (cycle - WARM_UP) % ACC_BITS
        dut.slots_next.value = pack_bits(streams.at(cycle + 1))
        dut.phase_next.value = (phase + 1) % ACC_BITS
        dut.word_end.value = pack_bits(
            [(phase - DATA_BITS * lane) % ACC_BITS == ACC_BITS - 1 for lane in range(LANES)]
        )
        dut.psum_in.value = pack_bits(lanes_in.bits_at(cycle))
        await ReadOnly()  # `active` is combinational in this cycle's state
        capture.sample(cycle, bus_bits(dut.psum_out.value, LANES))
        active += 1 if str(dut.active.value) == "1" else 0
        await FallingEdge(dut.clk)
    return capture.words(), active
