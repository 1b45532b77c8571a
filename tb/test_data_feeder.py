"""Bench for rtl/data_feeder.v: for random tile windows (in_ch, G, tile columns), bank bytes,
fill flags and load_valid, every slot's serial stream must carry the byte of the bank that
fpga.isa.slot_banks names for it (the fill value where flagged, 0 for unused slots or past the
last pixel), LSB first over 8 cycles, starting fpga.cycle_model.FEEDER_REGISTERS cycles after
`load` (col_data_next, which the array registers as its first chain stage; the cycles between
the load and bit 0 must be zero).

The module's own serializer contract, beyond what the accelerator top exercises (the top loads
every 8 cycles during a MATMUL and holds `clear` otherwise): after the 8 bits of a byte, with no
new load, every slot outputs 0 (the trials leave 1 to 4 idle cycles between bytes and check
them), and `clear` in the middle of a byte zeroes the rest of it from the next cycle on (every
third trial; the bit out in `clear`'s own cycle still goes out), and while `clear` is high the
outputs stay zero from the cycle after it rose, whatever the banks and `load` do
(`zero_while_clear`)."""

import os

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

from fpga.cycle_model import FEEDER_REGISTERS
from fpga.isa import slot_banks
from tb.bitserial import bus_bits, start_clock
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run

TRIALS = 48


async def start_cleared(dut):
    """The instance's sizes and the seeded generator, after a clock edge with `clear` high (as
    the top starts: cleared serializers) and no setup or load; `clear` stays high."""
    cols, slots = int(os.environ["PARAM_COLS"]), int(os.environ["PARAM_SLOTS"])
    banks = int(os.environ["PARAM_BANKS"])
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    dut.setup.value = 0
    dut.load.value = 0
    dut.clear.value = 1
    await FallingEdge(dut.clk)
    return cols, slots, banks, rng


@cocotb.test()
async def windows(dut):
    cols, slots, banks, rng = await start_cleared(dut)
    dut.clear.value = 0
    idle_checked = 0
    for trial in range(TRIALS):
        group = int(rng.integers(1, 9))
        tile_cols = int(rng.integers(1, min(cols, banks // group) + 1))
        in_ch = int(rng.integers(0, banks - tile_cols * group + 1))
        bank_bytes = rng.integers(0, 256, size=banks)
        bank_bytes[rng.random(banks) < 0.3] = 0
        fill_flags = rng.random(banks) < 0.2
        fill_value = int(rng.integers(0, 256)) if trial % 2 else 0
        valid = trial % 5 != 4
        clear_at = int(rng.integers(0, 7)) if trial % 3 == 2 else 8  # bit index of `clear`
        dut.in_ch.value = in_ch
        dut.group.value = group
        dut.tile_cols.value = tile_cols
        dut.setup.value = 1
        # the setup cycle and 0..3 more idle cycles: the previous byte is out, no new load
        for _ in range(1 + int(rng.integers(0, 4))):
            await ReadOnly()
            assert bus_bits(dut.col_data_next.value, cols * slots) == [0] * (cols * slots), (
                trial,
                "idle cycle after a byte",
            )
            idle_checked += 1
            await FallingEdge(dut.clk)
            dut.setup.value = 0
        dut.bank_q.value = sum(int(v) << (8 * b) for b, v in enumerate(bank_bytes))
        dut.bank_fill.value = sum(int(f) << b for b, f in enumerate(fill_flags))
        dut.fill_value.value = fill_value
        dut.load.value = 1
        dut.load_valid.value = int(valid)
        bits = []
        for cycle in range(FEEDER_REGISTERS + 8):
            b = cycle - FEEDER_REGISTERS  # the bit on the output in this cycle (< 0: none yet)
            dut.clear.value = int(b == clear_at)
            await ReadOnly()
            out = bus_bits(dut.col_data_next.value, cols * slots)
            if b < 0:
                assert out == [0] * (cols * slots), (trial, "output before the byte's bit 0")
            else:
                bits.append(out)
            await FallingEdge(dut.clk)
            dut.load.value = 0
            dut.clear.value = 0
        src = slot_banks(in_ch, group, tile_cols, cols, slots)
        kept = (1 << (clear_at + 1)) - 1  # bits after `clear`'s cycle are 0
        for c in range(cols):
            for j in range(slots):
                s = c * slots + j
                got = sum(bits[b][s] << b for b in range(8))
                b = int(src[c, j])
                want = 0 if (b < 0 or not valid) else fill_value if fill_flags[b] else int(bank_bytes[b])
                assert got == want & kept, (trial, c, j, clear_at, got, want & kept)
    dut._log.info(f"{TRIALS} windows match; {idle_checked} idle cycles between bytes gave zeros")


@cocotb.test()
async def zero_while_clear(dut):
    """While `clear` is high the array's side stays zero, whatever the banks hold and however
    often `load` pulses."""
    cols, slots, banks, rng = await start_cleared(dut)
    # a window that uses every slot it can, so that only `clear` keeps the outputs at zero
    dut.in_ch.value = 0
    dut.group.value = 1
    dut.tile_cols.value = min(cols, banks)
    dut.fill_value.value = 0xFF
    dut.setup.value = 1
    await FallingEdge(dut.clk)
    dut.setup.value = 0
    dut.load_valid.value = 1
    for cycle in range(24):
        bank_bytes = [int(v) for v in rng.integers(1, 256, size=banks)]
        dut.bank_q.value = sum(v << (8 * b) for b, v in enumerate(bank_bytes))
        dut.bank_fill.value = 0
        dut.load.value = int(cycle % 8 == 3)
        await ReadOnly()
        assert bus_bits(dut.col_data_next.value, cols * slots) == [0] * (cols * slots), cycle
        await FallingEdge(dut.clk)
    dut._log.info("24 cycles under clear, loads every 8: every slot stayed 0")


@pytest.mark.parametrize("shape", [(3, 16), (8, 64)], ids=lambda s: f"{s[0]}cols_{s[1]}banks")
@pytest.mark.parametrize("sim", SIMULATORS)
def test_data_feeder(sim, shape):
    cols, banks = shape
    run(
        "data_feeder",
        "test_data_feeder",
        sim,
        {"COLS": cols, "SLOTS": 8, "BANKS": banks, "BKW": max(1, (banks - 1).bit_length())},
        seed=bench_seed("data_feeder", banks),
    )
