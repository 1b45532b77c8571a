"""Bit-serial stimulus and capture for the cell and array benches.

These turn words into the bit streams the RTL expects (LSB first, one word every 8 cycles,
32-bit partial-sum words on LANES interleaved lanes) and back. They move bits only; expected
values always come from the golden models.
"""

from __future__ import annotations

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge

DATA_BITS = 8
ACC_BITS = 32
LANES = ACC_BITS // DATA_BITS


def bit(value: int, index: int) -> int:
    """Bit `index` of the two's-complement value (sign-extended for index >= width)."""
    return (int(value) >> index) & 1


def to_signed32(bits_lsb_first) -> int:
    if any(b not in (0, 1) for b in bits_lsb_first):
        raise AssertionError(f"X/Z in a result word: {bits_lsb_first}")
    v = sum(b << i for i, b in enumerate(bits_lsb_first))
    return v - (1 << ACC_BITS) if v >> (ACC_BITS - 1) else v


def bus_bits(value, width: int) -> list:
    """A bus value (LogicArray) as a list of bits, element 0 = bit 0; X/Z become None.
    Results are only read inside their word windows, where they must be 0/1."""
    text = str(value)  # MSB first
    return [int(ch) if ch in "01" else None for ch in reversed(text[-width:])]


def pack_bits(bits) -> int:
    """List of 0/1 -> integer bus value (element 0 in bit 0)."""
    return sum(int(b) << i for i, b in enumerate(bits))


async def start_clock(dut, period_ns: int = 10):
    """Start the clock and return after the first falling edge (inputs are driven there)."""
    cocotb.start_soon(Clock(dut.clk, period_ns, unit="ns", impl="gpi").start())
    await FallingEdge(dut.clk)


class LaneStreams:
    """Serial words of one row on LANES lanes: word p is on lane p % LANES and occupies the
    32 cycles starting at `start + 8 * p` (bit t at cycle start + 8p + t)."""

    def __init__(self, words, start: int):
        self.words = [int(w) for w in words]
        self.start = start

    def bits_at(self, cycle: int) -> list[int]:
        out = [0] * LANES
        rel = cycle - self.start
        for lane in range(LANES):
            # the word on this lane whose 32-bit window covers `rel`
            p = lane + LANES * ((rel - DATA_BITS * lane) // ACC_BITS) if rel >= 0 else -1
            t = rel - DATA_BITS * p
            if 0 <= p < len(self.words) and 0 <= t < ACC_BITS:
                out[lane] = bit(self.words[p], t)
        return out


class LaneCapture:
    """Collects serial result words of one row: word p, bit t seen at cycle start + 8p + t."""

    def __init__(self, n_words: int, start: int):
        self.bits = [[0] * ACC_BITS for _ in range(n_words)]
        self.start = start

    def sample(self, cycle: int, lane_bits) -> None:
        rel = cycle - self.start
        for lane, b in enumerate(lane_bits):
            if rel < 0:
                continue
            p = lane + LANES * ((rel - DATA_BITS * lane) // ACC_BITS)
            t = rel - DATA_BITS * p
            if 0 <= p < len(self.bits) and 0 <= t < ACC_BITS:
                self.bits[p][t] = b

    def words(self) -> list[int]:
        return [to_signed32(b) for b in self.bits]

    @property
    def end(self) -> int:
        """First cycle after the last bit of the last word."""
        return self.start + DATA_BITS * (len(self.bits) - 1) + ACC_BITS


class DataStreams:
    """uint8 words of several channel slots, LSB first, word p in cycles start + 8p .. +7.
    A bench emulates register-chain taps by keeping a history: tap s shows what the input
    showed s cycles earlier."""

    def __init__(self, words_per_slot, start: int):
        self.words = [[int(v) for v in slot] for slot in words_per_slot]
        self.start = start

    def at(self, cycle: int) -> list[int]:
        rel = cycle - self.start
        p, b = divmod(rel, DATA_BITS) if rel >= 0 else (-1, 0)
        return [bit(slot[p], b) if 0 <= p < len(slot) else 0 for slot in self.words]
