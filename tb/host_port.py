"""Driver for the accelerator's host port (memory map in docs/microarchitecture.md).

Loads compiled programs and tensors, starts a run, waits for `done`, and reads back tensors,
status, counters and the per-instruction trace. Values go through unchanged: tensors are read
back with fpga.memory.gather, the same function the interpreter uses.
"""
from __future__ import annotations

import numpy as np
from cocotb.triggers import FallingEdge, RisingEdge, with_timeout

from fpga.arch import ArrayConfig
from fpga.compiler import Program
from fpga.isa import words_to_u32
from fpga.memory import Placement, gather

R_CTRL, R_IMEM, R_WMEM, R_BMEM, R_SMEM, R_DBUF, R_PBUF, R_TRACE = range(8)
CTRL_STATUS, CTRL_CYCLES, CTRL_PC, CTRL_ACTIVITY, CTRL_RETIRED, CTRL_CONFIG = range(6)
CTRL_START_PC = 8


def address(region: int, offset: int) -> int:
    return (region << 28) | offset


def to_i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


READ_LATENCY = 2      # the port's inputs are registered, then the memories' read is registered


class HostPort:
    """All accesses happen at falling edges; a read's data is there READ_LATENCY cycles later."""

    def __init__(self, dut, cfg: ArrayConfig):
        self.dut = dut
        self.cfg = cfg
        dut.host_en.value = 0
        dut.host_we.value = 0
        dut.host_addr.value = 0
        dut.host_wdata.value = 0
        dut.start.value = 0

    async def reset(self):
        self.dut.rst.value = 1
        await FallingEdge(self.dut.clk)
        await FallingEdge(self.dut.clk)
        self.dut.rst.value = 0
        await FallingEdge(self.dut.clk)

    async def write_many(self, items) -> None:
        """items: iterable of (region, offset, value)."""
        d = self.dut
        d.host_en.value = 1
        d.host_we.value = 1
        for region, offset, value in items:
            d.host_addr.value = address(region, offset)
            d.host_wdata.value = int(value) & 0xFFFFFFFF
            await FallingEdge(d.clk)
        d.host_en.value = 0
        d.host_we.value = 0
        await FallingEdge(d.clk)            # the last write lands at the next edge

    async def read_many(self, items) -> list[int]:
        """items: list of (region, offset); pipelined, one read per cycle."""
        d = self.dut
        items = list(items)
        out = []
        d.host_we.value = 0
        d.host_en.value = 1
        for i in range(len(items) + READ_LATENCY - 1):
            if i < len(items):
                d.host_addr.value = address(*items[i])
            else:
                d.host_en.value = 0
            await FallingEdge(d.clk)
            if i >= READ_LATENCY - 1:
                out.append(int(d.host_rdata.value))
        d.host_en.value = 0
        return out

    async def read(self, region: int, offset: int) -> int:
        return (await self.read_many([(region, offset)]))[0]

    # -- programs and tensors -----------------------------------------------------------------
    @staticmethod
    def program_writes(words) -> list:
        """Host writes that put 128-bit instruction words into the instruction memory."""
        return [(R_IMEM, i * 4 + j, int(v)) for i, row in enumerate(words_to_u32(words))
                for j, v in enumerate(row)]

    async def load_program(self, prog: Program) -> None:
        cfg = self.cfg
        items = self.program_writes(prog.words)
        for i, word in enumerate(prog.wmem):
            padded = np.zeros(-(-cfg.cols // 4) * 4, dtype=np.uint8)
            padded[:cfg.cols] = word
            for j, chunk in enumerate(padded.view("<u4")):
                items.append((R_WMEM, i * 256 + j, int(chunk)))
        items += [(R_BMEM, i, int(b) & 0xFFFFFFFF) for i, b in enumerate(prog.bmem)]
        for i, word in enumerate(prog.smem):
            for j in range(cfg.cols):
                entries = word[j * 8:(j + 1) * 8].astype(np.uint32)
                packed = sum(int(e) << (4 * n) for n, e in enumerate(entries))
                items.append((R_SMEM, i * 256 + j, int(packed)))
        await self.write_many(items)

    async def write_tensor(self, pl: Placement, x) -> None:
        """Write one image's tensor [C, H, W] into its data-buffer region."""
        x = np.asarray(x, dtype=np.uint8).reshape(pl.channels, pl.pixels)
        bank, entry = pl.banks_entries()
        await self.write_many((R_DBUF, (int(bank[c]) << 16) | int(entry[c, p]), int(x[c, p]))
                              for c in range(pl.channels) for p in range(pl.pixels))

    async def read_tensor(self, pl: Placement) -> np.ndarray:
        """Read one tensor back; returns what fpga.memory.gather returns."""
        cfg = self.cfg
        dbuf = np.zeros((cfg.cmax, cfg.ddepth), dtype=np.uint8)
        pbuf = np.zeros((cfg.rows, cfg.pdepth), dtype=np.int64)
        if pl.space == "dbuf":
            bank, entry = pl.banks_entries()
            keys = [(int(bank[c]), int(e)) for c in range(pl.channels) for e in entry[c]]
            vals = await self.read_many([(R_DBUF, (b << 16) | e) for b, e in keys])
            for (b, e), v in zip(keys, vals):
                dbuf[b, e] = v & 0xFF
        else:
            per_tile = 1 if pl.pixel_sum else pl.pixels
            keys = [(f % cfg.rows, pl.addr + (f // cfg.rows) * per_tile + p)
                    for f in range(pl.channels) for p in range(per_tile)]
            vals = await self.read_many([(R_PBUF, (r << 16) | e) for r, e in keys])
            for (r, e), v in zip(keys, vals):
                pbuf[r, e] = to_i32(v)
        return gather(pl, dbuf, pbuf.astype(np.int32), cfg.rows)

    # -- running ------------------------------------------------------------------------------
    async def run(self, start_pc: int = 0, timeout_cycles: int = 20_000_000) -> dict:
        """Set the start pc, pulse start, wait for done, return the status registers."""
        d = self.dut
        await self.write_many([(R_CTRL, CTRL_START_PC, start_pc)])
        d.start.value = 1
        await FallingEdge(d.clk)            # the rising edge in between took start: done = 0
        d.start.value = 0
        await with_timeout(RisingEdge(d.done), timeout_cycles * 10, "ns")
        await FallingEdge(d.clk)
        return await self.status()

    async def status(self) -> dict:
        st, cyc, pc, act, ret, conf = await self.read_many(
            [(R_CTRL, i) for i in (CTRL_STATUS, CTRL_CYCLES, CTRL_PC, CTRL_ACTIVITY, CTRL_RETIRED,
                                    CTRL_CONFIG)])
        return {"busy": st & 1, "done": (st >> 1) & 1, "error": (st >> 2) & 1,
                "error_code": (st >> 4) & 0xF, "cycles": cyc, "pc": pc, "activity": act,
                "retired": ret, "config": (conf & 0xFF, (conf >> 8) & 0xFF, (conf >> 16) & 0xFF)}

    async def trace(self, n: int, first: int = 0) -> tuple[list[int], list[int]]:
        """(end cycle, active cell-cycles) of instructions first .. first+n-1 of the last run
        (end cycles count from that run's start)."""
        vals = await self.read_many([(R_TRACE, i * 2 + w) for i in range(first, first + n)
                                     for w in (0, 1)])
        return vals[0::2], vals[1::2]


class RtlDevice:
    """The RTL accelerator as a fpga.execute device (one image per call): runs a segment
    and reports per-instruction cycles and activity read from the trace memory."""

    def __init__(self, host: HostPort, prog: Program):
        self.host = host
        self.prog = prog
        self.ends = {}               # segment start pc -> retire cycles measured by the RTL

    async def write_tensor(self, pl: Placement, data) -> None:
        data = np.asarray(data)
        assert data.shape[0] == 1, "the RTL runs one image at a time"
        await self.host.write_tensor(pl, data[0])

    async def read_tensor(self, pl: Placement) -> np.ndarray:
        return (await self.host.read_tensor(pl))[None]

    async def run(self, start_pc: int):
        from fpga.interpreter import RunStats
        from fpga.isa import ErrorCode, IsaError

        st = await self.host.run(start_pc)
        if st["error"]:
            return RunStats(error=IsaError(ErrorCode(st["error_code"]), st["pc"], None,
                                           "reported by the RTL"))
        seg = next(s for s in self.prog.segments if s.start_pc == start_pc)
        ends, acts = await self.host.trace(seg.n_instr, start_pc)
        self.ends[start_pc] = ends
        cycles = [e - (ends[i - 1] if i else 0) for i, e in enumerate(ends)]
        assert sum(cycles) == st["cycles"], (cycles, st)
        return RunStats(cycles=cycles, activity=acts)
