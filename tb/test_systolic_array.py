"""Bench for rtl/systolic_array.v, driven directly at its ports.

For every group size G = 1..8: random packed weights (valid for G, about 1 in 6 zero, every
code and sign), random data with about half zeros in every channel slot (slots the cells must
not select carry data too) and a first pixel of all 255s. Then, for G < 8, cells whose index
may equal G (one per row at least), the first slot past the group, which the hardware reads
as a zero weight: the data feeder gives slots j >= G zeros (docs/isa.md), and so does the
bench, so sac.array_weights must count those cells as nothing (a `<=` for `<` there passed
the benches before). Rows start from zero (the initial
values are added by relu_quant, see tb/test_relu_quant.py), so every row result must equal
models.numerics.sac.dense_matmul of the array's weights (sac.array_weights) with a zero init,
and the active cell-cycles (summed over the run: the count arrives a few cycles late) must
equal the golden count of nonzero (weight, datum) pairs.
"""

import os

import cocotb
import numpy as np
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

from models.numerics import sac
from tb.bitserial import DataStreams, LaneCapture, bus_bits, pack_bits, start_clock
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run

SLOTS = 8


def random_cells(rng, rows, cols, group, top=None):
    """Packed bytes whose index is < group (0..top with `top`, and one nonzero cell of every
    row at index top); about 1 in 6 cells zero."""
    index = rng.integers(0, group if top is None else top + 1, size=(rows, cols))
    code = rng.integers(1, 8, size=(rows, cols))
    code[rng.random(code.shape) < 1 / 6] = 0
    if top is not None:
        at = (np.arange(rows), rng.integers(0, cols, size=rows))
        index[at], code[at] = top, rng.integers(1, 8, size=rows)
    sign = rng.integers(0, 2, size=(rows, cols))
    return sac.encode_byte(np.where(code == 0, 0, index), np.where(code == 0, 0, sign), code)


async def load_weights(dut, cells):
    rows, cols = cells.shape
    dut.w_clear.value = 1
    await FallingEdge(dut.clk)
    dut.w_clear.value = 0
    dut.w_load.value = 1
    for r in range(rows):
        dut.w_row.value = r
        dut.w_row_data.value = sum(int(cells[r, c]) << (8 * c) for c in range(cols))
        await FallingEdge(dut.clk)
    dut.w_load.value = 0


async def multiply(dut, rows, cols, slot_data):
    """Stream slot_data [cols*8, P] (one cycle ahead, as col_data_next); return the results
    [rows, P] and the active cell-cycles."""
    n_pix = slot_data.shape[1]
    k0 = 1
    streams = DataStreams(slot_data, k0)
    captures = [LaneCapture(n_pix, k0 + r + cols) for r in range(rows)]
    end = max(c.end for c in captures)
    dut.chain_clear.value = 1
    await FallingEdge(dut.clk)
    dut.chain_clear.value = 0
    active = 0
    for k in range(end + 1):
        dut.col_data_next.value = pack_bits(streams.at(k + 1))
        dut.phase0.value = (k - k0) % 32
        await ReadOnly()
        out = bus_bits(dut.row_out.value, rows * 4)
        for r in range(rows):
            captures[r].sample(k, out[r * 4 : (r + 1) * 4])
        active += int(dut.active_count.value)
        await FallingEdge(dut.clk)
    dut.chain_clear.value = 1
    return np.array([c.words() for c in captures]), active


@cocotb.test()
async def every_group_size(dut):
    rows, cols = int(os.environ["PARAM_ROWS"]), int(os.environ["PARAM_COLS"])
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    dut.w_clear.value = 0
    dut.w_load.value = 0
    dut.w_row.value = 0
    dut.chain_clear.value = 1  # chains at zero outside a multiplication, as in the top
    dut.col_data_next.value = 0
    dut.phase0.value = 0
    n_pix = 10
    # (G, whether cells may have index G): a 3-bit index cannot reach 8
    for group, at_group in [(g, False) for g in range(1, 9)] + [(g, True) for g in range(1, 8)]:
        cells = random_cells(rng, rows, cols, group, top=group if at_group else None)
        slot_data = rng.integers(0, 256, size=(cols * SLOTS, n_pix))
        slot_data[rng.random(slot_data.shape) < 0.5] = 0
        slot_data[:, 0] = 255
        if at_group:
            # what the data feeder puts in the slots past the group
            slot_data.reshape(cols, SLOTS, n_pix)[:, group:] = 0
        await load_weights(dut, cells)
        got, active = await multiply(dut, rows, cols, slot_data)
        label = f"G={group}{' (indices up to G)' if at_group else ''}"
        # channel c*G + j of the combined layer is slot j of column c
        data = slot_data.reshape(cols, SLOTS, n_pix)[:, :group].reshape(cols * group, n_pix)
        dense = sac.array_weights(cells, group)
        want = sac.dense_matmul(dense, data, np.zeros(rows, dtype=np.int64))
        bad = np.argwhere(got != want)
        assert not bad.size, (
            f"{label}: row/pixel {tuple(bad[0])} got {got[tuple(bad[0])]}, want {want[tuple(bad[0])]}"
        )
        pairs = sac.count_active(dense, data)
        assert active == pairs, f"{label}: {active} active cell-cycles, want {pairs}"
        dut._log.info(f"{label}: {rows}x{cols} array, {n_pix} pixels, {pairs} active pairs: match")


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (8, 8)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("sim", SIMULATORS)
def test_systolic_array(sim, shape):
    rows, cols = shape
    run(
        "systolic_array",
        "test_systolic_array",
        sim,
        {"ROWS": rows, "COLS": cols, "SLOTS": SLOTS, "TAPS": 7, "LANES": 4},
        seed=bench_seed("systolic_array", rows, cols),
    )
